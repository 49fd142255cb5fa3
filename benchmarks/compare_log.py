"""The checkpoint log against its targets, as a Markdown table.

    python benchmarks/compare_log.py                 # median of 7 runs, ~10 s
    python benchmarks/compare_log.py --runs 3 --dir /some/disk

Targets (from the issue), all on the demo level of graphs.py (~15k objects) unless said:

1. append: ``log.step(state, checkpoint=True)`` on the game's thread (the save's walk;
   encoding, zstd and framing happen on the log's writer thread) at most 1.15x
   ``autosave.dumps(state)``. A durable checkpoint (a step and, at once, its flush,
   timed as one call: the flush waits for the writer thread, then two fsyncs) is
   reported next to an atomic save file (``autosave.save``), and its flush on its
   own, for information only.
2. restore: ``log.restore(position)`` of a checkpointed step at most 1.15x
   ``autosave.loads`` of the same state's bytes. The log is reopened (untimed) before
   each run, so its block cache is cold, as when a player loads after starting the game.
3. open: opening a log holding 10,000 checkpoints (and closing it) under 100 ms. The log
   is built once with a small state per step, checkpoint_every=1, 100 nodes of 100 steps,
   and a commit every 78 steps: 129 commits, so opening replays a snapshot plus the
   most deltas it ever has to (deltas_per_snapshot=64). Checked: no payload is read.
4. size: file growth per checkpoint (N checkpoints of the level, a counter advanced
   between them, then one flush) at most pickle protocol 5's size of the same state.
5. growth: 10,000 flushes of one step (a small state, checkpointed every 10 steps) and
   one new bookmark each, the file size and the mean flush time reported every 1,000
   flushes. Metadata per flush is amortised O(1), so both columns must grow linearly
   (size) and stay flat (time). ``--growth-flushes 0`` skips it.

Timing as in compare.py: one warm-up round, then the median of --runs runs, the
garbage collector off while timing (collected between runs, untimed), the two sides of
each comparison alternating so background load skews both alike. Before anything is
timed, the round trips (dumps/loads and checkpoint/restore) are checked to give back the
same graph. A time ratio is the median over runs of log / baseline timed in the same
round, which cancels the slow drifts of a busy machine better than the quotient of the
two medians; above 1 means the log is slower or bigger. Rows marked informative break
the append and restore down into their parts (zlib, framing, reading the record), so a
missed target shows where its time goes.
"""

import argparse
import gc
import os
import pickle
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import zstandard

import autosave
from autosave.log import file as log_file
from autosave.log.chain import make_whole
from graphs import allow_deep_recursion, count_objects, deep_call, level_graph, same_graph

TARGET_APPEND = 1.15
TARGET_RESTORE = 1.15
TARGET_OPEN_MS = 100.0
TARGET_SIZE = 1.0

OPEN_CHECKPOINTS = 10_000
OPEN_NODES = 100                 # nodes of OPEN_CHECKPOINTS / OPEN_NODES steps each
OPEN_FLUSH_EVERY = 78            # 129 commits: a snapshot, then 64 deltas to replay
SIZE_CHECKPOINTS = 20


def timed(fn, *args):
    """Seconds fn(*args) takes with the garbage collector off (collected before, untimed)."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        result = fn(*args)
        elapsed = time.perf_counter() - started
    finally:
        gc.enable()
    del result
    return elapsed


def run_times(calls, runs, setup=None):
    """Wall times in ms of each (fn, *args) in ``calls``, alternating between them: one
    list of ``runs`` times per call. One warm-up round comes first; ``setup()``
    (untimed) runs before each round."""
    times = [[] for _ in calls]
    for i in range(runs + 1):
        if setup is not None:
            setup()
        for side, (fn, *args) in enumerate(calls):
            elapsed = timed(fn, *args)
            if i:
                times[side].append(elapsed * 1000)
    return times


def median(times):
    return statistics.median(times)


def paired_ratio(mine, base):
    """Median over rounds of mine / base timed in the same round: on a busy machine this
    cancels the slow drifts that make the two medians' quotient wander."""
    return statistics.median(m / b for m, b in zip(mine, base))


