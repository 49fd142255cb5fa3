"""What a load's checks cost where they run: objects saved through ``__reduce__`` (a
constructor called on checked, inert arguments) and through ``__getstate__`` /
``__setstate__`` (a state checked, and its ``__setstate__`` run once everything the
state reaches is complete), next to pickle on the same graph, in the same run.

    python benchmarks/hooks_load.py [--n 20000] [--runs 7]

Prints a Markdown table: save and load in ms and as ratios to pickle protocol 5
(median of the runs, gc off while timing).
"""

import argparse
import gc
import pickle
import statistics
import time

import autosave


@autosave.save_root
class Stash:
    """A game's root: this module is the game, so its classes' __reduce__ are its code."""

    def __init__(self, items):
        self.items = items


class Point:
    """Saved through its own __reduce__: rebuilt by calling the class."""

    def __init__(self, x, y, tags):
        self.x, self.y, self.tags = x, y, tags

    def __reduce__(self):
        return (Point, (self.x, self.y, self.tags))


class Crate:
    """Saved through __getstate__/__setstate__, its state holding shared objects."""

    def __init__(self, contents, shelf):
        self.contents, self.shelf = contents, shelf

    def __getstate__(self):
        return {"contents": self.contents, "shelf": self.shelf}

    def __setstate__(self, state):
        self.contents = list(state["contents"])
        self.shelf = state["shelf"]


def build(n):
    shelves = [{"row": i, "labels": [f"s{i}", i]} for i in range(max(1, n // 100))]
    points = [Point(i, -i, ("a", i % 7)) for i in range(n)]
    crates = [Crate([points[i], points[(i * 7) % n]], shelves[i % len(shelves)])
              for i in range(n)]
    return Stash([points, crates, shelves])


def timed(fn, runs):
    out = []
    for _ in range(runs):
        gc.disable()
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
        gc.enable()
        gc.collect()
    return statistics.median(out) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    root = build(args.n)
    data, blob = autosave.dumps(root), pickle.dumps(root, 5)
    back = autosave.loads(data)
    assert len(back.items[1]) == args.n and back.items[1][0].contents[0].x == 0
    rows = []
    for op, mine, theirs in (
            ("save", lambda: autosave.dumps(root), lambda: pickle.dumps(root, 5)),
            ("load", lambda: autosave.loads(data), lambda: pickle.loads(blob))):
        p, a = timed(theirs, args.runs), timed(mine, args.runs)
        rows.append(f"| {op} | {3 * args.n:,} | {p:.1f} | {a:.1f} | {a / p:.2f}x |")
    print(f"autosave {autosave.__version__}: {args.n:,} reduce objects and {args.n:,} "
          f"__setstate__ objects, median of {args.runs}\n")
    print("| op | objects | pickle ms | autosave ms | ratio |\n|---|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
