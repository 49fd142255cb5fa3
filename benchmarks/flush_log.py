"""What checkpoints cost the game's thread, now and in a build from before delta
checkpoints, at a given change (default 100%: every checkpoint as large as a whole save).

    python benchmarks/flush_log.py --before /path/to/old/venv/bin/python --dir /dev/shm
    python benchmarks/flush_log.py --workload town --objects 100000 --changes 1.0 0.01

``--inline`` adds this build with every checkpoint made on the game's thread (encoding,
zstd and append in ``step()``, as before delta checkpoints, with this engine's dumps).
``--before`` names a Python whose ``autosave`` is a build from before delta checkpoints
(where ``step()`` made the whole compressed checkpoint on the game's thread and
``flush()`` only wrote it): this script runs itself under it and under this build,
alternating round by round, on the same workload (delta_log.py's agents or
town_log.py's town), and prints both. Two ways a game checkpoints:

* **durable**: change, ``step()``, ``flush()`` at once (a save the player asked for, or
  a durable autosave). Reported: step, flush and step + flush (medians over the
  checkpoints), and ``autosave.dumps`` timed just before each step.
* **ticks**: change, ``step()`` every tick, ``flush()`` every ``--flush-every`` ticks (a
  simulation checkpointing each tick, committing now and then). Reported: the step and
  the flush (medians), and the **tick**: the wall time of a whole tick, the game's own
  work (the change) included, as the game's thread lives it: the writer thread takes
  turns with it for the GIL, and this shows what that costs.

Wall clock, the garbage collector on. The machine is shared: read the medians over
rounds (``--rounds``), each cell its median and range.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def workload(name, objects, seed):
    if name == "town":
        import town_log
        state = town_log.town(objects, seed=seed)
        return state, lambda rng, fraction: town_log.change(state, fraction, rng)
    import delta_log
    state = delta_log.world(objects, seed=seed)
    return state, lambda rng, fraction: delta_log.change(state, fraction, rng)


def one_round(name, objects, fraction, checkpoints, flush_every, directory, seed,
              inline=False):
    import autosave
    if inline:            # every checkpoint made whole or delta on the game's thread
        from autosave.log import writer
        writer._Chooser.whole_after_big = lambda self: True
    autosave.allow("town_log")
    autosave.allow("delta_log")
    state, change = workload(name, objects, seed)
    rng = random.Random(seed)
    out = {}
    path = Path(directory) / f"flush-{name}-{objects}.log"
    # durable: step and flush at once
    path.unlink(missing_ok=True)
    dumps_t, steps, flushes = [], [], []
    with autosave.CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("play")
        for _ in range(checkpoints + 1):
            change(rng, fraction)
            started = time.perf_counter()
            autosave.dumps(state)
            dumps_t.append(time.perf_counter() - started)
            started = time.perf_counter()
            log.step(state)
            stepped = time.perf_counter()
            log.flush()
            flushed = time.perf_counter()
            steps.append(stepped - started)
            flushes.append(flushed - stepped)
    out["durable"] = {"dumps": statistics.median(dumps_t[1:]),
                      "step": statistics.median(steps[1:]),
                      "flush": statistics.median(flushes[1:]),
                      "step_flush": statistics.median(
                          s + f for s, f in zip(steps[1:], flushes[1:]))}
    # ticks: a step each tick, a flush every flush_every
    path.unlink(missing_ok=True)
    steps, flushes, ticks = [], [], []
    with autosave.CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("play")
        log.step(state)
        log.flush()
        for k in range(checkpoints * 2):
            started = time.perf_counter()
            change(rng, fraction)
            before_step = time.perf_counter()
            log.step(state)
            stepped = time.perf_counter()
            if k % flush_every == flush_every - 1:
                log.flush()
                flushes.append(time.perf_counter() - stepped)
            ticks.append(time.perf_counter() - started)
            steps.append(stepped - before_step)
        log.flush()
    out["ticks"] = {"step": statistics.median(steps), "flush": statistics.median(flushes),
                    "tick": statistics.median(ticks), "tick_mean": statistics.mean(ticks)}
    return out


def spread(values, scale=1e3, fmt="{:.1f}"):
    values = sorted(v * scale for v in values)
    median = fmt.format(statistics.median(values))
    return median if len(values) == 1 else \
        f"{median} ({fmt.format(values[0])}–{fmt.format(values[-1])})"


def table(results, args):
    out = [f"{args.workload}, {args.objects:,} objects, change {args.change:.0%}, "
           f"{args.checkpoints} checkpoints per round (durable) and "
           f"{args.checkpoints * 2} ticks with a flush every {args.flush_every} (ticks), "
           f"{args.rounds} rounds: median (range) of the rounds' medians, ms", "",
           "| build | dumps | durable: step | durable: flush | durable: step + flush "
           "| ticks: step | ticks: flush | ticks: tick (median) | ticks: tick (mean) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for build, rounds in results.items():
        d = [r["durable"] for r in rounds]
        t = [r["ticks"] for r in rounds]
        out.append(f"| {build} | {spread([x['dumps'] for x in d])} "
                   f"| {spread([x['step'] for x in d])} | {spread([x['flush'] for x in d])} "
                   f"| {spread([x['step_flush'] for x in d])} "
                   f"| {spread([x['step'] for x in t])} | {spread([x['flush'] for x in t])} "
                   f"| {spread([x['tick'] for x in t])} "
                   f"| {spread([x['tick_mean'] for x in t])} |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=("agents", "town"), default="agents")
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--change", type=float, default=1.0)
    parser.add_argument("--checkpoints", type=int, default=8)
    parser.add_argument("--flush-every", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--before", help="a Python whose autosave predates delta checkpoints")
    parser.add_argument("--inline", action="store_true",
                        help="also this build with every checkpoint made on the game's "
                             "thread (the placement before delta checkpoints, this engine)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    directory = args.dir or Path(tempfile.gettempdir())
    if args.one:
        print(json.dumps(one_round(args.workload, args.objects, args.change,
                                   args.checkpoints, args.flush_every, directory,
                                   args.seed, args.inline)))
        return
    builds = {"now": (sys.executable, [])}
    if args.inline:
        builds["now, made on the game's thread"] = (sys.executable, ["--inline"])
    if args.before:
        builds = {"before deltas": (args.before, []), **builds}
    results: dict = {build: [] for build in builds}
    common = ["--one", "--workload", args.workload, "--objects", str(args.objects),
              "--change", str(args.change), "--checkpoints", str(args.checkpoints),
              "--flush-every", str(args.flush_every), "--dir", str(directory)]
    for i in range(args.rounds):
        for build, (python, extra) in builds.items():   # alternating: load skews all alike
            done = subprocess.run([python, str(Path(__file__).resolve()), *common, *extra,
                                   "--seed", str(i + 1)], cwd=HERE, check=True,
                                  capture_output=True, text=True)
            results[build].append(json.loads(done.stdout))
            print(build, done.stdout.strip(), file=sys.stderr, flush=True)
    print(table(results, args))


if __name__ == "__main__":
    main()
