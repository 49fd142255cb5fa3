"""Load: when code that reads what it is given may run (docs/format.md, "Batches").

Records come in post-order, so a record reading its parts, built in order, finds what
they reach finished. Batch objects break that order: a record reaches, through them,
records written after it, which the loader completes after the batches are filled, in
any order their own needs allow. ``Gates`` restores what post-order promised: a record
that reads runs only once every record it reaches, through batch objects and records,
is complete, unless that record reaches it back (a cycle through itself, where it sees
what is built so far, as pickle shows it).

The reach is taken once, as strongly connected components of everything the waiting
records reach (iterative Tarjan, linear in the references), so waiting costs one pass
whatever the file says: a component is complete when its own waiting records are and
every component below it is; a reader waits for the components below its own.
"""

from collections.abc import Callable
from typing import Any



class Gates:
    def __init__(self, waiting: list[int], children: Callable[[int], list[int]],
                 reads: Callable[[int], bool], size: int):
        """``waiting``: the records still to complete; ``children(j)``: the indices
        object j refers to (all below ``size``); ``reads(i)``: whether record i reads
        what it is given."""
        self.component, below = _components(waiting, children, size)
        n = len(below)
        self.above: list[list[int]] = [[] for _ in range(n)]
        for c, succ in enumerate(below):
            for d in succ:
                self.above[d].append(c)
        self.left = [0] * n               # waiting records of the component
        for i in waiting:
            self.left[self.component[i]] += 1
        self.open = [0] * n               # components below not complete yet
        for c, succ in enumerate(below):  # below before above: Tarjan's order
            self.open[c] = sum(1 for d in succ if self.left[d] or self.open[d])
        self.reads = reads
        self.held: dict[int, list[int]] = {}   # component -> readers waiting for it to open

    def hold(self, i: int) -> bool:
        """Whether reader i must wait (it is then released by ``done``)."""
        c = self.component[i]
        if not self.open[c] or not self.reads(i):
            return False
        self.held.setdefault(c, []).append(i)
        return True

    def done(self, i: int) -> list[int]:
        """Record i is complete: the readers it released."""
        c = self.component[i]
        self.left[c] -= 1
        released: list[int] = []
        todo = [c]
        while todo:
            c = todo.pop()
            if self.left[c] or self.open[c]:
                continue
            for p in self.above[c]:
                self.open[p] -= 1
                if not self.open[p]:
                    released += self.held.pop(p, ())
                    todo.append(p)
        return released


def _components(starts: list[int], children: Callable[[int], list[int]], size: int) -> Any:
    """({node: component}, [components each refers to]) of everything reached from
    starts (nodes are ints below ``size``), components numbered children first
    (Tarjan's algorithm, without recursion)."""
    index, low = [-1] * size, [0] * size
    on_stack = bytearray(size)
    component: dict[int, int] = {}
    below: list[set[int]] = []
    kids_of: dict[int, list[int]] = {}
    stack: list[int] = []
    count = 0
    for s in starts:
        if index[s] >= 0:
            continue
        index[s] = low[s] = count
        count += 1
        stack.append(s)
        on_stack[s] = 1
        kids = kids_of[s] = children(s)
        work: list[tuple[int, Any]] = [(s, iter(kids))]
        while work:
            v, kids = work[-1]
            for w in kids:
                if index[w] < 0:
                    index[w] = low[w] = count
                    count += 1
                    stack.append(w)
                    on_stack[w] = 1
                    kids = kids_of[w] = children(w)
                    work.append((w, iter(kids)))
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work and low[v] < low[work[-1][0]]:
                    low[work[-1][0]] = low[v]
                if low[v] == index[v]:
                    c = len(below)
                    while True:
                        w = stack.pop()
                        on_stack[w] = 0
                        component[w] = c
                        if w == v:
                            break
                    below.append(set())
    for v, c in component.items():
        below[c].update(d for w in kids_of[v] if (d := component[w]) != c)
    return component, below
