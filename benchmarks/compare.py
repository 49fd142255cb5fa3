"""autosave next to pickle (protocol 5), as Markdown tables.

    python benchmarks/compare.py                  # all graphs, median of 7 runs, about a minute
    python benchmarks/compare.py --runs 3 level-15k

For each graph in graphs.py: build it, check that autosave (reflective and generated
code, which must write the same bytes) and pickle all give back the same graph (so
nothing broken is ever timed), then measure save (dumps) and load (loads) in memory.
One run prints four tables, every ratio autosave / pickle with pickle measured in the
same process in the same run (above 1: autosave is slower or bigger):

1. Time: one warm-up round, then the median of --runs runs, each with the garbage
   collector off (collected between runs, untimed). autosave and pickle runs alternate,
   so background load on a busy machine skews both sides alike. Sizes of the output too.
2. Peak memory: tracemalloc's peak during one call minus what was traced before it, so
   the result itself counts (a save's bytes, a load's graph). Measured apart from the
   timed runs, because tracing slows everything several times over.
3. Garbage: how many objects ``gc.collect()`` finds right after one call (the result
   still alive, so only what the call left behind is garbage). autosave promises none:
   its engine leaves no reference cycles. The most found over the runs of table 4.
4. Call + collection: table 1's runs again with a ``gc.collect()`` inside the timing,
   so a cost left to the collector could not hide from table 1. Everything older than
   the call is frozen first (gc.freeze): the collection then walks only what the call
   made, as the next young-generation collection of a program would.

"reflective" is autosave with AUTOSAVE_CODEGEN=0; "generated" uses the code
autosave-codegen wrote for examples/game and benchmarks/worldsim.
Everything runs on a big-stack thread because pickle recurses once per level of nesting.
"""

import argparse
import gc
import os
import pickle
import platform
import statistics
import sys
import time
import tracemalloc

import autosave
from graphs import GRAPHS, allow_deep_recursion, count_objects, deep_call, same_graph

MB = 1024 * 1024


# -- the sides: pickle and autosave's ways of running ---------------------------------------


class Side:
    """One way of saving and loading a graph: its two calls and the AUTOSAVE_CODEGEN
    value they run under (None: pickle, which does not read it)."""

    def __init__(self, name, save, load, codegen):
        self.name, self.save, self.load, self.codegen = name, save, load, codegen


def sides(root, a_bytes, p_bytes, codegens):
    """pickle, then autosave under each of ``codegens`` ({side name: AUTOSAVE_CODEGEN})."""
    return [Side("pickle", (lambda r: pickle.dumps(r, protocol=5), root),
                 (pickle.loads, p_bytes), None)] + [
        Side(name, (autosave.dumps, root), (autosave.loads, a_bytes), value)
        for name, value in codegens.items()]


def checked_bytes(name, root):
    """(autosave bytes, pickle bytes) of ``root``, after checking that every path gives
    back the same graph and that generated code writes what reflection writes."""
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
    return a_bytes, p_bytes


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


# -- timing -----------------------------------------------------------------------------------


def timed_call(fn, arg, codegen, collect=False):
    """(seconds, objects a gc.collect() after it found, or None) of one ``fn(arg)``.

    The collector is off during the call, so no automatic collection lands inside one
    run and none cleans up before the count. With ``collect``, the collection is timed
    with the call and everything older than the call is frozen, so it walks only what
    the call made; the result stays alive through it, so only leftovers are garbage.
    """
    with codegen_switch(codegen):
        result = found = None
        gc.collect()
        if collect:
            gc.freeze()
        gc.disable()
        try:
            started = time.perf_counter()
            result = fn(arg)
            if collect:
                found = gc.collect()
            elapsed = time.perf_counter() - started
        finally:
            gc.enable()
            if collect:
                gc.unfreeze()
        del result
    return elapsed, found


def rounds(calls, runs, collect=False):
    """[(median ms, most objects found after a call or None)] of each of ``calls``,
    (fn, arg, AUTOSAVE_CODEGEN value or None).

    The runs alternate between the calls so that background load on a busy machine
    slows them alike and their ratios stay meaningful. One warm-up round comes first,
    uncounted: it imports generated modules and fills caches, which is no leftover.
    """
    times = [[] for _ in calls]
    found = [None for _ in calls]
    for i in range(runs + 1):
        for k, (fn, arg, codegen) in enumerate(calls):
            elapsed, leftover = timed_call(fn, arg, codegen, collect)
            if i:
                times[k].append(elapsed)
                if leftover is not None:
                    found[k] = max(found[k] or 0, leftover)
    return [(statistics.median(t) * 1000, n) for t, n in zip(times, found)]


def median_ms(calls, runs):
    """Median wall time in ms of each of ``calls``, gc off while timing (see rounds)."""
    return [ms for ms, _ in rounds(calls, runs)]


# -- peak memory ------------------------------------------------------------------------------


# The interpreter's own recursion limit, before allow_deep_recursion lifts it for pickle.
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()


def peak_bytes(fn, arg, codegen):
    """tracemalloc's peak during one ``fn(arg)`` minus what was traced before it.

    The collector is off as in the timed runs: a cycle left to it would show here too.
    autosave runs under the interpreter's default recursion limit here: tracemalloc
    (3.11) walks the whole Python stack at every allocation, and under the lifted limit
    generated save code recurses tens of thousands of levels deep in one thread, which
    makes a traced world-100k save take many minutes. Under the default limit the same
    walk goes on in a chain of threads, each at most that deep, writing the same
    records (autosave/direct.py); frames live outside what tracemalloc sees either way.
    pickle recurses in C and needs the lifted limit.
    """
    with codegen_switch(codegen), recursion_limit(
            DEFAULT_RECURSION_LIMIT if codegen is not None else None):
        result = None
        gc.collect()
        gc.disable()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            result = fn(arg)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
            gc.enable()
        del result
    return peak


