"""@autosave.coroutine against native generators, as a Markdown table.

    python benchmarks/compare_coroutines.py            # median of 7 runs, ~20 s
    python benchmarks/compare_coroutines.py --runs 3

1. One resumed step (``next(g)`` on a suspended generator), three workloads from
   coroutine_game.py: a guard's patrol (a method call and arithmetic per step, the
   typical game coroutine), the same driven by ``send(None)`` (SimPy's way), and a
   counter that only adds 1 (the machinery alone). Target: at most 3x native.
2. Saving and loading 10,000 suspended patrols (each guard holds its coroutine: a
   cycle), absolute and per coroutine, beside the same NPCs written by hand as a state
   machine (``shapemodel.gen.state_machines``: a guard and a plain object holding its
   waypoint, looks and laps), saved and loaded by autosave in the same run; the ratio
   is the coroutines' over the state machine's (issue 35's bound: load within 2x).
   pickle cannot save a suspended generator at all.
3. The same 10,000 patrols against plain objects of the same size
   (``shapemodel.gen.frames_as_objects``: each suspended coroutine replaced by a plain
   object holding its function, its label and its saved locals, the same references
   and iterators): what a coroutine costs per object against a plain object holding
   the same values (issue 34: at the per-object cost of plain objects).

Timing: one warm-up round, then the median of --runs runs, the garbage collector off
while timing, native and transformed alternating so background load skews both alike;
a ratio is the median over runs of transformed / native measured in the same run.
"""

import argparse
import gc
import pickle
import platform
import statistics
import sys
import time

import autosave
import coroutine_game as cg
from shapemodel.gen import frames_as_objects, state_machines

STEPS = 20_000
TARGET = 3.0


def time_steps(gen, send):
    step = gen.send if send else gen.__next__
    arg = (None,) if send else ()
    start = time.perf_counter()
    for _ in range(STEPS):
        step(*arg)
    return (time.perf_counter() - start) / STEPS


def step_pair(make_native, make_coroutine, send):
    native, coro = make_native(), make_coroutine()
    next(native), next(coro)
    return time_steps(native, send), time_steps(coro, send)


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    workloads = [
        ("patrol step, next()", lambda: cg.patrol_native(cg.Guard("n"), cg.WAYPOINTS),
         lambda: cg.patrol(cg.Guard("c"), cg.WAYPOINTS), False),
        ("patrol step, send(None)", lambda: cg.patrol_native(cg.Guard("n"), cg.WAYPOINTS),
         lambda: cg.patrol(cg.Guard("c"), cg.WAYPOINTS), True),
        ("counter step (machinery only), next()", lambda: cg.counter_native(0),
         lambda: cg.counter(0), False),
    ]
    guards = cg.guards(10_000)
    data = autosave.dumps(guards)
    assert autosave.dumps(autosave.loads(data)) == data
    machines = state_machines(10_000)
    machine_data = autosave.dumps(machines)
    frames, _ = frames_as_objects(20_000)
    frame_data = autosave.dumps(frames)
    try:
        pickle.dumps(cg.guards(1, cg.patrol_native))
        pickle_note = "pickle saved it?!"
    except TypeError as e:
        pickle_note = f"pickle: {e}"

    gc.collect()
    gc.disable()
    results = {name: [] for name, *_ in workloads}
    save_times, load_times, machine_save, machine_load = [], [], [], []
    frame_save, frame_load = [], []
    try:
        for run in range(args.runs + 1):
            for name, mk_native, mk_coro, send in workloads:
                n, c = step_pair(mk_native, mk_coro, send)
                if run:
                    results[name].append((n, c))
            t_save, data = timed(autosave.dumps, guards)
            t_load, _ = timed(autosave.loads, data)
            m_save, _ = timed(autosave.dumps, machines)
            m_load, _ = timed(autosave.loads, machine_data)
            f_save, _ = timed(autosave.dumps, frames)
            f_load, _ = timed(autosave.loads, frame_data)
            if run:
                frame_save.append(f_save)
                frame_load.append(f_load)
                save_times.append(t_save)
                load_times.append(t_load)
                machine_save.append(m_save)
                machine_load.append(m_load)
            gc.enable()
            gc.collect()
            gc.disable()
    finally:
        gc.enable()

    print("| measure | native generator (save, load: the state machine) | @autosave.coroutine "
          "| ratio | target | met? |")
    print("|---|---:|---:|---:|---|---|")
    for name, pairs in results.items():
        native = statistics.median(n for n, _ in pairs) * 1e9
        coro = statistics.median(c for _, c in pairs) * 1e9
        ratio = statistics.median(c / n for n, c in pairs)
        target = TARGET if not name.startswith("counter") else None
        met = "—" if target is None else ("yes" if ratio <= target else "no")
        print(f"| {name} | {native:.0f} ns | {coro:.0f} ns | {ratio:.2f}x | "
              f"{'≤ 3x' if target else 'informative'} | {met} |")
    save = statistics.median(save_times)
    load = statistics.median(load_times)
    m_save, m_load = statistics.median(machine_save), statistics.median(machine_load)
    save_ratio = statistics.median(c / m for c, m in zip(save_times, machine_save))
    load_ratio = statistics.median(c / m for c, m in zip(load_times, machine_load))
    print(f"| save 10,000 suspended patrols (autosave.dumps), against the same NPCs as a "
          f"state machine | {m_save * 1e3:.1f} ms | {save * 1e3:.1f} ms "
          f"({save / 10_000 * 1e6:.1f} µs each) | {save_ratio:.2f}x | informative | — |")
    print(f"| load them (autosave.loads), against the state machine's load | "
          f"{m_load * 1e3:.1f} ms | {load * 1e3:.1f} ms ({load / 10_000 * 1e6:.1f} µs each) "
          f"| {load_ratio:.2f}x | ≤ 2x | {'yes' if load_ratio <= 2 else 'no'} |")
    f_save_ratio = statistics.median(c / f for c, f in zip(save_times, frame_save))
    f_load_ratio = statistics.median(c / f for c, f in zip(load_times, frame_load))
    print(f"| save them, against plain objects holding the same values | "
          f"{statistics.median(frame_save) * 1e3:.1f} ms | {save * 1e3:.1f} ms | "
          f"{f_save_ratio:.2f}x | informative | — |")
    print(f"| load them, against plain objects holding the same values | "
          f"{statistics.median(frame_load) * 1e3:.1f} ms | {load * 1e3:.1f} ms | "
          f"{f_load_ratio:.2f}x | about 1x | {'yes' if f_load_ratio <= 1.1 else 'no'} |")
    print(f"| bytes | {len(frame_data):,} as plain objects | {len(data):,} ({len(data) / 10_000:.0f} per guard + patrol) | — "
          f"| — | — |")
    print()
    print(f"*{pickle_note}. autosave {autosave.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}, median of {args.runs}, "
          f"{STEPS:,} steps per measure, gc off while timing.*")


if __name__ == "__main__":
    sys.exit(main())