# -- 1. append (and flush) ----------------------------------------------------------------


def measure_append(level, data, directory, runs):
    log = autosave.CheckpointLog.open(directory / "append.log")
    save_path = directory / "slot.sav"
    packed = whole(data)
    try:
        log.enter("level")
        log.step(level)                       # a record's first step: a checkpoint anyway
        log.flush()
        # One step of each kind, checked before timing: this step is restorable.
        log.step(level, checkpoint=True)
        log.flush()
        same_graph(level, log.restore(log.position))
        split = []
        t_dumps, t_step, t_durable, t_save, t_zlib, t_frame = run_times(
            [(autosave.dumps, level),
             (log.step, level, True),          # checkpoint=True: the append, no flush
             (durable, log, level, split),     # a step and its flush, in one call
             (autosave.save, save_path, level),
             (whole, data),                    # parts of the append, for the breakdown
             (frame_payload, log, packed)],
            runs)
    finally:
        log.close()
    flush = [f * 1000 for _, f in split[1:]]                # less the warm-up round
    return {"dumps": t_dumps, "step": t_step, "flush": flush, "save": t_save,
            "durable": t_durable, "zstd": t_zlib, "frame": t_frame}


def durable(log, level, split):
    """A checkpoint made durable: the step, then at once the flush, which waits for the
    writer thread (timed apart, into ``split``, with nothing run in between)."""
    started = time.perf_counter()
    log.step(level, True)
    stepped = time.perf_counter()
    log.flush()
    split.append((stepped - started, time.perf_counter() - stepped))


def whole(data):
    """A whole checkpoint's payload: zstd level 1 (on the writer thread, in a log)."""
    return make_whole(data, 1 << 40)


def frame_payload(log, body):
    """What the append does after compressing: frame the record into chunks with their
    checksums (log/file.py ``frame``), not queued."""
    return log_file.frame(bytes((log_file.PAYLOAD,)) + body, log.file.end, log.file.block_size)


# -- 2. restore ---------------------------------------------------------------------------


def measure_restore(level, data, directory, runs):
    path = directory / "restore.log"
    with autosave.CheckpointLog.open(path) as log:
        log.enter("level")
        log.step(level)
        position = log.position
        offset = log.records[position.record].checkpoints[position.step]
    holder = {}

    def reopen():
        if "log" in holder:
            holder["log"].close()
        holder["log"] = autosave.CheckpointLog.open(path)

    def restore(pos):
        return holder["log"].restore(pos)

    def read_payload(offset):
        return holder["log"].file.read(offset)

    try:
        reopen()
        same_graph(level, restore(position))
        same_graph(level, autosave.loads(data))
        packed = whole(data)[1:]
        t_loads, t_restore = run_times([(autosave.loads, data), (restore, position)], runs,
                                       setup=reopen)
        # The restore's parts, for the breakdown: reading the record (from a fresh log,
        # so through a cold block cache, as in the restore) and decompressing it.
        t_read, t_unzip = run_times([(read_payload, offset),
                                     (zstandard.ZstdDecompressor().decompress, packed)], runs,
                                    setup=reopen)
    finally:
        holder["log"].close()
    return {"loads": t_loads, "restore": t_restore, "read": t_read, "unzip": t_unzip}


# -- 3. open a log of 10,000 checkpoints ---------------------------------------------------


def small_state(i):
    return {"step": i, "hp": 100 - i % 100, "gold": i * 7, "x": i % 640, "y": i % 480}


def build_open_log(path, checkpoints=OPEN_CHECKPOINTS, nodes=OPEN_NODES,
                   flush_every=OPEN_FLUSH_EVERY):
    """A log of ``checkpoints`` checkpoints of a small state, one per step, committed
    every ``flush_every`` steps, over ``nodes`` nested nodes."""
    per_node = checkpoints // nodes
    with autosave.CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=64) as log:
        for i in range(checkpoints):
            if i % per_node == 0:
                log.enter(f"node{i // per_node}")
            log.step(small_state(i))
            if (i + 1) % flush_every == 0:
                log.flush()
        log.flush()
        commits, deltas = log.file.slot.seq, log.file.slot.deltas
    return commits, deltas


