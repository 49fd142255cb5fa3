"""Per-object cost of save and load as the world graph grows, autosave next to pickle.

    python benchmarks/scaling.py                           # 10k, 100k, 1M: ~5 min, 1.2 GB peak
    python benchmarks/scaling.py --sizes 10000,100000      # a quick look
    python benchmarks/scaling.py --sizes 1000000 --runs 5

The world graph of graphs.py (benchmarks/worldsim: a tile grid, units and items, shared
references and cycles in every direction; world-100k of compare.py) is built at each
size, its round trips are checked as compare.py checks them (nothing broken is timed),
then save (dumps) and load (loads) are timed as compare.py's first table times them:
a warm-up round, the median of several runs, gc off while timing, autosave and pickle
runs alternating. --runs runs at 100k objects and above; a smaller graph gets as many
more as fit the same time (10x at 10k, at most 30): a call of a few milliseconds is
at the mercy of a busy machine, and the growth factors divide by those times. "reflective" is AUTOSAVE_CODEGEN=0, "generated" the code
autosave-codegen wrote for benchmarks/worldsim.

Per-object cost is that median over the objects counted in the graph (instances and
containers: what autosave writes one record each for); ratios are autosave / pickle at
the same size, in the same run. Growth is the per-object cost at the largest size over
that at the smallest: 1.00x is a cost linear in the number of objects, pickle's
growth beside it shows what the machine (caches, allocator) adds for everyone.

A script of its own rather than an option of compare.py: one graph across sizes makes
a different table, and a million objects takes minutes and gigabytes that compare.py's
fixed graphs never need. Sizes run smallest first, each graph freed before the next.
"""

import argparse
import gc
import os
import platform
import sys
import time

import autosave
from compare import checked_bytes, median_ms, ratio, sides
from graphs import allow_deep_recursion, count_objects, deep_call, world_graph

DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
SIDES = ("pickle", "reflective", "generated")
FULL_SIZE = 100_000         # --runs runs from this size up
MAX_RUNS = 30


def runs_at(size, runs):
    """Runs for a graph of ``size`` objects: about the time of ``runs`` at FULL_SIZE."""
    return max(runs, min(MAX_RUNS, round(runs * FULL_SIZE / size)))


def measure(size, runs):
    """{"size", "objects", "runs", "bytes", side: {"save": µs per object, "load": ...}}."""
    root = world_graph(size)
    objects = count_objects(root)
    a_bytes, p_bytes = checked_bytes(f"world-{size}", root)
    side_list = sides(root, a_bytes, p_bytes, {"reflective": "0", "generated": "1"})
    runs = runs_at(size, runs)
    row = {"size": size, "objects": objects, "runs": runs, "bytes": (len(a_bytes), len(p_bytes))}
    row.update({side.name: {} for side in side_list})
    for op in ("save", "load"):
        calls = [(*getattr(side, op), side.codegen) for side in side_list]
        for side, ms in zip(side_list, median_ms(calls, runs)):
            row[side.name][op] = ms * 1000 / objects
    return row


def table(rows):
    head = ["size", "objects", "runs"]
    for op in ("save", "load"):
        head += [f"pickle {op} µs/obj"] + [h for s in SIDES[1:] for h in (f"{s} {op} µs/obj", "ratio")]
    head += ["autosave bytes/obj", "pickle bytes/obj"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        cells = [f"{r['size']:,}", f"{r['objects']:,}", str(r["runs"])]
        for op in ("save", "load"):
            base = r["pickle"][op]
            cells.append(f"{base:.2f}")
            for s in SIDES[1:]:
                cells += [f"{r[s][op]:.2f}", ratio(r[s][op], base)]
        cells += [f"{n / r['objects']:.1f}" for n in r["bytes"]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def growth_table(rows):
    """Per-object cost at the largest size over the smallest, each side and operation."""
    small, big = rows[0], rows[-1]
    head = [f"per-object cost, {big['objects']:,} / {small['objects']:,} objects"] + list(SIDES)
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for op in ("save", "load"):
        lines.append("| " + " | ".join([op] + [ratio(big[s][op], small[s][op]) for s in SIDES])
                     + " |")
    return "\n".join(lines)


def sizes_arg(text):
    try:
        sizes = sorted({int(part.replace("_", "")) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text!r}")
    if not sizes or sizes[0] < 100:
        raise argparse.ArgumentTypeError("sizes must be at least 100 objects")
    return sizes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes_arg, default=list(DEFAULT_SIZES),
                        help="objects in the world graph, comma-separated "
                             "(default: 10000,100000,1000000)")
    parser.add_argument("--runs", type=int, default=3,
                        help="timed runs per operation from 100k objects up, more below "
                             "(default 3)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    allow_deep_recursion()
    started = time.perf_counter()
    rows = []
    for size in args.sizes:
        print(f"world-{size}: building, checking round trips, timing...", file=sys.stderr,
              flush=True)
        rows.append(deep_call(measure, size, args.runs))
        gc.collect()                 # the graph and its copies go before the next is built
    print(f"autosave {autosave.__version__}, Python {platform.python_version()}, "
          f"{platform.machine()} x{os.cpu_count()}, world graph, median of the runs shown, "
          f"gc off while timing; ratio = autosave / pickle protocol 5 at the same size\n")
    print(table(rows))
    if len(rows) > 1:
        print()
        print(growth_table(rows))
    print(f"\n({time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
