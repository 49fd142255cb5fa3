"""Hostile checkpoint logs: whatever the file holds, opening it, restoring its
positions and ``autosave inspect`` give a result or a LoadError (exit status 2 and one
line naming the file and the offset), never another exception, and a checkpoint
cannot inflate to more memory than its record size allows.

Mutations are made at both levels: bytes of a real log (bit flips, overwrites, cuts),
and the metadata events of a real play session rewritten before they are committed,
so that they pass every checksum and only the history layer's checks stand between
them and the game.
"""

import io
import os
import random
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave import CheckpointLog, CorruptLogError, LoadError, Position
from autosave.cli import main
from autosave.log import LogFile
from autosave.log.inspect import inspect_log
from autosave.log import records
from autosave.checks.limits import MEMORY_BASE, MEMORY_PER_BYTE
from autosave.log.records import PAYLOAD, checkpoint_limit

EXAMPLES = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])


def play_session(log):
    """A small session touching every kind of event and a branch."""
    log.enter("prologue", key=1)
    for hp in range(3):
        log.step({"hp": hp})
    log.bookmark("a", description="gate", screenshot=b"PNG")
    log.reached.add("met-king")
    log.globals["ng"] = 1
    log.flush()
    log.enter("cave\udc80")
    log.step({"hp": 10})
    log.step({"hp": 11})
    log.restore(log.back(1), replay=lambda state, steps: state)
    log.step({"hp": 12})                        # a branch
    log.bookmark("b")
    log.delete_bookmark("a")
    log.bookmark("a", position=log.back(1))
    log.flush()


def exercise(path):
    """Open, restore every position, inspect: returns how it ended ("ok" or a
    LoadError), raising anything else."""
    try:
        with CheckpointLog.open(path, writable=False) as log:
            positions = [m.position for m in log.bookmarks.values()]
            if log.position is not None and log.position.step >= \
                    log.records[log.position.record].first_step:
                positions.append(log.position)
            for position in positions:
                log.restore(position, replay=lambda state, steps: state)
            for mark in log.bookmarks.values():
                mark.screenshot
        outcome = "ok"
    except LoadError as e:
        outcome = e
    out = io.StringIO()
    try:
        inspect_log(str(path), 5, out=out)
    except LoadError:
        pass
    return outcome


@pytest.fixture(scope="module")
def real_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("real") / "real.log"
    with CheckpointLog.open(path, checkpoint_every=2, block_size=256) as log:
        play_session(log)
    assert exercise(path) == "ok"
    return path.read_bytes()


# -- byte-level mutations ----------------------------------------------------------------------

@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mutated_bytes_give_a_result_or_a_load_error(tmp_path_factory, real_log, data):
    image = bytearray(real_log)
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        how = data.draw(st.sampled_from(["flip", "byte", "cut", "zero-run"]))
        at = data.draw(st.integers(0, len(image) - 1), label="at")
        if how == "flip":
            image[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "byte":
            image[at] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del image[at:]
            if not image:
                image += b"\x89"
        else:
            image[at:at + 64] = bytes(len(image[at:at + 64]))
    path = tmp_path_factory.mktemp("bytes") / "m.log"
    path.write_bytes(bytes(image))
    read = exercise(path)
    # A writer opening it repairs what it can; what it leaves must open again, with
    # the same history.
    try:
        with CheckpointLog.open(path) as log:
            seen = (sorted(log.bookmarks), len(log.records), log.position)
            log.enter("after")
            log.step({"hp": 1})
    except LoadError:
        assert read != "ok"
        return
    with CheckpointLog.open(path, writable=False) as log:
        assert (sorted(log.bookmarks), len(log.records) - 1) == seen[:2]
        assert log.restore(log.position) == {"hp": 1}


@pytest.mark.slow
def test_every_single_bit_flip_of_a_real_log(tmp_path, real_log):
    """Exhaustive over the header and one bit per byte of the data, in one process."""
    rng = random.Random(5)
    path = tmp_path / "flip.log"
    for at in range(len(real_log)):
        image = bytearray(real_log)
        image[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(image))
        exercise(path)


# -- structure-aware mutations: valid checksums, hostile events --------------------------------

ANY = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
    | st.binary(max_size=8) | st.sampled_from(["node", "steps", "at", "\udc80", 10 ** 18, -1, 0]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                  max_size=3),
    max_leaves=8)


class MutatingLogFile(LogFile):
    """Rewrites each commit's events (or snapshot) with ``mutate`` before writing."""

    def __init__(self, path, mutate, **kw):
        super().__init__(path, block_size=256, **kw)
        self.mutate = mutate

    def commit(self, events, state):
        events = self.mutate(events)
        super().commit(events, lambda: self.mutate(state()))


def mutator(data):
    def mutate(value):
        if not data.draw(st.booleans(), label="mutate this commit"):
            return value
        for _ in range(data.draw(st.integers(1, 3), label="edits")):
            value = edit(value, data)
        return value
    return mutate


