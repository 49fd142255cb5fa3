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
  autosave's keeps a writeable array writeable, which costs a copy.

Ratios are autosave / default: above 1 means slower.
"""

import argparse
import functools
import gc
import os
import platform
import statistics
import sys
import time

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
    return f"{value / 1e6:.2f} MB" if column == "bytes" else f"{value * 1e3:.2f} ms"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args(argv)
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
