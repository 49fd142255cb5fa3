"""Delta checkpoints in the log against whole ones, as a Markdown table.

    python benchmarks/delta_log.py --dir /dev/shm              # 10k and 100k objects
    python benchmarks/delta_log.py --huge                       # and 1M objects (minutes)
    python benchmarks/delta_log.py --objects 100000 --changes 0.01

An agent simulation: agents of three objects each (the agent, its inventory list and its
memory dict; a reference to another agent makes shared references and cycles). Between
checkpoints a fraction of the agents changes (position, health, energy, an inventory
slot). The log steps with ``checkpoint_every=1`` and flushes after every step, for one
whole chain (a whole checkpoint, then ``full_every`` deltas). Reported, per size and
change:

* **growth**: the file's growth per delta checkpoint (payload, framing and metadata),
  against ``autosave.dumps`` of the changed agents' fields alone (``alone``: what
  changed, encoded) -- target at 1% on 100k objects: at most 4x alone + a few KiB;
* **step**: ``log.step()`` on the game's thread (median), against ``autosave.dumps`` of
  the state (target: at most 1.0x; the ratio is the median of each round's, the dumps
  timed just before the step) and against what a step cost before deltas (dumps + zlib
  on the game's thread);
* **flush**: ``log.flush()`` after the step (it waits for the writer thread, which
  encodes and compresses the checkpoint), and **step + flush**, what the two cost
  together when a game flushes at once;
* **restore**: restoring the chain's last checkpoint (the longest chain) in a log opened
  anew, against ``autosave.loads`` of the same bytes (target at most 1.5x), medians of
  5 runs alternating; the restored bytes are checked equal to the dumps taken then;
  and **held**: the writer restoring the checkpoint it wrote last, whose save it holds
  (nothing rebuilt), against a ``loads`` timed just after.

Timing: wall clock, the garbage collector on (a game's), medians over the chain; each
size and change is run ``--rounds`` times (default 3), and the table gives the median
of the rounds and, for the ratios and the flush, their range.
"""

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path

import attrs

import autosave
from autosave.format import kernels

autosave.allow(__name__)


@attrs.define(eq=False)
class Agent:
    id: int
    x: float
    y: float
    hp: int
    energy: float
    name: str
    target: "Agent | None"
    inventory: list
    memory: dict


