"""autosave next to pickle (protocol 5), as Markdown tables.

    python benchmarks/compare.py                  # all graphs, median of 7 runs, about 2 minutes
    python benchmarks/compare.py --runs 3 level-15k
    python benchmarks/compare.py --compiled       # plus Cython-compiled generated code (+30 s)

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

Under the tables: the time ``import autosave`` takes in a fresh interpreter, next to
``import pickle`` (best of 5, bytecode cached in a temporary PYTHONPYCACHEPREFIX).

"reflective" is autosave with AUTOSAVE_CODEGEN=0; "generated" uses the code
autosave-codegen wrote for examples/game and benchmarks/worldsim. Both run the engine's
per-reference loops as installed: in C where autosave._speedups was built
(docs/speedups.md). "pure Python" is "generated" with those loops in Python, as an
install without a C compiler runs them (shown when the C ones are built). With --compiled, the
generated module of each graph's package is also built with Cython (as
``autosave-codegen --compile`` does) into a temporary copy of the package, never into
the checkout, and a subprocess with that copy first on sys.path measures "compiled"
next to its own pickle runs; it checks that the module it loaded is the extension. If
the build fails (no C compiler, say), the reason is printed and the column left out.
Everything runs on a big-stack thread because pickle recurses once per level of nesting.
"""

import argparse
import gc
import importlib.machinery
import json
import os
import pickle
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import autosave
from autosave.format import kernels
from autosave.model.generated import MODULE
from autosave.format.kernels import python_loops
from graphs import EXAMPLES, GRAPHS, allow_deep_recursion, count_objects, deep_call, same_graph

BENCHMARKS = Path(__file__).resolve().parent
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
    back the same graph and that generated code writes what reflection writes, with the
    engine's loops in C and in Python alike."""
    with codegen_switch("0"):
        reflective_bytes = autosave.dumps(root)
    a_bytes = autosave.dumps(root)
    if a_bytes != reflective_bytes:
        raise AssertionError(f"{name}: generated and reflective saves differ")
    if in_python_loops(autosave.dumps)(root) != a_bytes:
        raise AssertionError(f"{name}: the C and the Python loops save different bytes")
    same_graph(root, in_python_loops(autosave.loads)(a_bytes))
    p_bytes = pickle.dumps(root, protocol=5)
    same_graph(root, autosave.loads(a_bytes))
    with codegen_switch("0"):
        same_graph(root, autosave.loads(a_bytes))
    same_graph(root, pickle.loads(p_bytes))
    return a_bytes, p_bytes


def in_python_loops(fn):
    """fn, run with the engine's loops in Python (autosave.format.kernels) whichever the
    install built."""
    def call(arg):
        with python_loops():
            return fn(arg)
    return call


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
    autosave runs under the interpreter's default recursion limit here, as a game runs
    it (it walks iteratively, so the limit changes nothing of its work); pickle recurses
    in C and needs the lifted limit.
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
    side_list = sides(root, a_bytes, p_bytes, {"reflective": "0", "generated": "1"})
    if kernels.IMPLEMENTATION == "C":
        side_list.append(Side("pure Python", (in_python_loops(autosave.dumps), root),
                              (in_python_loops(autosave.loads), a_bytes), "1"))
    results = measure_sides(side_list, runs)
    return {
        "graph": name, "objects": count_objects(root), "package": generated_package(root),
        "a_bytes": len(a_bytes), "p_bytes": len(p_bytes), "sides": results, "notes": [],
    }


def generated_package(root):
    """(name, directory) of the package of ``root``'s class if it has generated code."""
    top = type(root).__module__.partition(".")[0]
    paths = getattr(sys.modules[top], "__path__", [])
    if paths and (Path(paths[0]) / f"{MODULE}.py").exists():
        return top, paths[0]
    return None


# -- generated code compiled with Cython ------------------------------------------------------


class CompiledPackages:
    """Temporary copies of packages with their generated module compiled next to it.

    Never in the checkout: a compiled module there would shadow the generated source
    for every later run, test and diff. One build per package, kept for the whole run.
    """

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="autosave-compiled-"))
        self.built = {}     # package -> None (built) or why it could not be

    def build(self, package, source_dir):
        """None if ``package`` now has a compiled copy here, else the reason why not."""
        if package not in self.built:
            self.built[package] = self._build(package, Path(source_dir))
        return self.built[package]

    def _build(self, package, source_dir):
        copy = self.dir / package
        shutil.copytree(source_dir, copy, ignore=shutil.ignore_patterns(
            "__pycache__", *(f"*{s}" for s in importlib.machinery.EXTENSION_SUFFIXES)))
        print(f"{package}: compiling {MODULE}.py with Cython...", file=sys.stderr, flush=True)
        try:
            from autosave_codegen.cli import compile_module
            built = compile_module(copy / f"{MODULE}.py")
        except BaseException as e:   # noqa: BLE001  (CodegenError, CompileError, exit of a build)
            if isinstance(e, KeyboardInterrupt):
                raise
            return f"compiling {package} failed: {type(e).__name__}: {shortened(str(e))}"
        return None if built else f"compiling {package} produced no extension module"

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def shortened(message, limit=240):
    """A compiler's message can hold its whole command line: its start and its end."""
    message = " ".join(message.split())
    return message if len(message) <= limit else f"{message[:limit - 90]} ... {message[-80:]}"


# A fresh interpreter with the compiled copies first on sys.path, then the folders that
# graphs.py would otherwise put first (so it does not) and this one's, for compare.
WORKER = """\
import json, sys
args = json.loads(sys.argv[1])
sys.path[:0] = [args["packages"], args["examples"], args["benchmarks"]]
import compare
print(json.dumps(compare.compiled_worker(args["graph"], args["runs"], args["packages"])))
"""


