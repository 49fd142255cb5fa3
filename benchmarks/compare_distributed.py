"""autosave against each engine's default serializer, same run, as a Markdown table.

    python benchmarks/compare_distributed.py               # Dask and Ray, median of 5
    python benchmarks/compare_distributed.py --runs 3 --no-ray

Two states (benchmarks/distributed_states.py), each built as a plain class (what the
engine's default serializer takes: pickle protocol 5, with out-of-band buffers) and as
a @save_root class (what autosave.dask / autosave.ray take: autosave, with out-of-band
buffers): 10,000 objects, and 100 agents beside a 64 MiB float64 array.

* serialize / deserialize: distributed.protocol.serialize with the "pickle" family
  against the "autosave" family (what a Dask transfer runs on each side);
* worker to worker: a two-worker LocalCluster, the state made on one worker and read
  by a task pinned to the other (task overhead included, the same on both sides);
* Ray put / get: ray.put + ray.get against autosave.ray.put + autosave.ray.get (stored
  raw; and with share_arrays=True, the arrays in Ray's zero-copy form), on a local
  ray.init(num_cpus=2). Ray's own get of an array is a read-only view of the store;
  autosave's keeps a writeable array writeable, which costs a copy: the row "default,
  arrays made writeable" is Ray's get followed by that copy.

Ratios are autosave / default: above 1 means slower.

    python benchmarks/compare_distributed.py --instructions   # callgrind, ~2 min

counts instead the instructions of one Dask serialize and deserialize on each side,
and of autosave.dumps / loads and pickle.dumps / loads alone (the same buffers given):
unlike wall time on a shared machine, they repeat between runs, and tell the family's
own cost from the engine's. Needs valgrind.
"""

import argparse
import functools
import gc
import operator
import os
import pickle
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from distributed_states import build, touch           # noqa: E402

KINDS = ("objects", "array", "array, read-only")


def timed(fn):
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def rows_serialize(runs):
    import autosave.dask
    from distributed.protocol import deserialize, serialize

    autosave.dask.install()
    rows = []
    for kind in KINDS:
        plain, saved = build(kind, False), build(kind, True)
        sides = {"default (pickle family)": (plain, ["pickle"]),
                 "autosave family": (saved, [autosave.dask.FAMILY])}
        made = {}
        for name, (state, families) in sides.items():
            header, frames = serialize(state, serializers=families, on_error="raise")
            made[name] = header, frames, sum(memoryview(f).nbytes for f in frames)
        times = {name: ([], []) for name in sides}
        for _ in range(runs):                      # the sides alternate
            for name, (state, families) in sides.items():
                header, frames, _ = made[name]
                dumped, loaded = times[name]
                dumped.append(timed(functools.partial(serialize, state, serializers=families,
                                                      on_error="raise")))
                loaded.append(timed(functools.partial(deserialize, header, frames)))
        found = {name: (statistics.median(times[name][0]), statistics.median(times[name][1]),
                        made[name][2]) for name in sides}
        rows.append((kind, found))
    return rows


def rows_transfer(runs):
    import autosave.dask
    from distributed import Client, LocalCluster

    autosave.dask.install()
    out = []
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      preload=[autosave.dask.preload(["distributed_states"])]) as cluster, \
            Client(cluster) as client:
        a, b = list(client.scheduler_info()["workers"])
        for kind in KINDS:
            sides = {"default (pickle family)": False, "autosave family": True}
            times = {name: [] for name in sides}

            def made(claimed, kind=kind):
                future = client.submit(build, kind, claimed, workers=[a], pure=False)
                future.result()                    # built, and no copy of it here yet
                return future

            def moved(future):
                client.submit(touch, future, workers=[b], pure=False).result()

            for claimed in sides.values():
                moved(made(claimed))               # warm both workers
            for _ in range(runs):                  # the sides alternate
                for name, claimed in sides.items():
                    future = made(claimed)
                    gc.collect()
                    start = time.perf_counter()
                    moved(future)
                    times[name].append(time.perf_counter() - start)
                    del future
            found = {name: (statistics.median(t),) for name, t in times.items()}
            out.append((kind, found))
    return out


def rows_ray(runs):
    import ray
    import autosave.ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook":
                          autosave.ray.setup_hook(["distributed_states"]),
                          "env_vars": {"PYTHONPATH": HERE}})
    try:
        out = []
        for kind in KINDS:
            plain, saved = build(kind, False), build(kind, True)
            sides = {"default (ray.put/get)": (plain, ray.put, ray.get),
                     "default, arrays made writeable": (plain, ray.put, functools.partial(
                         writeable_get, ray, kind == "array")),
                     "autosave.ray.put/get": (saved, autosave.ray.put, autosave.ray.get),
                     "share_arrays=True": (saved, functools.partial(
                         autosave.ray.put, share_arrays=True), autosave.ray.get)}
            refs = {}
            for name, (state, put, get) in sides.items():
                get(put(state))                    # warm
                refs[name] = put(state)
            times = {name: ([], []) for name in sides}
            for _ in range(runs):                  # the sides alternate
                for name, (state, put, get) in sides.items():
                    times[name][0].append(timed(functools.partial(put, state)))
                    times[name][1].append(timed(functools.partial(get, refs[name])))
            found = {name: tuple(map(statistics.median, times[name])) for name in sides}
            out.append((kind, found))
        return out
    finally:
        ray.shutdown()