def world(objects, seed=1):
    rng = random.Random(seed)
    agents = [Agent(i, rng.random() * 1000, rng.random() * 1000, 100, 1.0, f"agent{i}",
                    None, [rng.randrange(50) for _ in range(4)],
                    {"seen": rng.randrange(1000), "mood": "calm"})
              for i in range(objects // 3)]
    for agent in agents:
        agent.target = rng.choice(agents)
    return {"agents": agents, "tick": 0}


def change(state, fraction, rng):
    agents = state["agents"]
    changed = rng.sample(agents, max(1, int(len(agents) * fraction)))
    for agent in changed:
        agent.x += rng.random() - 0.5
        agent.y += rng.random() - 0.5
        agent.hp -= 1
        agent.energy *= 0.99
        agent.inventory[rng.randrange(4)] = rng.randrange(50)
    state["tick"] += 1
    return changed


RUNS = 5


def timed(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def run(directory, objects, fraction, full_every):
    # here, not at the top: flush_log.py imports the workload into older builds
    from autosave.log.chain import is_delta, read_checkpoint

    rng = random.Random(7)
    state = world(objects)
    path = Path(directory) / f"delta-{objects}-{fraction}.log"
    path.unlink(missing_ok=True)
    steps, flushes, growth, alone, dumps_t, whole_t, saved = [], [], [], [], [], [], {}
    ratios = []
    with autosave.CheckpointLog.open(path, checkpoint_every=1, full_every=full_every) as log:
        log.enter("sim")
        for k in range(full_every + 1):
            changed = change(state, fraction, rng) if k else []
            # the baseline first, in the same round: a busy machine skews both alike
            took, data = timed(autosave.dumps, state)
            dumps_t.append(took)
            whole_t.append(took + timed(zlib.compress, data, 1)[0])
            before = log.file.end
            took, position = timed(log.step, state)
            steps.append(took)
            ratios.append(took / dumps_t[-1])
            took, _ = timed(log.flush)
            flushes.append(took)
            if k:
                growth.append(log.file.end - before)
                alone.append(len(autosave.dumps([(a.x, a.y, a.hp, a.energy, a.inventory)
                                                 for a in changed])))
            saved[position.step] = data
        payloads = [log.file.read(log.records[0].checkpoints[s])[1]
                    for s in range(full_every + 1)]
        # the writer restoring what it wrote last: held, nothing rebuilt
        gc.collect()
        held, restored = timed(log.restore, autosave.Position("sim", full_every, 0))
        del restored
        gc.collect()
        held_loads, restored = timed(autosave.loads, saved[full_every])
        del restored
    last = full_every
    restores, loads, restore_ratios = [], [], []
    for _ in range(RUNS):                 # alternating, so that a busy machine skews both
        with autosave.CheckpointLog.open(path, writable=False) as log:
            offset = log.records[0].checkpoints[last]
            took, restored = timed(log.restore, autosave.Position("sim", last, 0))
            restores.append(took)
            assert read_checkpoint(log.file, offset) == saved[last]
        assert autosave.dumps(restored) == saved[last]
        del restored
        gc.collect()
        took, restored = timed(autosave.loads, saved[last])
        loads.append(took)
        restore_ratios.append(restores[-1] / took)
        del restored
        gc.collect()
    restore_t, loads_t = statistics.median(restores), statistics.median(loads)
    return {
        "objects": objects, "change": fraction, "deltas": sum(map(is_delta, payloads[1:])),
        "whole_bytes": len(payloads[0]), "growth": statistics.mean(growth),
        "alone": statistics.mean(alone), "step": statistics.median(steps[1:]),
        "step_ratio": statistics.median(ratios[1:]),
        "dumps": statistics.median(dumps_t), "whole": statistics.median(whole_t),
        "flush": statistics.median(flushes[1:]), "restore": restore_t, "loads": loads_t,
        "step_flush": statistics.median(map(sum, zip(steps[1:], flushes[1:]))),
        "restore_ratio": statistics.median(restore_ratios),
        "held_ratio": held / held_loads,
        "state_bytes": len(saved[last]),
    }


def spread(values, fmt):
    """The median of the rounds' values, then their range."""
    values = sorted(values)
    median = statistics.median(values)
    if len(values) == 1:
        return fmt.format(median)
    return f"{fmt.format(median)} ({fmt.format(values[0])}–{fmt.format(values[-1])})"


def merged(rounds):
    """One row of several rounds of run(): each figure the median of the rounds'."""
    row = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    row["rounds"] = rounds
    return row


def table(rows):
    out = ["| objects | change | deltas | growth / checkpoint | alone | growth / alone "
           "| step ms | dumps ms | step / dumps | before: dumps+zlib ms | flush ms "
           "| step + flush ms | restore ms | loads ms | restore / loads | held / loads |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rounds = r.get("rounds", [r])
        out.append(
            f"| {r['objects']:,} | {r['change']:.0%} | {r['deltas']:.0f} "
            f"| {r['growth']:,.0f} B | {r['alone']:,.0f} B | {r['growth'] / r['alone']:.2f}x "
            f"| {r['step'] * 1e3:.1f} | {r['dumps'] * 1e3:.1f} "
            f"| {spread([x['step_ratio'] for x in rounds], '{:.2f}x')} "
            f"| {r['whole'] * 1e3:.1f} "
            f"| {spread([x['flush'] * 1e3 for x in rounds], '{:.1f}')} "
            f"| {spread([x['step_flush'] * 1e3 for x in rounds], '{:.1f}')} "
            f"| {r['restore'] * 1e3:.1f} "
            f"| {r['loads'] * 1e3:.1f} "
            f"| {spread([x['restore_ratio'] for x in rounds], '{:.2f}x')} "
            f"| {spread([x['held_ratio'] for x in rounds], '{:.2f}x')} |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--changes", type=float, nargs="*", default=[0.01, 0.1, 1.0])
    parser.add_argument("--huge", action="store_true", help="also 1,000,000 objects")
    parser.add_argument("--full-every", type=int, default=16)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each size and change; the table shows their "
                             "median and range")
    args = parser.parse_args(argv)
    sizes = args.objects + ([1_000_000] if args.huge else [])
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for objects in sizes:
            for fraction in args.changes:
                rounds = []
                for _ in range(args.rounds):
                    rounds.append(run(tmp, objects, fraction, args.full_every))
                    print(table(rounds[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
                rows.append(merged(rounds))
    print(f"Python {sys.version.split()[0]}, full_every={args.full_every}, "
          f"{args.rounds} rounds (median, range), "
          f"{kernels.IMPLEMENTATION} loops\n")
    print(table(rows))


if __name__ == "__main__":
    main()