class recursion_limit:
    """sys.setrecursionlimit(``limit``) inside the block (None: left alone)."""

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        self.old = sys.getrecursionlimit()
        if self.limit is not None:
            sys.setrecursionlimit(self.limit)

    def __exit__(self, *exc):
        sys.setrecursionlimit(self.old)


# -- one process's measurements ---------------------------------------------------------------


def measure_sides(side_list, runs):
    """{side name: {metric: value}} for every metric the tables show; each side's
    values carry ``vs``, the pickle side measured alongside, for its ratios."""
    results = {side.name: {} for side in side_list}
    for op in ("save", "load"):
        calls = [(*getattr(side, op), side.codegen) for side in side_list]
        for side, (ms, _) in zip(side_list, rounds(calls, runs)):
            results[side.name][op] = ms
        for side, (ms, found) in zip(side_list, rounds(calls, runs, collect=True)):
            results[side.name][f"{op}_gc"] = ms
            results[side.name][f"{op}_found"] = found
        for side, call in zip(side_list, calls):
            results[side.name][f"{op}_peak"] = peak_bytes(*call)
    for name in results:
        if name != "pickle":
            results[name]["vs"] = results["pickle"]
    return results


def measure(name, runs):
    root = GRAPHS[name]()
    a_bytes, p_bytes = checked_bytes(name, root)
    results = measure_sides(sides(root, a_bytes, p_bytes,
                                  {"reflective": "0", "generated": "1"}), runs)
    return {
        "graph": name, "objects": count_objects(root),
        "a_bytes": len(a_bytes), "p_bytes": len(p_bytes), "sides": results,
    }


# -- tables -----------------------------------------------------------------------------------

SIDES = ("reflective", "generated")


def side_columns(rows, metric, label, fmt):
    """(head, [cells of each row]) of pickle's value, then each autosave side's value
    and its ratio to the pickle measured alongside it. A side no row has is left out;
    a row without a side gets dashes."""
    shown = [s for s in SIDES if any(s in r["sides"] for r in rows)]
    head = [f"pickle {label}"] + [h for s in shown for h in (f"{s} {label}", "ratio")]
    cells = []
    for r in rows:
        line = [fmt(r["sides"]["pickle"][metric])]
        for s in shown:
            side = r["sides"].get(s)
            if side is None:
                line += ["–", "–"]
            else:
                line += [fmt(side[metric]), ratio(side[metric], side["vs"][metric])]
        cells.append(line)
    return head, cells


def ratio(value, base):
    return f"{value / base:.2f}x" if base else "–"


def markdown(head, lines):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return "\n".join(out)


def joined(rows, first, groups, last=None):
    """A table of ``first`` columns, then each (head, cells) group, then ``last``."""
    head_first, cells_first = first
    head = list(head_first)
    lines = [list(c) for c in cells_first]
    for group_head, group_cells in [*groups, *([last] if last else [])]:
        head += group_head
        for line, cells in zip(lines, group_cells):
            line += cells
    return markdown(head, lines)


def graph_columns(rows, objects=True):
    head = ["graph"] + (["objects"] if objects else [])
    return head, [[r["graph"]] + ([f"{r['objects']:,}"] if objects else []) for r in rows]


def time_table(rows):
    ms = lambda v: f"{v:.1f}"
    sizes = (["autosave bytes", "pickle bytes", "size ratio"],
             [[f"{r['a_bytes']:,}", f"{r['p_bytes']:,}", ratio(r["a_bytes"], r["p_bytes"])]
              for r in rows])
    return joined(rows, graph_columns(rows), [side_columns(rows, "save", "save ms", ms),
                                              side_columns(rows, "load", "load ms", ms)], sizes)


def memory_table(rows):
    mb = lambda v: f"{v / MB:.1f}"
    return joined(rows, graph_columns(rows), [side_columns(rows, "save_peak", "save MB", mb),
                                              side_columns(rows, "load_peak", "load MB", mb)])


def garbage_table(rows):
    shown = ["pickle"] + [s for s in SIDES if any(s in r["sides"] for r in rows)]
    head = [f"{s} {op}" for op in ("save", "load") for s in shown]
    cells = [[str(r["sides"][s][f"{op}_found"]) if s in r["sides"] else "–"
              for op in ("save", "load") for s in shown] for r in rows]
    return joined(rows, graph_columns(rows), [(head, cells)])


def collected_table(rows):
    ms = lambda v: f"{v:.1f}"
    return joined(rows, graph_columns(rows, objects=False),
                  [side_columns(rows, "save_gc", "save+gc ms", ms),
                   side_columns(rows, "load_gc", "load+gc ms", ms)])


def report(rows, runs):
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} x{os.cpu_count()}, median of {runs} runs, gc off "
          f"while timing; ratio = autosave / pickle protocol 5 measured alongside\n")
    print(time_table(rows))
    print("\nPeak memory during one call, MB (tracemalloc; the result counts: a save's "
          "bytes, a load's graph):\n")
    print(memory_table(rows))
    print("\nObjects gc.collect() found right after a call (its result still alive; "
          "most over the runs):\n")
    print(garbage_table(rows))
    print("\nCall + gc.collect() timed together (older objects frozen), median ms:\n")
    print(collected_table(rows))


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
        print(f"{name}: building, checking round trips, measuring...", file=sys.stderr,
              flush=True)
        rows.append(deep_call(measure, name, args.runs))
    report(rows, args.runs)
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