def edit(value, data, depth=0):
    """``value`` with one part replaced, deleted, duplicated or retyped."""
    if isinstance(value, dict) and value and depth < 6:
        key = data.draw(st.sampled_from(sorted(value, key=repr)))
        copy = dict(value)
        if data.draw(st.integers(0, 9)) == 0:
            del copy[key]
        else:
            copy[key] = edit(copy[key], data, depth + 1)
        return copy
    if isinstance(value, list) and value and depth < 6:
        i = data.draw(st.integers(0, len(value) - 1))
        copy = list(value)
        choice = data.draw(st.integers(0, 9))
        if choice == 0:
            del copy[i]
        elif choice == 1:
            copy.insert(i, copy[i])
        else:
            copy[i] = edit(copy[i], data, depth + 1)
        return copy
    if isinstance(value, int) and not isinstance(value, bool) and data.draw(st.booleans()):
        return value + data.draw(st.sampled_from([-1, 1, -2 ** 40, 2 ** 40]))
    return data.draw(ANY, label="replacement")


@pytest.mark.slow
@FUZZ
@given(data=st.data(), snapshots=st.booleans())
def test_mutated_events_give_a_result_or_a_load_error(tmp_path_factory, data, snapshots):
    path = tmp_path_factory.mktemp("events") / "m.log"
    file = MutatingLogFile(path, mutator(data), deltas_per_snapshot=0 if snapshots else 64)
    log = CheckpointLog(file, checkpoint_every=2)
    try:
        play_session(log)
    finally:
        log.file.close()
    exercise(path)


# -- bombs and the command line ----------------------------------------------------------------

def bomb_log(path, inflated):
    """A log whose one checkpoint is a zlib stream of ``inflated`` zero bytes."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    packed = b"".join(packer.compress(chunk) for _ in range(inflated >> 20)) + packer.flush()
    with LogFile(path) as file:
        offset = file.append(PAYLOAD, packed)
        file.commit([["node", 0, "n", None, None, None, 0], ["checkpoint", 0, 0, offset],
                     ["steps", 0, 0], ["at", 0, 0]], dict)
    return offset, len(packed)


def test_a_decompression_bomb_is_refused_within_its_bound(tmp_path, capsys):
    path = tmp_path / "bomb.log"
    offset, size = bomb_log(path, 128 << 20)
    log_size = path.stat().st_size
    limit = checkpoint_limit(log_size)
    assert limit < 128 << 20
    tracemalloc.start()
    try:
        with CheckpointLog.open(path, writable=False) as log:
            with pytest.raises(CorruptLogError, match=f"offset {offset} inflates past"):
                log.restore(log.position)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * limit + (4 << 20)
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and f"offset {offset}" in err


@pytest.mark.slow         # saves and inflates a million lists
def test_a_small_log_restores_within_the_budget_of_its_own_size(tmp_path):
    """A real save that zlib shrinks 500:1 in a log of some 10 KB: the inflated
    checkpoint and its load are charged to the log's budget (64 MiB + 100 bytes per
    byte of the log), not to that of the inflated size: refused, within the budget."""
    path = tmp_path / "dense.log"
    state = [[] for _ in range(1 << 20)]            # 1 M empty lists: ~6 MB saved
    data = autosave.dumps(state)
    packed = zlib.compress(data, 9)
    assert len(data) > 500 * len(packed)
    with LogFile(path) as file:
        offset = file.append(PAYLOAD, packed)
        file.commit([["node", 0, "n", None, None, None, 0], ["checkpoint", 0, 0, offset],
                     ["steps", 0, 0], ["at", 0, 0]], dict)
    del state
    log_size = path.stat().st_size
    tracemalloc.start()
    try:
        with CheckpointLog.open(path, writable=False) as log:
            with pytest.raises(CorruptLogError, match=f"offset {offset} inflates past"):
                log.restore(log.position)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_BASE + MEMORY_PER_BYTE * log_size


def test_the_writer_keeps_within_the_bound(tmp_path):
    """A state that compresses better than a log of its size may inflate is stored less
    compressed, so that everything the writer makes can be read back; once the log
    holds enough history, the same state is compressed."""
    state = [bytes(1 << 20) for _ in range(4)]        # zlib level 1: ~20 KB
    with CheckpointLog.open(tmp_path / "z.log", checkpoint_every=1) as log:
        log.enter("n")
        sizes = []
        for _ in range(6):
            log.step(state)
            kind, payload = log.file.read(log.records[0].checkpoints[log.position.step])
            assert len(autosave.dumps(state)) <= checkpoint_limit(log.file.size)
            sizes.append(len(payload))
            assert log.restore(log.position) == state
            log.flush()
        assert sizes[0] > len(autosave.dumps(state))          # stored: a fresh log
        assert sizes[-1] < len(autosave.dumps(state)) // 10   # compressed: a grown one
    with CheckpointLog.open(tmp_path / "z.log", writable=False) as log:
        for step in log.records[0].checkpoints:
            assert log.restore(Position("n", step, 0)) == state


def test_inspect_errors_are_one_line_with_the_offset(tmp_path, capsys, real_log):
    rng = random.Random(9)
    errors = 0
    for _ in range(200):
        image = bytearray(real_log)
        image[rng.randrange(8, len(image))] ^= 1 << rng.randrange(8)   # magic kept
        path = tmp_path / "i.log"
        path.write_bytes(bytes(image))
        status = main(["inspect", str(path)])
        captured = capsys.readouterr()
        assert status in (0, 2)
        if status == 2:
            errors += 1
            assert captured.err.count("\n") == 1 and str(path) in captured.err
            assert "offset" in captured.err, captured.err
    assert errors


def test_inspect_prints_lone_surrogates(tmp_path, capsys):
    path = tmp_path / "s.log"
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("cave\udc80\nline")
        log.step({"hp": 1})
        log.bookmark("slot\ud800")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "#0 cave\\udc80\\nline" in out and "slot\\ud800@0" in out
    out.encode("utf-8")                          # printable as it stands


def test_inspect_reads_each_record_once(tmp_path, capsys, monkeypatch):
    """A forged history naming one big record from thousands of checkpoints and
    bookmarks: inspect reads it once, not once per name."""
    path = tmp_path / "many.log"
    with LogFile(path) as file:
        big = file.append(PAYLOAD, zlib.compress(autosave.dumps(list(range(50_000)))))
        events = [["node", 0, "n", None, None, None, 0]]
        events += [["checkpoint", 0, step, big] for step in range(3000)]
        events += [["bookmark", f"s{i}", 0, i, "", 0.0, big] for i in range(3000)]
        events += [["steps", 0, 2999], ["at", 0, 2999]]
        file.commit(events, dict)
    reads = []
    original = LogFile.read_committed

    def spy(self, offset):
        reads.append(offset)
        return original(self, offset)

    monkeypatch.setattr(LogFile, "read_committed", spy)
    assert main(["inspect", str(path)]) == 0
    assert reads.count(big) <= 4      # sizes of checkpoints, of screenshots; the newest
    out = capsys.readouterr().out
    assert "bytes: checkpoints 3000 (105," in out and "screenshots 105," in out


@pytest.mark.slow
def test_inspect_of_every_cut_of_a_log(tmp_path, capsys, real_log):
    """A log cut anywhere: its history up to the last whole commit, or (within its
    header) a one-line error naming the offset."""
    path = tmp_path / "cut.log"
    for cut in list(range(1, 300)) + list(range(300, len(real_log), 7)):
        path.write_bytes(real_log[:cut])
        status = main(["inspect", str(path)])
        captured = capsys.readouterr()
        if cut >= 256:                         # a whole header block: always opens
            assert status == 0, (cut, captured.err)
        else:
            assert status == 2 and captured.err.count("\n") == 1
            assert "offset" in captured.err and str(path) in captured.err, captured.err


def test_a_checkpoint_is_loaded_under_the_budget_of_its_log(tmp_path, monkeypatch):
    """The inflated checkpoint and its load are charged to one budget, the log's: what
    the load is left is what the log's size allows less what inflating took."""
    from autosave.checks import limits
    seen = []
    real = limits.Budget.decoding

    def decoding(self, size):
        seen.append((self.size, self.memory))
        return real(self, size)

    monkeypatch.setattr(limits.Budget, "decoding", decoding)
    with CheckpointLog.open(tmp_path / "b.log") as log:
        log.enter("n")
        log.step(list(range(1000)))
        log.flush()
        log_size = log.file.size
        assert log.restore(log.position) == list(range(1000))
    [(size, memory)] = seen
    assert size == log_size and memory < limits.Budget(log_size).memory


