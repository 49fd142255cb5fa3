"""The checkpoint log next to the plain serializer, per target of the issue.

    python -m pytest benchmarks/test_bench_log.py
    python -m pytest benchmarks/test_bench_log.py -k restore

Each target is one pytest-benchmark group, so the log's timing prints next to its
baseline (compare_log.py prints the same as a table, with the targets checked):

* log append   ``log.step(level, checkpoint=True)`` (no flush) vs ``autosave.dumps(level)``:
               target at most 1.15x. The flush is untimed, between rounds.
* log durable checkpoint   what docs/log.md and docs/durability.md promise a flush
               costs: a checkpoint is durable once ``step()`` and then ``flush()``
               return, so the two are timed as one call, next to ``autosave.save`` (an
               atomic save file). With them, a flush after the writer thread finished
               (a game stepping every tick and committing now and then: the flush
               writes and syncs, it waits for nothing). A flush timed alone right after
               its step measures only where the encoding's time falls, so it is not.
* log restore  ``log.restore(position)`` of a checkpointed step vs ``autosave.loads`` of
               the same state's bytes: target at most 1.15x. The log is reopened
               (untimed) before each round, so its block cache is cold.
* log open     opening (and closing) a log of 10,000 checkpoints: target under 100 ms.
               Built once as compare_log.py builds it; checked to read no payload.
* log flush in a long history   one step and one bookmark flushed after 0 and after
               10,000 such flushes: the same time (metadata per flush amortised O(1)).

The state is the demo level of graphs.py (~15k objects). Round trips are checked before
anything is timed. The garbage collector is off while timing (conftest.py).
"""

import pytest

import autosave
from compare_log import OPEN_CHECKPOINTS, build_open_log, check_open_log, open_close, small_state
from graphs import count_objects, level_graph, same_graph

ROUNDS = 10          # per timing of the level: ~50 ms each


class Level:
    def __init__(self):
        self.root = level_graph()
        self.objects = count_objects(self.root)
        self.data = autosave.dumps(self.root)
        same_graph(self.root, autosave.loads(self.data))
        self.name = f"level-15k ({self.objects:,} objects)"


@pytest.fixture(scope="module")
def level():
    return Level()


@pytest.fixture
def log(tmp_path, level):
    """A log whose current record has one checkpoint of the level, flushed; checked to
    restore it."""
    log = autosave.CheckpointLog.open(tmp_path / "play.log")
    try:
        log.enter("level")
        log.step(level.root)
        log.flush()
        same_graph(level.root, log.restore(log.position))
        yield log
    finally:
        log.close()


def pedantic(benchmark, fn, *args, setup=None):
    return benchmark.pedantic(fn, args=args, setup=setup, rounds=ROUNDS, warmup_rounds=1)


# -- 1. append ------------------------------------------------------------------------------


def test_append_dumps(benchmark, level):
    benchmark.group = f"log append: {level.name}"
    benchmark.extra_info.update(bytes=len(level.data))
    pedantic(benchmark, autosave.dumps, level.root)


def test_append_checkpoint(benchmark, level, log):
    benchmark.group = f"log append: {level.name}"
    start = log.file.end
    # The flush between rounds (untimed) keeps the pending buffer to one checkpoint.
    pedantic(benchmark, lambda: log.step(level.root, checkpoint=True), setup=log.flush)
    log.flush()
    benchmark.extra_info.update(bytes_per_checkpoint=(log.file.end - start) / (ROUNDS + 1))


# -- 1b. durable checkpoint ------------------------------------------------------------------


def test_durable_checkpoint(benchmark, level, log):
    benchmark.group = f"log durable checkpoint: {level.name}"

    def durable_checkpoint():
        log.step(level.root, checkpoint=True)
        log.flush()

    pedantic(benchmark, durable_checkpoint)


def test_durable_atomic_save_file(benchmark, level, tmp_path):
    benchmark.group = f"log durable checkpoint: {level.name}"
    pedantic(benchmark, autosave.save, tmp_path / "slot.sav", level.root)


def test_durable_flush_after_writer(benchmark, level, log):
    benchmark.group = f"log durable checkpoint: {level.name}"

    def stepped():
        log.step(level.root, checkpoint=True)
        assert log.records    # waits for the writer thread (untimed), appends its payload

    pedantic(benchmark, log.flush, setup=stepped)


# -- 2. restore ------------------------------------------------------------------------------


def test_restore_loads(benchmark, level):
    benchmark.group = f"log restore: {level.name}"
    pedantic(benchmark, autosave.loads, level.data)


def test_restore_checkpoint(benchmark, level, log):
    benchmark.group = f"log restore: {level.name}"
    path, position = log.file.path, log.position
    log.close()
    holder = {}

    def reopen():
        if "log" in holder:
            holder["log"].close()
        holder["log"] = autosave.CheckpointLog.open(path)

    try:
        reopen()
        same_graph(level.root, holder["log"].restore(position))
        pedantic(benchmark, lambda: holder["log"].restore(position), setup=reopen)
    finally:
        holder["log"].close()


# -- 3. open ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def open_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("open") / "open.log"
    commits, deltas = build_open_log(path)
    records_read = check_open_log(path)
    return path, {"checkpoints": OPEN_CHECKPOINTS, "commits": commits,
                  "deltas_replayed": deltas, "records_read": records_read,
                  "bytes": path.stat().st_size}


def test_open_10k_checkpoints(benchmark, open_log):
    path, info = open_log
    benchmark.group = f"log open: {OPEN_CHECKPOINTS:,} checkpoints (target < 100 ms)"
    benchmark.extra_info.update(info)
    benchmark(open_close, path)


# -- 4. flush in a long history (metadata per flush amortised O(1)) ---------------------------


@pytest.mark.parametrize("history", [0, 10_000])
def test_flush_after_many_flushes(benchmark, tmp_path, history):
    """One step and one new bookmark flushed, after ``history`` such flushes: the time
    must not grow with the history (compare_log.py prints the curve, with file sizes)."""
    benchmark.group = "log flush in a long history: one step + one bookmark"
    log = autosave.CheckpointLog.open(tmp_path / "long.log", checkpoint_every=10)
    try:
        log.enter("session")
        for i in range(history):
            log.step(small_state(i))
            log.bookmark(f"slot{i}")
            log.flush()
        counter = iter(range(history, history + 10 ** 6))

        def one_more():
            i = next(counter)
            log.step(small_state(i))
            log.bookmark(f"slot{i}")

        benchmark.pedantic(log.flush, setup=one_more, rounds=200, warmup_rounds=5)
        benchmark.extra_info.update(history=history, file_bytes=log.file.end)
    finally:
        log.close()
