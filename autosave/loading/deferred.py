"""Load: the records that waited (``rebuild``'s step 4), completed as soon as what
each waits for is done."""

from __future__ import annotations

from collections import deque
from typing import Any

from ..errors import FormatError
from ..format.forms import Record
from .protocol import ALL, Schedule
from .readers import Gates


class _Missing:
    def __repr__(self):
        return "<not built yet>"


MISSING = _Missing()
"""The loader's placeholder for a record not built yet."""


class Deferred:
    """The records that waited, each completed as soon as what it waits for is done.

    A waiting record registers on every record blocking it: on being *built* (an
    immutable not made yet) or on being *finished* (a mutable not filled yet), and is
    retried only when all of them are done, so this is linear in the references
    whatever a file says. When nothing is ready but records remain, only cycles are
    left: records that wait just for fills go ahead anyway, as pickle does: those
    still to be built before those to be filled (making an object may complete what
    a stuck ``__setstate__`` reads), and of each, those whose blockers hash by
    identity first (their hash cannot change when filled).
    """

    def __init__(self, loader: Any, deferred: list[int], hooks: list[int]):
        self.loader, self.hooks = loader, hooks
        self.on_built: dict[int, list[int]] = {}
        self.on_finished: dict[int, list[int]] = {}
        self.need: dict[int, list[int]] = {}   # waiting -> [built, fill blockers left]
        self.waiting = set(deferred)
        self.ready = deque(deferred)
        self.only_fills: set[int] = set()   # waiting, blocked by unfinished fills only
        self.gates: Gates | None = None
        # Records reach later ones through batch objects; one record alone has no
        # other to wait for.
        if loader.first and len(deferred) > 1:
            records, first = loader.records, loader.first
            refers_to, schedules = loader.filler.refers_to, loader.schedules
            self.gates = Gates(deferred, lambda j: loader.targets(records[j], ALL, j)
                               if j >= first else refers_to(j),
                               lambda i: schedules[records[i][0]].reads_parts,
                               len(records))
            self.ready = deque(i for i in deferred if not self.gates.hold(i))

    def run(self) -> None:
        waiting, ready, only_fills, objs = self.waiting, self.ready, self.only_fills, \
            self.loader.objs
        while waiting:
            while ready:
                i = ready.popleft()
                if i in waiting:
                    self.attempt(i, False)
            if waiting:
                stuck = sorted(only_fills & waiting)
                if not stuck:
                    raise FormatError(
                        f"records {sorted(waiting)[:10]} form a reference cycle through "
                        f"immutable objects that cannot be rebuilt")
                # Builds go first: an object made with references to objects not yet
                # filled is what pickle makes on a cycle, and making it may complete
                # what a stuck fill (a __setstate__ reading its state) waits for.
                stuck = [i for i in stuck if objs[i] is MISSING] or stuck
                safe = [i for i in stuck if self.hashes_safely(i)]
                for i in safe or stuck:
                    only_fills.discard(i)
                    if i in waiting:
                        self.attempt(i, True)

    def complete(self, j: int, table: dict[int, list[int]], built: bool) -> None:
        need, ready, waiting = self.need, self.ready, self.waiting
        for i in table.pop(j, ()):
            if i in waiting:
                counts = need[i]
                counts[0 if built else 1] -= 1
                if counts == [0, 0]:
                    ready.append(i)
                elif counts[0] == 0:
                    self.only_fills.add(i)

    def blockers(self, i: int, rec: Record, schedule: Schedule, building: bool,
                 force: bool) -> tuple[list[int], list[int]]:
        """(records rec needs built, records it needs finished) before it can go on."""
        loader = self.loader
        objs = loader.objs
        if building:
            missing_part, finished_part = schedule.build_slice, schedule.build_finished
        else:
            missing_part, finished_part = ALL, schedule.fill_finished
        if finished_part is None and loader.filler.pending and schedule.reads_parts:
            # what it reads may be a batch object still waiting for a value
            finished_part = missing_part
        need_built = [j for j in loader.targets(rec, missing_part, i) if objs[j] is MISSING]
        need_finished: list[int] = []
        if not force and finished_part is not None:
            j = loader.blocker(rec, finished_part, i, schedule.hashes, schedule.deep,
                               schedule.shallow)
            if j is not None:
                (need_built if objs[j] is MISSING else need_finished).append(j)
        return need_built, need_finished

    def wait(self, i: int, need_built: list[int], need_finished: list[int]) -> None:
        self.need[i] = [len(need_built), len(need_finished)]
        for j in need_built:
            self.on_built.setdefault(j, []).append(i)
        for j in need_finished:
            self.on_finished.setdefault(j, []).append(i)
        if not need_built:
            self.only_fills.add(i)

    def attempt(self, i: int, force: bool) -> None:
        loader = self.loader
        loader.current = i
        objs = loader.objs
        rec = loader.records[i]
        plan, schedule = loader.plans[rec[0]], loader.schedules[rec[0]]
        building = objs[i] is MISSING
        need_built, need_finished = self.blockers(i, rec, schedule, building, force)
        if need_built or need_finished:
            self.wait(i, need_built, need_finished)
            return
        self.only_fills.discard(i)
        vals = loader.resolve(rec, i)
        if building:
            objs[i] = plan.build(vals)
            if schedule.has_loaded_hook:
                self.hooks.append(i)
            self.patch(i)
            self.complete(i, self.on_built, True)
            if schedule.has_fill:
                loader.unfinished.add(i)
                self.ready.appendleft(i)   # its fill next (may wait in turn)
                return
        else:
            plan.fill(objs[i], vals)
        loader.unfinished.discard(i)
        self.waiting.discard(i)
        self.complete(i, self.on_finished, False)
        if self.gates is not None:
            self.ready.extend(self.gates.done(i))

    def patch(self, i: int) -> None:
        """Give the batch objects that waited for record i's object their values."""
        filler = self.loader.filler
        patches = filler.patches         # batch objects' values built here
        if patches and i in patches:
            objs = self.loader.objs
            for setter, args, k in patches.pop(i):
                setter(*args, objs[i])
                if filler.gave(i, k):
                    self.loader.unfinished.discard(k)
                    self.complete(k, self.on_finished, False)

    def hashes_safely(self, i: int) -> bool:
        loader = self.loader
        objs, unfinished = loader.objs, loader.unfinished
        rec = loader.records[i]
        schedule = loader.schedules[rec[0]]
        part = schedule.build_finished if objs[i] is MISSING else schedule.fill_finished
        return all(type(objs[j]).__hash__ is object.__hash__
                   for j in loader.targets(rec, part or ALL, i) if j in unfinished)