def check_open_log(path, checkpoints=OPEN_CHECKPOINTS):
    """Open the log once, recording every record read (all metadata, no payload, which
    docs/log-format.md promises), and check it holds ``checkpoints`` checkpoints and
    restores the last state. Returns how many records the open read."""
    kinds = []
    original = log_file.LogFile.read_committed

    def spy(self, offset):
        record = original(self, offset)
        kinds.append(record[0])
        return record

    log_file.LogFile.read_committed = spy
    try:
        log = autosave.CheckpointLog.open(path)
    finally:
        log_file.LogFile.read_committed = original
    try:
        if log_file.PAYLOAD in kinds:
            raise AssertionError("opening the log read a payload record")
        found = sum(len(r.checkpoints) for r in log.records.values())
        if found != checkpoints:
            raise AssertionError(f"the log holds {found} checkpoints, not {checkpoints}")
        if log.restore(log.position) != small_state(checkpoints - 1):
            raise AssertionError("the last checkpoint does not hold the last state")
    finally:
        log.close()
    return len(kinds)


def open_close(path):
    autosave.CheckpointLog.open(path).close()


def measure_open(directory, runs):
    path = directory / "open.log"
    started = time.perf_counter()
    commits, deltas = build_open_log(path)
    built = time.perf_counter() - started
    metadata_records = check_open_log(path)
    (t_open,) = run_times([(open_close, path)], runs)
    return {"open": t_open, "commits": commits, "deltas": deltas, "built": built,
            "metadata_records": metadata_records, "file_bytes": path.stat().st_size}


# -- 4. growth per checkpoint -------------------------------------------------------------


def measure_size(level, directory, n=SIZE_CHECKPOINTS):
    path = directory / "size.log"
    tick = level.tick
    pickled = []
    try:
        with autosave.CheckpointLog.open(path) as log:
            log.enter("level")
            log.step(level)
            log.flush()
            before = path.stat().st_size
            for _ in range(n):
                level.tick += 1               # each checkpoint a (slightly) different state
                log.step(level, checkpoint=True)
                pickled.append(len(deep_call(pickle.dumps, level, 5)))
            log.flush()
            after = path.stat().st_size
    finally:
        level.tick = tick
    return {"growth": (after - before) / n, "pickle": statistics.mean(pickled), "n": n}


# -- 5. growth over many flushes ------------------------------------------------------------


def measure_growth(directory, flushes, every=1000):
    """[(flushes so far, file bytes, mean ms per flush over the last ``every``)]."""
    rows = []
    with autosave.CheckpointLog.open(directory / "growth.log", checkpoint_every=10) as log:
        log.enter("session")
        window = 0.0
        for i in range(1, flushes + 1):
            log.step(small_state(i))
            log.bookmark(f"slot{i}", description="autosave")
            started = time.perf_counter()
            log.flush()
            window += time.perf_counter() - started
            if i % every == 0:
                rows.append((i, log.file.end, window / every * 1000))
                window = 0.0
    return rows


def growth_table(rows):
    lines = ["| flushes | file bytes | bytes per flush | mean flush (last 1,000) |",
             "|---:|---:|---:|---:|"]
    lines += [f"| {n:,} | {size:,} | {size / n:,.0f} | {ms:.2f} ms |" for n, size, ms in rows]
    return "\n".join(lines)


# -- the table ------------------------------------------------------------------------------


