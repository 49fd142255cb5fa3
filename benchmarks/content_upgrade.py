"""Opening and upgrading a 10,000-checkpoint log after a content patch, as a Markdown table.

    python benchmarks/content_upgrade.py             # median of 5 runs, ~10 s
    python benchmarks/content_upgrade.py --runs 3 --dir /some/disk --touched 0.1
    python benchmarks/content_upgrade.py --nodes 1000 --steps 10

The log: 100 nodes of 100 steps, a checkpoint at every step (checkpoint_every=1), a
commit every 78 steps (as compare_log.py's open target), a bookmark every 50 steps, all
recorded against content of 100 step keys per node. The patch touches a fraction of the
nodes (--touched, default 10%): in each, one line inserted, one edited and one deleted,
at random places. Each run times, on a fresh copy of the file:

* open without content (today's open: the baseline),
* open with the unchanged content (fingerprints compared, nothing written),
* open with the patched content (the upgrade: plan, replay of its events, one commit),
* open with the patched content again (already upgraded: nothing written),
* restore of a bookmark late in a changed node (loads the entry checkpoint and replays).
"""

import argparse
import gc
import os
import random
import shutil
import statistics
import tempfile
import time

from autosave import CheckpointLog

COMMIT_EVERY, MARK_EVERY = 78, 50
NODES, STEPS = 100, 100       # set from --nodes and --steps


def build(path, content):
    with CheckpointLog.open(path, checkpoint_every=1, content=content) as log:
        n = 0
        for node in range(NODES):
            name = f"node{node}"
            log.enter(name, state={"node": name, "step": 0})
            for step in range(STEPS):
                if step:
                    log.step({"node": name, "step": step})
                n += 1
                if n % MARK_EVERY == 0:
                    log.bookmark(f"m{n}")
                if n % COMMIT_EVERY == 0:
                    log.flush()


def patched(content, touched, rng):
    new = {name: list(keys) for name, keys in content.items()}
    for name in rng.sample(sorted(new), max(1, round(touched * len(new)))):
        keys = new[name]
        keys.insert(rng.randrange(len(keys)), f"{name}.inserted")
        keys[rng.randrange(len(keys))] = f"{name}.edited"
        del keys[rng.randrange(len(keys))]
    return new


def timed(fn):
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = fn()
        return time.perf_counter() - start, result
    finally:
        gc.enable()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--touched", type=float, default=0.1)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100, help="steps per node")
    args = parser.parse_args()
    global NODES, STEPS
    NODES, STEPS = args.nodes, args.steps
    rng = random.Random(17)
    content = {f"node{n}": [f"node{n}.line{i}" for i in range(STEPS)] for n in range(NODES)}
    new = patched(content, args.touched, rng)
    changed = sorted(n for n in new if new[n] != content[n])
    work = tempfile.mkdtemp(dir=args.dir)
    try:
        master = os.path.join(work, "master.log")
        build(master, content)
        rows = {k: [] for k in ("open, no content", "open, unchanged content",
                                "open + upgrade (patched content)",
                                "open, already upgraded", "restore in a changed node")}
        report = None
        for run in range(args.runs + 1):            # the first is a warm-up
            path = os.path.join(work, f"run{run}.log")
            shutil.copyfile(master, path)
            times = {}
            times["open, no content"], _ = timed(lambda: CheckpointLog.open(path).close())
            times["open, unchanged content"], _ = timed(
                lambda: CheckpointLog.open(path, content=content).close())

            def upgrade():
                log = CheckpointLog.open(path, content=new)
                log.close()
                return log.upgrade_report
            times["open + upgrade (patched content)"], report = timed(upgrade)
            times["open, already upgraded"], _ = timed(
                lambda: CheckpointLog.open(path, content=new).close())
            with CheckpointLog.open(path, content=new, writable=False) as log:
                marks = [m for m in log.bookmarks.values() if m.position.node in changed]
                mark = max(marks, key=lambda m: m.position.step)

                def replay(state, steps):
                    return {**state, "step": state["step"] + steps}
                times["restore in a changed node"], state = timed(
                    lambda: log.restore(mark.position, replay=replay))
                assert state["step"] == mark.position.step
            size = os.path.getsize(path)
            if run:
                for k, v in times.items():
                    rows[k].append(v)
        moved = sum(b["status"] == "moved" for b in report.bookmarks.values())
        print(f"log: {NODES} nodes x {STEPS} steps, {NODES * STEPS:,} checkpoints, "
              f"{len(report.bookmarks)} bookmarks, {os.path.getsize(master):,} bytes; patch "
              f"touching {len(changed)} nodes: {report.records} records remapped, {moved} "
              f"bookmarks moved; upgraded file {size:,} bytes")
        print()
        print("| operation | median ms | min ms |")
        print("|---|---|---|")
        for k, v in rows.items():
            print(f"| {k} | {statistics.median(v) * 1e3:.1f} | {min(v) * 1e3:.1f} |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
