"""Instructions per save and load, autosave next to pickle, counted by callgrind.

    python benchmarks/instructions.py                          # level 5k, world 20k: ~1 min
    python benchmarks/instructions.py world --sizes 10000,100000,1000000    # ~20 min
    AUTOSAVE_PUREPYTHON=1 python benchmarks/instructions.py    # the engine's loops in Python
    python benchmarks/instructions.py json-like value-keys    # shapes.py's workloads, 10k

Wall time on a shared machine moves ±20% between runs; the instructions one call runs
do not, whatever else the machine is doing: with the same binary, graph and hash seed
(0 unless PYTHONHASHSEED says otherwise) they repeat to about 0.1%, what is left being
the objects' addresses, which the memos hash. This is the figure to compare commits
with, and the one that tells whether a cost is linear: instructions per object that
stay flat from 10k to 1M objects mean the walk does the same work for every object, and
what wall time adds on top as a graph grows is the memory hierarchy (scaling.py shows
it, for pickle too).

Each graph and size is built in its own process run under ``valgrind --tool=callgrind``
with collection off. Every operation (autosave save and load, as installed: generated
code, the engine's loops in C where autosave._speedups was built; pickle protocol 5) is
run once untimed, then once more inside ``functools.reduce``, whose C function toggles
collection on and dumps a profile as it returns: each dump holds exactly one call.
Needs valgrind (Debian's package); the graphs are graphs.py's.
"""

import argparse
import gc
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from functools import reduce
from pathlib import Path

GRAPHS = {"level": 5_000, "world": 20_000}
SHAPE_SIZE = 10_000                # the workloads of shapes.py (shapemodel.gen), by name
OPS = ("autosave save", "pickle save", "autosave load", "pickle load")
TOGGLE = "functools_reduce"       # the C function behind functools.reduce


def child(graph, size):
    """Run under callgrind: build the graph, then each of OPS once inside reduce()."""
    import autosave
    from graphs import allow_deep_recursion, count_objects, deep_call, level_graph, world_graph

    allow_deep_recursion()

    def run():
        if graph in GRAPHS:
            root = p_root = (level_graph if graph == "level" else world_graph)(size)
        else:                              # a shape of shapes.py: pickle's own state
            from shapemodel.gen import WORKLOADS
            root, p_root = WORKLOADS[graph](size)
        a_bytes, p_bytes = autosave.dumps(root), pickle.dumps(p_root, protocol=5)
        calls = [lambda: autosave.dumps(root), lambda: pickle.dumps(p_root, protocol=5),
                 lambda: autosave.loads(a_bytes), lambda: pickle.loads(p_bytes)]
        for call in calls:                 # warm: codegen's module, plans, caches
            call()
        gc.collect()
        gc.disable()
        for call in calls:
            reduce(lambda _, __: call(), (0, 0))
        return count_objects(root)

    print(deep_call(run))


def count(graph, size, workdir):
    """{op: instructions} for one graph built at ``size``, and its object count."""
    out = Path(workdir) / f"{graph}-{size}.out"
    # str and bytes hashes are seeded per process, and dicts and sets probe differently
    # under each seed: a fixed one makes the counts repeat (a seed given wins)
    env = {"PYTHONHASHSEED": "0", **os.environ}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no",
         f"--toggle-collect={TOGGLE}", f"--dump-after={TOGGLE}",
         f"--callgrind-out-file={out}", sys.executable, __file__, "--child", graph,
         str(size)],
        capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"{graph}-{size}: the run under callgrind failed:\n{done.stderr[-2000:]}")
    dumps = sorted(Path(workdir).glob(f"{out.name}.*"), key=lambda p: int(p.suffix[1:]))
    totals = [int(re.search(r"^summary: (\d+)", p.read_text(), re.M).group(1)) for p in dumps]
    if len(totals) != len(OPS) or not all(totals):
        sys.exit(f"{graph}-{size}: expected {len(OPS)} profiles with instructions, got "
                 f"{totals} (is {TOGGLE} in this Python's symbols?)")
    return dict(zip(OPS, totals)), int(done.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="*", metavar="GRAPH",
                        help="level, world, or a workload of shapes.py (default: level, world)")
    parser.add_argument("--sizes", help="comma-separated object counts for every graph "
                        "(default: level 5000, world 20000)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]))
    from shapemodel.gen import WORKLOADS
    unknown = set(args.graphs) - set(GRAPHS) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown graph(s) {', '.join(sorted(unknown))}: choose from "
                     f"{', '.join([*GRAPHS, *WORKLOADS])}")
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    import autosave.format.kernels
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    print(f"autosave {_version()}, Python {sys.version.split()[0]}, the engine's loops: "
          f"{autosave.format.kernels.IMPLEMENTATION}; instructions of one call (callgrind), "
          f"millions, and per object; ratio = autosave / pickle protocol 5\n")
    print("| graph | objects | op | pickle M | autosave M | ratio | pickle per object "
          "| autosave per object |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    per_object = {}
    with tempfile.TemporaryDirectory() as workdir:
        for graph in args.graphs or list(GRAPHS):
            for size in sizes or [GRAPHS.get(graph, SHAPE_SIZE)]:
                counts, objects = count(graph, size, workdir)
                for op in ("save", "load"):
                    a, p = counts[f"autosave {op}"], counts[f"pickle {op}"]
                    per_object[graph, size, op] = (p / objects, a / objects)
                    print(f"| {graph} | {objects:,} | {op} | {p / 1e6:.1f} | {a / 1e6:.1f} "
                          f"| {a / p:.2f}x | {p / objects:,.0f} | {a / objects:,.0f} |",
                          flush=True)
    if sizes and len(sizes) > 1:
        print(f"\n| per-object instructions, {max(sizes):,} / {min(sizes):,} | pickle "
              f"| autosave |\n|---|---:|---:|")
        for graph in args.graphs or list(GRAPHS):
            for op in ("save", "load"):
                (p0, a0), (p1, a1) = (per_object[graph, s, op] for s in (min(sizes), max(sizes)))
                print(f"| {graph} {op} | {p1 / p0:.2f}x | {a1 / a0:.2f}x |")


def _version():
    from importlib.metadata import version
    return version("autosave")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