@pytest.mark.parametrize("table, match", [
    (["zd", 10 ** 9, zlib.compress(b"")], "over|takes"),                   # claims a billion
    (["zd", 2, zlib.compress(bytes(31))], "int64 step and offset"),        # a byte short
    (["zd", 2, zlib.compress(bytes(32)) + b"x"], "int64 step and offset"),  # padded
    (["zd", 2, b"not zlib"], "not a zlib stream"),
    (["zd", -1, b""], "not \\[count, bytes\\]"),
    (["zd", 1, zlib.compress(bytes(16 << 10), 9)[:40]], "int64 step and offset"),  # bomb, cut
])
def test_forged_checkpoint_tables_are_refused_naming_the_record(tmp_path, table, match):
    path = tmp_path / "t.log"
    with LogFile(path) as file:
        row = [0, "n", None, None, None, 0, 0, table]
        state = {"records": [row], "bookmarks": [], "reached": [],
                 "globals": autosave.dumps({}), "at": None}
        file.deltas_per_snapshot = 0
        file.commit([["x"]], lambda: state)
        assert file.slot.snapshot_bytes
    refused = pytest.raises(CorruptLogError, match=f"offset 4096: the checkpoints of record 0 "
                                                   f"are not a table: .*({match})")
    # At open (a claim, or a table whose first step does not read), or, since a table
    # is inflated when first used, at its first use.
    try:
        log = CheckpointLog.open(path, writable=False)
    except CorruptLogError:
        with refused:
            CheckpointLog.open(path, writable=False)
        return
    with log, refused:
        log.restore(Position("n", 0, 0))