def writeable_get(ray, writeable, ref):
    """Ray's get, then what a writeable array needs on top of it: Ray's arrays are
    read-only views of the store, so a state whose array was writeable gets a copy (as
    autosave.ray.get makes). The baseline for autosave's get of the writeable state."""
    world = ray.get(ref)
    if writeable and not world.field.flags.writeable:
        world.field = world.field.copy()
    return world


# -- instructions (callgrind) ----------------------------------------------------------

TOGGLE = "_operator_call"          # the C function behind operator.call: collection on
COUNTED = ("serialize", "deserialize", "dumps", "loads")


def instruction_calls(kind):
    """{(op, side): call} for one state: Dask's serialize / deserialize with each family,
    and each serializer alone, out-of-band buffers on both sides."""
    import autosave.dask
    from distributed.protocol import deserialize, serialize

    autosave.dask.install()
    plain, saved = build(kind, False), build(kind, True)
    calls = {}
    for side, state, families in (("default", plain, ["pickle"]),
                                  ("autosave", saved, [autosave.dask.FAMILY])):
        header, frames = serialize(state, serializers=families, on_error="raise")
        calls["serialize", side] = functools.partial(serialize, state, serializers=families,
                                                     on_error="raise")
        calls["deserialize", side] = functools.partial(deserialize, header, frames)
    p_buffers = []
    pickled = pickle.dumps(plain, protocol=5, buffer_callback=p_buffers.append)
    a_buffers = []
    data = autosave.dumps(saved, buffer_callback=a_buffers.append)
    calls["dumps", "default"] = lambda: pickle.dumps(plain, protocol=5,
                                                     buffer_callback=[].append)
    calls["dumps", "autosave"] = lambda: autosave.dumps(saved, buffer_callback=[].append)
    calls["loads", "default"] = lambda: pickle.loads(pickled, buffers=p_buffers)
    calls["loads", "autosave"] = lambda: autosave.loads(data, buffers=a_buffers)
    return calls


def instruction_child(kind):
    """Run under callgrind: each call twice untimed, then once inside operator.call."""
    calls = instruction_calls(kind)
    for call in calls.values():
        call()
        call()
    for op in COUNTED:                      # the order rows_instructions reads them in
        for side in ("default", "autosave"):
            gc.collect()
            operator.call(calls[op, side])


def rows_instructions():
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for i, kind in enumerate(KINDS):
            out = Path(workdir) / f"{i}.out"
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                 f"--toggle-collect={TOGGLE}", f"--dump-after={TOGGLE}",
                 f"--callgrind-out-file={out}", sys.executable, __file__,
                 "--instruction-child", kind],
                capture_output=True, text=True, env={"PYTHONHASHSEED": "0", **os.environ})
            if done.returncode:
                sys.exit(f"{kind}: the run under callgrind failed:\n{done.stderr[-2000:]}")
            dumps = sorted(Path(workdir).glob(f"{out.name}.*"), key=lambda p: int(p.suffix[1:]))
            totals = [int(re.search(r"^summary: (\d+)", p.read_text(), re.M).group(1))
                      for p in dumps]
            counted = dict(zip([(op, side) for op in COUNTED
                                for side in ("default", "autosave")], totals))
            if len(totals) != 2 * len(COUNTED):
                sys.exit(f"{kind}: expected {2 * len(COUNTED)} profiles, got {len(totals)}")
            found = {side: tuple(counted[op, side] for op in COUNTED)
                     for side in ("default", "autosave")}
            rows.append((kind, found))
    return rows


def table(title, columns, rows):
    """One line per state and side; each autosave side with its ratio to the default
    (the first side)."""
    print(f"\n### {title}\n")
    head = ["state", "serializer", *columns, *(f"ratio {c}" for c in columns)]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for kind, found in rows:
        sides = list(found)
        default = found[sides[0]]
        for side in sides:
            values = found[side]
            ratios = (["-"] * len(columns) if side == sides[0] else
                      [f"{o / d:.2f}x" if d else "-" for d, o in zip(default, values)])
            print("| " + " | ".join([kind, side, *(_fmt(c, v) for c, v in
                                                   zip(columns, values)), *ratios]) + " |")


def _fmt(column, value):
    if type(value) is int:
        return f"{value / 1e6:.2f} M"
    return f"{value / 1e6:.2f} MB" if column == "bytes" else f"{value * 1e3:.2f} ms"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    parser.add_argument("--instruction-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.instruction_child:
        return instruction_child(args.instruction_child)
    if args.instructions:
        print(f"Python {platform.python_version()}; instructions of one call (callgrind), "
              f"millions; default = pickle protocol 5 (Dask's pickle family); ratios "
              f"autosave / default.")
        table("Dask serialize / deserialize, and each serializer alone",
              COUNTED, rows_instructions())
        return
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} "
          f"CPUs; median of {args.runs} runs; ratios autosave / default.")
    if not args.no_dask:
        table("Dask: serialize and deserialize, in one process",
              ("serialize", "deserialize", "bytes"), rows_serialize(args.runs))
        table("Dask: worker to worker (LocalCluster, 2 workers)", ("transfer",),
              rows_transfer(args.runs))
    if not args.no_ray:
        table("Ray: put and get (local, num_cpus=2)", ("put", "get"), rows_ray(args.runs))


if __name__ == "__main__":
    main()
