"""autosave next to pickle (protocol 5), as a Markdown table.

    python benchmarks/compare.py               # both graphs, median of 7 runs, ~30 s
    python benchmarks/compare.py --runs 3 level-15k

For each graph in graphs.py: build it, check that autosave (reflective and generated
code, which must write the same bytes) and pickle all give back the same graph (so
nothing broken is ever timed), then time save (dumps) and load (loads) in memory: one warm-up round, then the median of --runs runs, each with the
garbage collector off (collected between runs, untimed: a save or load of autosave leaves
no reference cycles, so nothing of its cost is left to that collection). autosave and pickle runs
alternate, so background load on a busy machine skews both sides alike. Everything
runs on a big-stack thread because pickle recurses once per level of nesting.
Ratios are autosave / pickle: above 1 means autosave is slower or bigger.
"reflective" is autosave with AUTOSAVE_CODEGEN=0; "generated" uses the code
autosave-codegen wrote for examples/game and benchmarks/worldsim.
"""

import argparse
import gc
import os
import pickle
import platform
import statistics
import sys
import time

import autosave
from graphs import GRAPHS, allow_deep_recursion, count_objects, deep_call, same_graph


def median_ms(sides, runs):
    """Median wall times in ms of each side, (fn, arg, AUTOSAVE_CODEGEN value or None),
    gc off while timing.

    The runs alternate between the sides so that background load on a busy machine
    slows them alike and their ratios stay meaningful. One warm-up round comes first.
    """
    times = [[] for _ in sides]
    for i in range(runs + 1):
        for side, (fn, arg, codegen) in enumerate(sides):
            with codegen_switch(codegen):
                result = None
                gc.collect()
                gc.disable()
                try:
                    started = time.perf_counter()
                    result = fn(arg)
                    elapsed = time.perf_counter() - started
                finally:
                    gc.enable()
                del result
            if i:
                times[side].append(elapsed)
    return [statistics.median(t) * 1000 for t in times]


class codegen_switch:
    """AUTOSAVE_CODEGEN set to ``value`` inside the block (None: left alone)."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.old = os.environ.get("AUTOSAVE_CODEGEN")
        if self.value is not None:
            os.environ["AUTOSAVE_CODEGEN"] = self.value

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("AUTOSAVE_CODEGEN", None)
        else:
            os.environ["AUTOSAVE_CODEGEN"] = self.old


def measure(name, runs):
    root = GRAPHS[name]()
    objects = count_objects(root)
    with codegen_switch("0"):
        reflective_bytes = autosave.dumps(root)
    a_bytes = autosave.dumps(root)
    if a_bytes != reflective_bytes:
        raise AssertionError(f"{name}: generated and reflective saves differ")
    p_bytes = pickle.dumps(root, protocol=5)
    same_graph(root, autosave.loads(a_bytes))
    with codegen_switch("0"):
        same_graph(root, autosave.loads(a_bytes))
    same_graph(root, pickle.loads(p_bytes))
    p_save, r_save, g_save = median_ms([(lambda r: pickle.dumps(r, protocol=5), root, None),
                                        (autosave.dumps, root, "0"),
                                        (autosave.dumps, root, "1")], runs)
    p_load, r_load, g_load = median_ms([(pickle.loads, p_bytes, None),
                                        (autosave.loads, a_bytes, "0"),
                                        (autosave.loads, a_bytes, "1")], runs)
    return {
        "graph": name, "objects": objects,
        "p_save": p_save, "r_save": r_save, "g_save": g_save,
        "p_load": p_load, "r_load": r_load, "g_load": g_load,
        "a_bytes": len(a_bytes), "p_bytes": len(p_bytes),
    }


def table(rows):
    head = ["graph", "objects", "pickle save ms", "reflective save ms", "ratio",
            "generated save ms", "ratio", "pickle load ms", "reflective load ms", "ratio",
            "generated load ms", "ratio", "autosave bytes", "pickle bytes", "size ratio"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        cells = [r["graph"], f"{r['objects']:,}", f"{r['p_save']:.1f}"]
        for key in ("r_save", "g_save"):
            cells += [f"{r[key]:.1f}", f"{r[key] / r['p_save']:.2f}x"]
        cells.append(f"{r['p_load']:.1f}")
        for key in ("r_load", "g_load"):
            cells += [f"{r[key]:.1f}", f"{r[key] / r['p_load']:.2f}x"]
        cells += [f"{r['a_bytes']:,}", f"{r['p_bytes']:,}", f"{r['a_bytes'] / r['p_bytes']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="*", metavar="GRAPH",
                        help=f"graphs to run (default: all of {', '.join(GRAPHS)})")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per operation (default 7)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.graphs) - set(GRAPHS))
    if unknown:
        parser.error(f"unknown graph {', '.join(unknown)}; choose from {', '.join(GRAPHS)}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    allow_deep_recursion()
    started = time.perf_counter()
    rows = []
    for name in args.graphs or GRAPHS:
        print(f"{name}: building, checking round trips, timing...", file=sys.stderr, flush=True)
        rows.append(deep_call(measure, name, args.runs))
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} x{os.cpu_count()}, median of {args.runs} runs, gc off "
          f"while timing; ratio = autosave / pickle protocol 5\n")
    print(table(rows))
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
