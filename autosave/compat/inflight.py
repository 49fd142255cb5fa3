"""Warnings about coroutines parked in old saves that no schema can decide: a reviewer
looks at each (``info``/``warning`` findings naming the label).

* ``COROUTINE_LOCAL_FROM_UPGRADED``: a local saved at a label is computed from a field
  an upgrade hook may convert (a checkout's ``total`` summed from prices before they
  became cents): the save keeps the value as it was.
* ``COROUTINE_YIELDS_REORDERED``: two resume points kept their labels but swapped
  places: a save parked at one continues in the new order.
* ``COROUTINE_LOOP_CHANGED``: the loop around a label changed its header (a bound, an
  iterable): saves parked in the loop continue under the new one.
"""


class InFlight:
    def __init__(self, checker, function, old, new):
        self.c, self.function, self.old, self.new = checker, function, old, new

    def where(self, label):
        info = self.new.labels.get(label)
        return (self.new.file, info.source_line if info is not None else self.new.line)

    def run(self):
        kept = [label for label in self.old.labels if label in self.new.labels]
        self.order(kept)
        for label in kept:
            self.loops(label)
            self.derived(label)

    def order(self, kept):
        by_old = sorted(kept, key=lambda lb: self.old.labels[lb].index)
        for a, b in zip(by_old, by_old[1:]):
            if self.new.labels[a].index > self.new.labels[b].index:
                self.c.add("COROUTINE_YIELDS_REORDERED", self.function, b, self.where(b),
                           f"coroutine {self.function}: {b!r} came after {a!r} in the "
                           f"baseline and comes before it now; a save parked at either "
                           f"continues in the new order",
                           "check that a save parked between them plays right, or keep "
                           "the order")

    def loops(self, label):
        before, now = self.old.labels[label].loops, self.new.labels[label].loops
        if not before or not now or before == now:
            return
        changed = [f"`{a}` -> `{b}`" for a, b in zip(before, now) if a != b]
        if len(before) != len(now):
            changed.append(f"{len(before)} loops around it -> {len(now)}")
        self.c.add("COROUTINE_LOOP_CHANGED", self.function, label, self.where(label),
                   f"coroutine {self.function}: the loop around {label!r} changed "
                   f"({'; '.join(changed)}); saves parked in it continue under the new one",
                   "check that a save parked in the loop still ends where it should")

    def derived(self, label):
        if not self.c.upgraded:
            return
        held = {v.name for v in self.new.labels[label].live or ()} & \
            {v.name for v in self.old.labels[label].live or ()}
        for local in sorted(held):
            fields = [f for f in self.new.derived.get(local, ()) if f in self.c.upgraded]
            if fields:
                classes = sorted({self.c.upgraded[f] for f in fields})
                self.c.add("COROUTINE_LOCAL_FROM_UPGRADED", self.function, local,
                           self.where(label),
                           f"coroutine {self.function} at {label!r} holds {local!r}, "
                           f"computed from .{', .'.join(fields)}, which the upgrade hooks "
                           f"of {', '.join(classes)} may convert; a save parked there keeps "
                           f"the value as it was computed before",
                           f"if the hook changes what .{fields[0]} means, recompute "
                           f"{local!r} after the yield, or convert it where the coroutine "
                           f"resumes")