def table(level_objects, a, r, o, s):
    head = ["measure", "autosave log", "baseline", "ratio", "target", "met?"]
    rows = []

    def row(measure, mine, base=None, target=None, met=None, unit="ms"):
        if unit == "ms":            # lists of times per round: medians, paired ratio
            cells = [f"{median(mine):.1f} ms", f"{median(base):.1f} ms" if base else "—",
                     f"{paired_ratio(mine, base):.2f}x" if base else "—"]
        else:
            cells = [f"{mine:,.0f} B", f"{base:,.0f} B", f"{mine / base:.2f}x"]
        rows.append([measure, *cells, target or "—",
                     "—" if met is None else ("yes" if met else "**NO**")])

    level = f"level-15k ({level_objects:,} objects)"
    append_ratio = paired_ratio(a["step"], a["dumps"])
    row(f"1. append checkpoint, {level} / autosave.dumps", a["step"], a["dumps"],
        f"≤ {TARGET_APPEND:.2f}x", append_ratio <= TARGET_APPEND)
    row("   on the writer thread: zstd level 1 / autosave.dumps (informative)", a["zstd"],
        a["dumps"])
    row("   on the caller's thread at the flush: framing + chunk checksums / "
        "autosave.dumps (informative)", a["frame"], a["dumps"])
    row("   flush right after the step: waits for the writer thread (encoding, zstd), "
        "then write + 2 fsyncs (informative)", a["flush"])
    row("   append + flush / autosave.save, an atomic save file (informative)",
        a["durable"], a["save"])
    restore_ratio = paired_ratio(r["restore"], r["loads"])
    row(f"2. restore checkpoint, {level} / autosave.loads", r["restore"], r["loads"],
        f"≤ {TARGET_RESTORE:.2f}x", restore_ratio <= TARGET_RESTORE)
    row("   of which zstd decompress / autosave.loads (informative)", r["unzip"], r["loads"])
    row("   of which reading the record, cold cache / autosave.loads (informative)",
        r["read"], r["loads"])
    row(f"3. open + close, {OPEN_CHECKPOINTS:,} checkpoints ({o['commits']} commits, "
        f"{o['deltas']} deltas replayed)", o["open"], None, f"< {TARGET_OPEN_MS:.0f} ms",
        median(o["open"]) < TARGET_OPEN_MS)
    row(f"4. file growth per checkpoint, {level} / pickle protocol 5", s["growth"],
        s["pickle"], f"≤ {TARGET_SIZE:.2f}x", s["growth"] <= TARGET_SIZE * s["pickle"],
        unit="B")
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---:|---:|---|---|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per operation (default 7)")
    parser.add_argument("--growth-flushes", type=int, default=10_000,
                        help="flushes of the growth measure (default 10,000; 0 skips it)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="directory for the log files (default: a temporary directory)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    allow_deep_recursion()
    started = time.perf_counter()

    def say(message):
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="autosave-bench-", dir=args.dir) as tmp:
        directory = Path(tmp)
        say("level-15k: building, checking round trips...")
        level = level_graph()
        objects = count_objects(level)
        data = autosave.dumps(level)
        same_graph(level, autosave.loads(data))
        say("1. timing append and flush...")
        a = measure_append(level, data, directory, args.runs)
        say("2. timing restore...")
        r = measure_restore(level, data, directory, args.runs)
        say(f"3. building a log of {OPEN_CHECKPOINTS:,} checkpoints, timing open...")
        o = measure_open(directory, args.runs)
        say(f"   built in {o['built']:.1f} s: {o['file_bytes']:,} bytes, {o['commits']} "
            f"commits; opening reads {o['metadata_records']} metadata records, no payload")
        say(f"4. measuring growth over {SIZE_CHECKPOINTS} checkpoints...")
        s = measure_size(level, directory)
        growth = None
        if args.growth_flushes:
            say(f"5. {args.growth_flushes:,} flushes, one bookmark each...")
            growth = measure_growth(directory, args.growth_flushes)
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} x{os.cpu_count()}, median of {args.runs} runs, gc off "
          f"while timing; ratio = median over runs of log / baseline "
          f"timed in the same round\n")
    print(table(objects, a, r, o, s))
    if growth:
        print(f"\n5. growth over {args.growth_flushes:,} flushes of one step and one new "
              f"bookmark each (file size linear, flush time flat):\n")
        print(growth_table(growth))
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
