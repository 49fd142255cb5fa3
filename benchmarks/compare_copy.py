"""autosave.copy next to dumps+loads and copy.deepcopy, as a Markdown table.

    python benchmarks/compare_copy.py              # both graphs, median of 5 runs
    python benchmarks/compare_copy.py --runs 3 level-15k

copy() walks the graph as a save does and hands the records straight to the loader,
with every check of a load, skipping the bytes (encoding, checksum, decoding) that
dumps+loads goes through. Runs alternate between the sides, gc off while timing,
generated code on. Ratios above 1 mean slower.
"""

import argparse
import copy as copy_module
import gc
import platform
import statistics
import sys
import time

import autosave
from autosave.model.generated import GENERATED
from graphs import GRAPHS, allow_deep_recursion, count_objects, deep_call, same_graph


def timed(fn, arg):
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn(arg)
        return time.perf_counter() - start
    finally:
        gc.enable()


def run(names, runs):
    GENERATED.activate()
    sides = {"copy": autosave.copy,
             "dumps+loads": lambda g: autosave.loads(autosave.dumps(g)),
             "deepcopy": copy_module.deepcopy}
    rows = []
    for name in names:
        graph = GRAPHS[name]()
        same_graph(graph, autosave.copy(graph))      # raises: nothing broken is timed
        times = {side: [] for side in sides}
        for i in range(runs + 1):
            for side, fn in sides.items():
                t = timed(fn, graph)
                if i:
                    times[side].append(t)
        ms = {side: statistics.median(ts) * 1000 for side, ts in times.items()}
        rows.append((name, count_objects(graph), ms))
    return rows


def table(rows):
    out = ["| graph | objects | copy ms | dumps+loads ms | deepcopy ms | copy / deepcopy "
           "| dumps+loads / deepcopy | copy / dumps+loads |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, objects, ms in rows:
        out.append(f"| {name} | {objects:,} | {ms['copy']:.1f} | {ms['dumps+loads']:.1f} | "
                   f"{ms['deepcopy']:.1f} | {ms['copy'] / ms['deepcopy']:.2f}x | "
                   f"{ms['dumps+loads'] / ms['deepcopy']:.2f}x | "
                   f"{ms['copy'] / ms['dumps+loads']:.2f}x |")
    out.append(f"\n*autosave {autosave.__version__}, Python {platform.python_version()}, "
               f"median of the runs, gc off while timing.*")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="*", help=f"of {', '.join(GRAPHS)} "
                        f"(default: level-15k world-100k)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    args.graphs = args.graphs or ["level-15k", "world-100k"]
    for name in args.graphs:
        if name not in GRAPHS:
            parser.error(f"no graph {name!r}; the graphs are {', '.join(GRAPHS)}")
    allow_deep_recursion()
    print(deep_call(lambda: table(run(args.graphs, args.runs))))


if __name__ == "__main__":
    sys.exit(main())