def measure_compiled(compiled, row, runs):
    """Add the "compiled" side to ``row``, measured in a subprocess, or a note why not."""
    package, source_dir = row["package"]
    why = compiled.build(package, source_dir)
    if why is None:
        args = {"packages": str(compiled.dir), "examples": str(EXAMPLES),
                "benchmarks": str(BENCHMARKS), "graph": row["graph"], "runs": runs}
        done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(args)],
                              cwd=compiled.dir, stdout=subprocess.PIPE, text=True)
        if done.returncode:
            why = f"the compiled run of {row['graph']} failed (exit {done.returncode}, see above)"
        else:
            out = json.loads(done.stdout.strip().splitlines()[-1])
            row["sides"]["compiled"] = dict(out["compiled"], vs=out["pickle"])
            base = out["pickle"]
            row["notes"].append(f"{row['graph']}: compiled = {out['module']}; its ratios are "
                                f"against pickle in that process: save {base['save']:.1f} ms, "
                                f"load {base['load']:.1f} ms, save+gc {base['save_gc']:.1f} ms, "
                                f"load+gc {base['load_gc']:.1f} ms")
            return
    print(f"{row['graph']}: no compiled column: {why}", file=sys.stderr, flush=True)
    row["notes"].append(f"{row['graph']}: no compiled column: {why}")


def compiled_worker(name, runs, packages_dir):
    """The compiled side of graph ``name`` and the pickle side beside it, in this process,
    whose sys.path starts with ``packages_dir`` (see WORKER)."""
    allow_deep_recursion()
    return deep_call(_compiled_worker, name, runs, Path(packages_dir))


def _compiled_worker(name, runs, packages_dir):
    root = GRAPHS[name]()
    a_bytes, p_bytes = checked_bytes(name, root)     # imports the generated module
    package, _ = generated_package(root)
    module = sys.modules.get(f"{package}.{MODULE}")
    where = Path(getattr(module, "__file__", "") or "")
    if packages_dir not in where.parents or not where.name.endswith(
            tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        raise AssertionError(f"{name}: the generated module in use is {where}, "
                             f"not an extension module under {packages_dir}")
    results = measure_sides(sides(root, a_bytes, p_bytes, {"compiled": "1"}), runs)
    del results["compiled"]["vs"]
    return {"pickle": results["pickle"], "compiled": results["compiled"],
            "module": f"{package}/{where.name}"}


# -- import time ------------------------------------------------------------------------------


def import_ms(modules, tries=5):
    """{module: best time in ms of importing it in a fresh interpreter}.

    PYTHONDONTWRITEBYTECODE may be set, which would make every import compile from
    source: bytecode goes to a temporary PYTHONPYCACHEPREFIX, written by one uncounted
    warm-up import. Only the import is timed, not the interpreter's start. The
    modules take turns, so a busy machine slows them alike.
    """
    best = {}
    with tempfile.TemporaryDirectory(prefix="autosave-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for i in range(tries + 1):
            for module in modules:
                code = (f"import time; t = time.perf_counter(); import {module}; "
                        f"print(time.perf_counter() - t)")
                done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cache,
                                      capture_output=True, text=True, check=True)
                if i:
                    best[module] = min(best.get(module, float("inf")),
                                       float(done.stdout) * 1000)
    return best


# -- tables -----------------------------------------------------------------------------------

SIDES = ("reflective", "generated", "pure Python", "compiled")


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


def report(rows, runs, imports):
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} x{os.cpu_count()}, median of {runs} runs, gc off "
          f"while timing; ratio = autosave / pickle protocol 5 measured alongside; the "
          f"engine's loops in {kernels.IMPLEMENTATION} (\"pure Python\": generated code "
          f"with the loops in Python, as where autosave._speedups was not built)\n")
    print(time_table(rows))
    print("\nPeak memory during one call, MB (tracemalloc; the result counts: a save's "
          "bytes, a load's graph):\n")
    print(memory_table(rows))
    print("\nObjects gc.collect() found right after a call (its result still alive; "
          "most over the runs):\n")
    print(garbage_table(rows))
    print("\nCall + gc.collect() timed together (older objects frozen), median ms:\n")
    print(collected_table(rows))
    notes = [note for r in rows for note in r["notes"]]
    if imports:
        notes.append(f"import time in a fresh interpreter, best of 5, bytecode cached: "
                     f"autosave {imports['autosave']:.1f} ms, pickle {imports['pickle']:.1f} ms")
    if notes:
        print()
        for note in notes:
            print(f"* {note}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graphs", nargs="*", metavar="GRAPH",
                        help=f"graphs to run (default: all of {', '.join(GRAPHS)})")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per operation (default 7)")
    parser.add_argument("--compiled", action="store_true",
                        help="also time generated code compiled with Cython, for the graphs "
                             "whose package has generated code")
    parser.add_argument("--no-import-time", dest="import_time", action="store_false",
                        help="skip timing `import autosave` in fresh interpreters")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.graphs) - set(GRAPHS))
    if unknown:
        parser.error(f"unknown graph {', '.join(unknown)}; choose from {', '.join(GRAPHS)}")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    allow_deep_recursion()
    started = time.perf_counter()
    compiled = CompiledPackages() if args.compiled else None
    rows = []
    try:
        for name in args.graphs or GRAPHS:
            print(f"{name}: building, checking round trips, measuring...", file=sys.stderr,
                  flush=True)
            row = deep_call(measure, name, args.runs)
            if compiled and row["package"]:
                measure_compiled(compiled, row, args.runs)
            rows.append(row)
    finally:
        if compiled:
            compiled.close()
    imports = import_ms(["autosave", "pickle"]) if args.import_time else None
    report(rows, args.runs, imports)
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
