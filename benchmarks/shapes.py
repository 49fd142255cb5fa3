"""autosave next to pickle (protocol 5) on the shapes games hold, as a Markdown table.

    python benchmarks/shapes.py                        # every workload, 10k and 100k objects
    python benchmarks/shapes.py --sizes 10000 --runs 3 json-like value-keys
    python benchmarks/shapes.py --seeds 3              # plus 3 generated states per size

Workloads are ``shapemodel.gen``'s: one named shape each (agents, JSON-like documents,
value-hashed keys and sets, suspended coroutines and the same state as a state machine,
a numpy scene, plain classes with cycles) and, with --seeds, states drawn at random
from every class style and container mix (``random_state``). Each is checked before it
is timed: reflection and generated code, and the C and the Python loops, must write the
same bytes; the load must give back the same graph (coroutines: a load saves again to
the same bytes), and so must pickle's.

Every ratio is autosave / pickle protocol 5 measured in the same process in the same run
(above 1: autosave is slower or bigger); pickle saves ``pickle_root``, the same state
as pickle can hold it (for the coroutines: their hand-written state machine). Time: one
warm-up round, then the median of --runs runs alternating between the sides, gc off
while timing (compare.py's ``rounds``). "C" runs the engine's loops as installed (in C
where autosave._speedups was built), "Py" with them in Python; both use generated code
(benchmarks/shapemodel has it). Peak memory: tracemalloc's peak during one call, the
result included, with the C loops. msgspec (msgpack, untyped) where the state is
plain containers only: the floor of an encoder that knows nothing of objects.
"""

import argparse
import pickle
import platform
import sys
import time

import autosave
from autosave.format import kernels
from compare import codegen_switch, in_python_loops, peak_bytes, rounds
from graphs import allow_deep_recursion, count_objects, deep_call, same_graph
from shapemodel import gen

SIZES = (10_000, 100_000)
PLAIN = (dict, list, str, int, float, bool, type(None))


def check(name, root, pickle_root):
    """The bytes autosave writes for root, after the checks the module doc lists."""
    data = autosave.dumps(root)
    with codegen_switch("0"):
        if autosave.dumps(root) != data:
            raise AssertionError(f"{name}: generated and reflective saves differ")
    if in_python_loops(autosave.dumps)(root) != data:
        raise AssertionError(f"{name}: the C and the Python loops save different bytes")
    for loaded in (autosave.loads(data), in_python_loops(autosave.loads)(data)):
        if autosave.dumps(loaded) != data:
            raise AssertionError(f"{name}: a loaded state saves to other bytes")
        if root is pickle_root:      # coroutines: same_graph does not look into frames
            same_graph(root, loaded)
    same_graph(pickle_root, pickle.loads(pickle.dumps(pickle_root, protocol=5)))
    return data


def plain_only(root):
    stack, seen = [root], set()
    while stack:
        obj = stack.pop()
        if type(obj) not in PLAIN:
            return False
        if type(obj) in (dict, list):
            if id(obj) in seen:
                return False         # msgspec would write a shared container twice
            seen.add(id(obj))
        if type(obj) is dict:
            stack += obj.values()
        elif type(obj) is list:
            stack += obj
    return True


def measure(name, root, pickle_root, runs):
    data = check(name, root, pickle_root)
    p_data = pickle.dumps(pickle_root, protocol=5)
    saves = [(lambda r: pickle.dumps(r, protocol=5), pickle_root, None),
             (autosave.dumps, root, "1"), (in_python_loops(autosave.dumps), root, "1")]
    loads = [(pickle.loads, p_data, None), (autosave.loads, data, "1"),
             (in_python_loops(autosave.loads), data, "1")]
    msgspec = None
    if plain_only(root):
        import msgspec
        m_data = msgspec.msgpack.encode(root)
        saves.append((msgspec.msgpack.encode, root, None))
        loads.append((msgspec.msgpack.decode, m_data, None))
    save_ms, load_ms = rounds(saves, runs), rounds(loads, runs)
    return {
        "shape": name, "objects": count_objects(root),
        "save": [ms for ms, _ in save_ms], "load": [ms for ms, _ in load_ms],
        "size": (len(data), len(p_data)),
        "peak": [peak_bytes(*saves[1]) / peak_bytes(*saves[0]),
                 peak_bytes(*loads[1]) / peak_bytes(*loads[0])],
        "msgspec": msgspec is not None,
    }


def table(rows):
    head = ["shape", "objects", "pickle save ms", "save C", "save Py", "pickle load ms",
            "load C", "load Py", "size", "peak save", "peak load", "msgspec save / load"]
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in rows:
        ps, pl = r["save"][0], r["load"][0]
        cells = [r["shape"], f"{r['objects']:,}", f"{ps:.1f}",
                 f"{r['save'][1] / ps:.2f}x", f"{r['save'][2] / ps:.2f}x", f"{pl:.1f}",
                 f"{r['load'][1] / pl:.2f}x", f"{r['load'][2] / pl:.2f}x",
                 f"{r['size'][0] / r['size'][1]:.2f}x",
                 f"{r['peak'][0]:.2f}x", f"{r['peak'][1]:.2f}x",
                 f"{r['save'][3] / ps:.2f}x / {r['load'][3] / pl:.2f}x" if r["msgspec"]
                 else "–"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help=f"workloads to run (default: all of {', '.join(gen.WORKLOADS)})")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="objects per state, comma-separated (default 10000,100000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per operation")
    parser.add_argument("--seeds", type=int, default=0,
                        help="also time this many generated states per size")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.workloads) - set(gen.WORKLOADS))
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    allow_deep_recursion()
    started = time.perf_counter()
    jobs = [(f"{name} {size // 1000}k", lambda f=gen.WORKLOADS[name], s=size: f(s))
            for size in sizes for name in (args.workloads or gen.WORKLOADS)]
    jobs += [(f"generated seed {seed} {size // 1000}k",
              lambda seed=seed, size=size: (gen.random_state(seed, size),) * 2)
             for size in sizes for seed in range(args.seeds)]
    rows = []
    for name, build in jobs:
        print(f"{name}: building, checking, measuring...", file=sys.stderr, flush=True)
        rows.append(deep_call(lambda: measure(name, *build(), args.runs)))
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, median of "
          f"{args.runs} runs, gc off while timing; ratios: autosave / pickle protocol 5 in "
          f"the same run; engine loops {kernels.IMPLEMENTATION} (C) and Python (Py)\n")
    print(table(rows))
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
