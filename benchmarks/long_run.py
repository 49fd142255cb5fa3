"""The checkpoint log over a long play and with a large state, as Markdown tables.

    python benchmarks/long_run.py --dir /dev/shm           # 2k, 20k, 200k flushes; 200 MB
    python benchmarks/long_run.py --flushes 2000 20000 --state-mb 20    # a quicker look

1. A long play: one step and one flush at a time, a checkpoint at every step (the
   checkpoint table grows with every flush), a small state. At each mark (2,000, 20,000
   and 200,000 flushes by default) it reports the mean flush time over the flushes since
   the previous mark, the file's bytes per flush, and the time to open the log (read-only,
   beside the writer; median of 5, with its metadata records read).
2. A large state: a log holding a ~``--state-mb`` MB state twice (the first checkpoint of
   a fresh log is stored uncompressed, since a small log may not inflate to a large state,
   docs/log-format.md; the second is compressed). Each restore runs in a fresh process
   reporting its time and its peak memory (growth of the resident set's high-water mark,
   Linux's VmHWM), against the codec alone (zstd, or zlib for a stored checkpoint) +
   ``autosave.loads`` of the same payload
   in another; the state's own resident size is reported beside them.

Figures depend on the disk: fsync dominates a flush (tmpfs: none).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import zstandard

import autosave
from autosave.log.chain import WHOLE_TAG, read_checkpoint


def small_state(i):
    return {"step": i, "hp": 100 - i % 100, "gold": i * 7, "x": i % 640, "y": i % 480}


def open_time(path, runs=5):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        autosave.CheckpointLog.open(path, writable=False).close()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def long_play(path, marks):
    rows = []
    with autosave.CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("session")
        done, spent = 0, 0.0
        for mark in marks:
            window = mark - done
            for i in range(done, mark):
                log.step(small_state(i))
                started = time.perf_counter()
                log.flush()
                spent += time.perf_counter() - started
            done = mark
            size = log.file.end
            rows.append((mark, spent / window * 1000, size / mark, open_time(path) * 1000))
            spent = 0.0
            print(f"  {mark:,} flushes: {rows[-1][1]:.2f} ms/flush, {rows[-1][2]:.0f} B/flush, "
                  f"open {rows[-1][3]:.1f} ms", file=sys.stderr, flush=True)
    return rows


def decompress(payload):
    """The codec alone: a whole checkpoint's zstd frame, or a version-3 zlib stream."""
    if payload[:1] == bytes((WHOLE_TAG,)):
        return zstandard.ZstdDecompressor().decompress(payload[1:])
    return zlib.decompress(payload)


def big_state(mb):
    """About ``mb`` MB saved: random bytes (incompressible) and many small objects."""
    blobs = [os.urandom(1 << 20) for _ in range(int(mb * 0.6))]
    entities = [{"id": i, "name": f"e{i}", "pos": (i * 0.5, i * 0.25), "tags": [i % 7, i % 11]}
                for i in range(int(mb * 0.4 * 1e6 / 45))]
    return {"blobs": blobs, "entities": entities}


MEASURE = r"""
import json, sys, time, zlib
import zstandard
import autosave
from autosave.log.chain import WHOLE_TAG

def decompress(payload):
    # the codec alone: a zstd frame (a whole checkpoint) or a zlib stream (version 3)
    if payload[:1] == bytes((WHOLE_TAG,)):
        return zstandard.ZstdDecompressor().decompress(payload[1:])
    return zlib.decompress(payload)

def status_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024

def high_water_mb():
    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's high-water mark
    return status_mb("VmHWM")

path, which, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = autosave.CheckpointLog.open(path, writable=False)
offset = log.records[0].checkpoints[step]
payload = log.file.read(offset)[1] if which == "codec" else None
before, resident = high_water_mb(), status_mb("VmRSS")
started = time.perf_counter()
if which == "codec":
    state = autosave.loads(decompress(payload))
else:
    state = log.restore(autosave.Position("state", step, 0))
took = time.perf_counter() - started
print(json.dumps({"seconds": took, "peak_growth_mb": high_water_mb() - before,
                  "state_mb": status_mb("VmRSS") - resident,
                  "entities": len(state["entities"])}))
"""


def measure(path, which, step):
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path), which, str(step)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def large_state(path, mb):
    state = big_state(mb)
    data = autosave.dumps(state)
    # Whole checkpoints (full_every=0): the same state twice would make the second a
    # delta of a few bytes (benchmarks/delta_log.py measures those).
    with autosave.CheckpointLog.open(path, checkpoint_every=1, full_every=0) as log:
        log.enter("state")
        log.step(state)
        log.flush()
        log.step(state)
        log.flush()
        sizes = [len(log.file.read(log.records[0].checkpoints[s])[1]) for s in (0, 1)]
    del state
    with autosave.CheckpointLog.open(path, writable=False) as log:
        offset = log.records[0].checkpoints[1]
        payload = log.file.read(offset)[1]
    with autosave.CheckpointLog.open(path, writable=False) as log:
        started = time.perf_counter()
        read_checkpoint(log.file, offset)
        inflated = time.perf_counter() - started
    started = time.perf_counter()
    decompress(payload)
    decompressed = time.perf_counter() - started
    print(f"  reading the compressed checkpoint: {inflated:.2f} s, the codec alone "
          f"{decompressed:.2f} s", file=sys.stderr, flush=True)
    rows = []
    for step in (0, 1):
        rows.append((step, sizes[step], measure(path, "restore", step),
                     measure(path, "codec", step)))
    return len(data), rows, (inflated, decompressed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flushes", type=int, nargs="*", default=[2_000, 20_000, 200_000])
    parser.add_argument("--state-mb", type=float, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        tmp = Path(tmp)
        if args.flushes:
            print("| flushes | mean flush since the previous row | bytes per flush | open |")
            print("|---:|---:|---:|---:|")
            for n, ms, per, opened in long_play(tmp / "long.log", sorted(args.flushes)):
                print(f"| {n:,} | {ms:.2f} ms | {per:,.0f} | {opened:.1f} ms |", flush=True)
            (tmp / "long.log").unlink()
        if args.state_mb:
            saved, rows, (inflated, decompressed) = large_state(tmp / "large.log",
                                                                args.state_mb)
            print(f"\nstate: {saved / 1e6:,.0f} MB saved; reading its compressed "
                  f"checkpoint alone: {inflated:.2f} s (the codec alone: "
                  f"{decompressed:.2f} s)\n")
            print("| checkpoint | payload | state resident | restore | peak | "
                  "codec + loads | peak |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for step, size, mine, base in rows:
                kind = "stored (fresh log)" if step == 0 else "compressed"
                print(f"| {kind} | {size / 1e6:,.0f} MB | {mine['state_mb']:,.0f} MB | "
                      f"{mine['seconds']:.2f} s | {mine['peak_growth_mb']:,.0f} MB | "
                      f"{base['seconds']:.2f} s | {base['peak_growth_mb']:,.0f} MB |")


if __name__ == "__main__":
    main()
