"""Load: records -> objects.

1. Every type entry becomes a *plan* (``plans``).
2. The batch objects are allocated, empty, before anything else (``fill``).
3. Records are built in order. Records come in post-order, so a reference to an
   earlier record finds a finished object. A reference to a later record closes a cycle:
   a mutable target is allocated early; a record that needs an immutable target not yet
   built, or whose fill hashes objects not yet filled, waits in ``deferred`` and is
   retried once what it needs exists.
4. The batch objects are filled from their columns (``fill``); then the records that
   waited for them are completed.
5. ``__autosave_loaded__`` hooks run last, in index order.
"""

from __future__ import annotations

from itertools import islice, repeat
from operator import is_, itemgetter
from types import FunctionType
from typing import Any

from ..errors import FormatError, LoadError
from .fill import Filler, allocate
from ..format.forms import Batch, Record, target
from ..model.generated import GENERATED
from ..checks.limits import check_records
from ..checks.loadcheck import bound_hook, class_attribute, describe
from .plans import InstancePlan, plan_for, release_plans
from .protocol import ALL, LazyNames, schedule_of, step_of
from .deferred import MISSING, Deferred
from ..model.reconstructors import CHECKED


def _has_missing(vals):
    return any(map(is_, vals, repeat(MISSING)))


# -- records -> objects ------------------------------------------------------------------

class Loader:
    """Records and batches -> objects. Indices are the file's: the batch objects first
    (allocated before anything else), then the records; ``records`` is padded so that
    record index i is ``records[i]``."""

    def __init__(self, types: list[Any], records: list[Record], unset_markers: int = 0,
                 closes_cycle: bytearray | None = None, batches: list[Batch] | tuple = ()):
        self.plans = [plan_for(i, e) for i, e in enumerate(types)]
        self.objs = allocate(self.plans, batches)   # may give a batch's entry its plan
        self.schedules = [schedule_of(p) for p in self.plans]
        first = self.first = self.unfilled = len(self.objs)
        self.batches = batches
        self.records_only = records
        # records padded so that record index i is records[i] (the batch objects'
        # places hold their column rows once filled, fill_batches): made by pad(), at
        # the first step that looks a record up by index (the common load has none)
        self.records: list[Any] = records
        self.padded = not first
        check_records(self.schedules, records, first, LazyNames(self.plans))
        if not unset_markers:
            self.use_generated_code()
        self.early: dict[int, Any] = {}   # index -> mutable allocated before its record
        self.unfinished: set[int] = set()  # allocated, not yet filled
        self.unset_markers = unset_markers
        closes_cycle = closes_cycle if closes_cycle is not None else bytearray(len(records))
        self.closes_cycle = bytearray(first) + closes_cycle if first else closes_cycle
        self.hash_ready: set[int] = set()   # records known to hash by their final value
        self.deep_ready: set[int] = set()   # records known done with all they reach
        self.reach_memo: dict[int, bool | None] = {}   # record -> reaches a batch object?
        self.filler = Filler(self.plans, batches, self.objs, MISSING)
        self.current: int | None = None
        self.forwarded_missing = False   # forward() gave MISSING: vals may hold it
        # (index, values) of records whose fill waits, shallowly, for batch objects only
        # so far: filled as soon as the batches are (fill_batches), never deferred then
        self.after_batches: list[tuple[int, list[Any]]] = []

    def pad(self) -> None:
        """Make ``records`` the padded records, before a step that looks records up by
        index: ``general_record`` (forward references, blockers), the fills that wait
        for batches, the deferred records. (An attribute, not a property: the loader
        reads it in its loops.)"""
        if not self.padded:
            self.records = [None] * self.first + self.records_only
            self.padded = True

    def use_generated_code(self) -> None:
        """Generated code builds records straight into their objects. It never sees
        unset-slot markers, so it is used only when the file holds none; whether it is
        on is read once per load."""
        plans = [p for p in self.plans if isinstance(p, InstancePlan) and p.create is not None]
        factories = GENERATED.load_factories([p.cls for p in plans]) if plans else None
        if not factories:
            return
        for plan in plans:
            factory = factories.get(plan.cls)
            if factory is None:
                continue
            # The load side of the generated-code interface (SAVE_ABI): the saved field
            # names, whether each maps straight onto the class as it is (no upgrades,
            # defaults or dropped fields), the built objects.
            plain = (not plan.upgrades and not plan.defaults
                     and len(plan.setters) == plan.nfields)
            made = factory(tuple(plan.fields), plain, self.objs)
            if made is not None:
                plan.create, plan.fill, plan.create_from_record = made  # type: ignore[method-assign]

    def release(self):
        """A plan keeps its own bound methods (``fill``, ``create``): a cycle per class.
        The plans are this load's own (adapters are shared and hold none), so emptying
        them and the loader frees this load's bookkeeping now, not at a collection."""
        release_plans(self.plans)
        vars(self).clear()

    def run(self, root_value: Any) -> Any:
        """The objects of the file, and its root: the steps of the module docstring."""
        hooks = self.batch_hooks()
        deferred = self.build_records(hooks)
        if self.first:
            self.fill_batches(deferred)
        if deferred:
            self.finish_deferred(deferred, hooks)
        self.current = None
        self.check_unset_markers()
        root = self.value(root_value)
        self.filler.completed()
        self.run_loaded_hooks(sorted(hooks) if deferred else hooks)
        return root

    def build_records(self, hooks: list[int]) -> list[int]:
        """Build the records in file order; the indices of those that must wait.

        The common record is made in one call: generated code's ``from_record``, or
        the plan's ``create`` once nothing about it can be missing or unfinished. The
        rest take ``general_record``. The loop keeps what it reads per record in
        locals: it runs once per object of the file."""
        records, objs, first = self.records_only, self.objs, self.first
        early, unfinished = self.early, self.unfinished
        deferred: list[int] = []
        self.deferred = deferred
        unfilled = first            # batch objects: not filled while records are built
        # plain tuples: CPython unpacks an exact tuple fastest (a Step names the fields),
        # made for the types records have where they are few for the type table (a
        # pass over them costs less than a type's step then), else for every type
        plans, schedules, batches_unfilled = self.plans, self.schedules, bool(first)
        steps: list[Any] = [None] * len(plans)
        kinds: Any = (set(map(itemgetter(0), records)) if len(records) < 32 * len(plans)
                      else range(len(plans)))
        for t in kinds:
            steps[t] = tuple(step_of(plans[t], schedules[t], batches_unfilled, objs))
        append = objs.append
        closes_cycle = self.closes_cycle
        general = self.general_record
        after_batches = self.after_batches
        has_missing = False
        i = first
        try:
            for i, rec in enumerate(records, first):
                step = steps[rec[0]]
                plan, mutable, fill, fill_waits, hook, create, from_record, build_waits, _, \
                    after = step
                if from_record is not None and not closes_cycle[i] and not has_missing \
                        and not (early and i in early):
                    try:
                        append(from_record(rec))   # generated: resolves its references
                    except IndexError:          # an unmarked forward reference: below
                        pass
                    else:
                        if hook:
                            hooks.append(i)
                        continue
                vals: Any = None
                if closes_cycle[i]:
                    slow = True                 # refers to a later record: resolve below
                else:
                    try:
                        vals = [objs[v[0]] if v.__class__ is list else v for v in rec]
                        slow = has_missing and _has_missing(vals)
                    except IndexError:          # an unmarked forward reference
                        slow = True
                if not slow and not (early and i in early):
                    if after:
                        # built now; filled once the batch objects are (its fill reads
                        # one's length): waits as unfinished meanwhile
                        append(plan.build(vals))
                        unfinished.add(i)
                        after_batches.append((i, vals))
                        if hook:
                            hooks.append(i)
                        continue
                    # nothing to wait for: made in one call
                    if create is not None and (fill_waits is None or not (unfinished or unfilled)):
                        append(create(rec, vals))
                        if hook:
                            hooks.append(i)
                        continue
                    if not mutable and fill is None and (
                            build_waits is None or not (unfinished or unfilled)):
                        append(plan.build(vals))
                        if hook:
                            hooks.append(i)
                        continue
                has_missing = general(i, rec, step, vals, slow, has_missing, hooks)
        except BaseException:
            self.current = i
            raise
        self.current = None
        self.has_missing = has_missing
        return deferred

    def general_record(self, i: int, rec: Record, step: tuple, vals: list[Any] | None,
                       slow: bool, has_missing: bool, hooks: list[int]) -> bool:
        """Record ``i`` when it may refer ahead, to a missing object, or to one not
        finished: allocated, built or deferred, then filled or deferred. Returns whether
        objects may now be missing (a record deferred before it was built)."""
        if not self.padded:
            self.pad()
        objs, unfinished, unfilled = self.objs, self.unfinished, self.unfilled
        plan, mutable, fill, fill_waits, hook, _, _, build_waits, schedule, _ = step
        maybe_missing = False
        if slow:
            forward, built = self.forward, len(objs)
            vals = [v if v.__class__ is not list else
                    objs[v[0]] if v[0] < built else forward(v[0], i) for v in rec]
            maybe_missing = has_missing or self.forwarded_missing
        assert vals is not None      # resolved here when slow, by the loop otherwise
        waiting = bool(slow or unfinished or unfilled)
        hashes, deep = schedule.hashes, schedule.deep
        if mutable:
            obj = self.early.pop(i, None) if self.early else None
            if obj is None:
                obj = plan.allocate(rec)
            objs.append(obj)
        elif (maybe_missing and _has_missing(vals[plan.build_slice])) or (
                build_waits is not None and waiting
                and self.blocker(rec, build_waits, i, hashes, deep) is not None):
            objs.append(MISSING)
            self.deferred.append(i)
            return True
        else:
            obj = plan.build(vals)
            objs.append(obj)
        if fill is not None:
            if maybe_missing and _has_missing(vals):
                unfinished.add(i)
                self.deferred.append(i)
            elif fill_waits is not None and waiting and (self.blocker(
                    rec, fill_waits, i, hashes, deep, schedule.shallow) is not None):
                unfinished.add(i)
                if schedule.shallow and unfilled:
                    self.after_batches.append((i, vals))
                else:
                    self.deferred.append(i)
            else:
                fill(obj, vals)
                if unfinished:
                    unfinished.discard(i)
        if hook:
            hooks.append(i)
        return has_missing

    def fill_batches(self, deferred: list[int]) -> None:
        """Fill the batch objects from their columns, now that every record is built or
        waiting; the batch objects that wait for records join ``deferred``."""
        filler, unfinished = self.filler, self.unfinished
        filler.fill(self.has_missing or self.forwarded_missing)
        self.unfilled = 0
        unfinished.update(filler.pending)     # they wait for records still to build
        if filler.reading:
            self.pad()
        for k, rec in filler.reading.items():  # filled as records that read are
            self.records[k] = rec
            deferred.append(k)
            unfinished.add(k)
        # Code that runs on load never sees the loader's placeholder: an object
        # waiting for a value shows without it, as pickle shows one on a cycle.
        filler.hide_missing()
        self.fill_after_batches(deferred)

    def fill_after_batches(self, deferred: list[int]) -> None:
        """Fill the records that waited for batch objects only (``Schedule.shallow``:
        they read a batch object's length, not what it holds), now that the batches
        are filled; those whose objects still wait for records join ``deferred``."""
        after = self.after_batches
        if not after:
            return
        self.pad()
        records, objs, unfinished, plans = self.records, self.objs, self.unfinished, self.plans
        # Unless other objects are unfinished too, what these wait for is done: their
        # plans' fills wait for objects of other kinds (a list iterator, for its list).
        others = len(unfinished) > len(after)
        i = None
        try:
            for i, vals in after:
                rec = records[i]
                plan = plans[rec[0]]
                if not others or self.blocker(rec, plan.fill_finished, i, False, False,
                                              True) is None:
                    plan.fill(objs[i], vals)
                    unfinished.discard(i)
                else:
                    deferred.append(i)
        except BaseException:
            self.current = i               # the record the error is about
            raise
        self.after_batches = []

    def check_unset_markers(self) -> None:
        consumed = sum(map(getattr, self.plans, repeat("unset_slots"), repeat(0)))
        if consumed != self.unset_markers:
            raise FormatError(f"the save holds {self.unset_markers} unset-slot markers, "
                              f"{self.unset_markers - consumed} of them outside a slot field")

    def run_loaded_hooks(self, indices: list[int]) -> None:
        objs = self.objs
        cls: Any = None
        function: Any = None     # the class's hook when it is a plain function
        args: tuple[Any, ...]
        for i in indices:
            obj = objs[i]
            if type(obj) is not cls:      # objects of a class come in runs: looked up once
                cls = type(obj)
                function = class_attribute(cls, "__autosave_loaded__")
                if type(function) is not FunctionType:
                    function = None
            if function is not None:
                hook, args = function, (obj,)
            else:
                hook, args = bound_hook(obj, "__autosave_loaded__"), ()
                if hook is None:    # the plan saw one on the class: never from the file
                    raise LoadError(f"{type(obj).__qualname__}.__autosave_loaded__ is not "
                                    f"a method of its class")
            try:
                hook(*args)
            except Exception as e:
                raise LoadError(f"{type(obj).__qualname__}.__autosave_loaded__ failed: "
                                f"{describe(e)}") from e

    def batch_hooks(self) -> list[int]:
        """The indices of the batch objects whose class has ``__autosave_loaded__``."""
        hooks: list[int] = []
        start, schedules = 0, self.schedules
        for batch in self.batches:
            n = batch[1]
            if schedules[batch[0]].has_loaded_hook:
                hooks += range(start, start + n)
            start += n
        return hooks

    def blocker(self, rec: Record, part: slice, here: int, hashes: bool,
                deep: bool = False, shallow: bool = False) -> int | None:
        """The first record that rec[part] needs finished and is not, or None.

        Reading contents needs the referenced objects built and filled, and what they
        hold: while the batch objects are not filled, a record that reaches one (by
        way of records) waits for them; once they are, what it reaches further is
        ``readers.Gates``'s to wait for (``finish_deferred``). Hashing needs more
        than the keys: a key's hash may run through its fields into objects beyond it,
        so everything reachable through objects hashed by value must be done; an
        object hashed by identity ends the search, its hash never changes. Code of the
        game's that reads its parts (``deep``: a ``__setstate__``, a constructor) needs
        everything they reach done, as pickle gives it: objects on a cycle back to this
        record aside, which ``finish_deferred`` lets go ahead in post-order. A
        ``shallow`` read (a list's length) needs the objects themselves filled only.
        """
        if shallow and not hashes:
            unfinished, unfilled, obj_at = self.unfinished, self.unfilled, self.obj_at
            return next((j for j in self.targets(rec, part, here) if j != here and (
                j < unfilled or j in unfinished or obj_at(j) is MISSING)), None)
        if deep and not hashes:
            return self.deep_blocker(rec, part, here)
        unfinished, records = self.unfinished, self.records
        todo = self.targets(rec, part, here)
        unfilled = self.unfilled
        if not hashes:
            if unfilled:
                return next((j for j in todo if j != here and self.reaches_batch(j)), None)
            return next((j for j in todo if j != here and (
                self.obj_at(j) is MISSING or j in unfinished)), None)
        # batch objects built whole (value-hashed with inline fields) are final from
        # their allocation: a record's many keys of them are let go without a visit each
        first, whole = self.first, self.filler.whole_flags()
        todo = [j for j in todo if j >= first or not whole[j]]
        seen, ready = set(), self.hash_ready
        while todo:
            j = todo.pop()
            if j in seen or j in ready:
                continue
            seen.add(j)
            obj = self.obj_at(j)
            if obj is MISSING:
                return j
            hash_ = type(obj).__hash__
            if hash_ is object.__hash__ or hash_ is None:
                continue              # identity hash, or unhashable (fails on its own)
            if j in unfinished or (j < unfilled and not self.filler.whole(j)):
                return j
            if j < self.first:        # a batch object, filled: its hash is final
                continue
            inner = self.targets(records[j], ALL, j)
            if unfilled:              # a hash by value reading a batch object not filled
                k = next((k for k in inner if k < unfilled and not self.filler.whole(k)),
                         None)
                if k is not None:
                    return k
            todo.extend(inner)
        ready |= seen                 # all done: they hash by their final values
        return None

    def deep_blocker(self, rec: Record, part: slice, here: int) -> int | None:
        """The first record reachable from rec[part] that is not built or not filled,
        or None; records found done with all they reach are remembered for the load."""
        unfinished, records, first = self.unfinished, self.records, self.first
        unfilled, ready = self.unfilled, self.deep_ready
        refers_to = self.filler.refers_to
        todo = self.targets(rec, part, here)
        seen = set()
        while todo:
            j = todo.pop()
            if j == here or j in seen or j in ready:
                continue
            seen.add(j)
            if self.obj_at(j) is MISSING or j in unfinished or (
                    j < unfilled and not self.filler.whole(j)):
                return j
            todo.extend(refers_to(j) if j < first else self.targets(records[j], ALL, j))
        ready |= seen
        return None

    def reaches_batch(self, j: int) -> bool:
        """Whether object j is a batch object or reaches one through records (a
        record not built yet, or on a cycle being explored, counts as reaching one)."""
        first, memo, objs = self.first, self.reach_memo, self.objs
        whole = self.filler.whole
        if j < first:           # built whole when allocated: final, and reaches nothing
            return not whole(j)
        if j in memo:
            return memo[j] is not False
        stack: list[tuple[int, list[int] | None]] = [(j, None)]
        while stack:
            k, kids = stack.pop()
            if kids is not None:               # its children are done
                memo[k] = any(not whole(t) if t < first else memo.get(t) is not False
                              for t in kids)
                continue
            if k in memo:
                continue
            if k >= len(objs) or objs[k] is MISSING:
                memo[k] = True                 # not built: may reach anything
                continue
            memo[k] = None                     # in progress
            kids = self.targets(self.records[k], ALL, k)
            stack.append((k, kids))
            stack.extend((t, None) for t in kids if t >= first and t not in memo)
        return memo[j] is not False

    def obj_at(self, j: int) -> Any:
        objs = self.objs
        return objs[j] if j < len(objs) else self.early.get(j, MISSING)

    def value(self, v: Any) -> Any:
        if v.__class__ is list:
            n = len(self.objs)
            if len(v) != 1 or type(v[0]) is not int or not -n <= v[0] < n:
                raise FormatError(f"the root reference is malformed or out of range "
                                  f"(0..{n - 1})")
            return self.objs[v[0]]
        return v

    def resolve(self, rec: Record, here: int) -> list[Any]:
        """Resolve record ``here``'s references one by one; a reference to a record not
        reached yet allocates it early if it is mutable, else gives MISSING."""
        objs = self.objs
        built = len(objs)
        vals = [rec[0]]
        for v in islice(rec, 1, None):
            if v.__class__ is list:
                j = v[0]
                if len(v) != 1 or j.__class__ is not int:
                    raise FormatError(f"record {here}: a reference is malformed")
                if j < 0:
                    j += here
                v = objs[j] if 0 <= j < built else self.forward(j, here)
            vals.append(v)
        return vals

    def forward(self, j: int, here: int) -> Any:
        if not 0 <= j < len(self.records):
            raise FormatError(f"record {here}: reference to record {j} is out of range "
                              f"(0..{len(self.records) - 1})")
        obj = self.early.get(j)
        if obj is None:
            target = self.records[j]
            plan = self.plans[target[0]]
            if not plan.mutable:
                self.forwarded_missing = True
                return MISSING
            obj = self.early[j] = plan.allocate(target)
            self.unfinished.add(j)
        return obj

    def finish_deferred(self, deferred: list[int], hooks: list[int]) -> None:
        """Complete the records that waited (``Deferred``)."""
        self.pad()
        Deferred(self, deferred, hooks).run()

    def targets(self, rec: Record, part: slice, here: int) -> list[int]:
        """Absolute record indices of the references in rec[part]; rec is record ``here``."""
        return [target(v[0], here) for v in rec[part] if v.__class__ is list]



def load_records(types: list[Any], records: list[Record], root_value: Any, unset_markers: int = 0,
                 closes_cycle: bytearray | None = None, batches: list[Batch] | tuple = ()) -> Any:
    loader = None
    checked = CHECKED.set({False: {}, True: {}})
    try:
        loader = Loader(types, records, unset_markers, closes_cycle, batches)
        return loader.run(root_value)
    except LoadError:
        raise
    except RecursionError:
        raise FormatError("the save nests values too deeply") from None
    except Exception as e:
        where = (f"record {loader.current}" if loader and loader.current is not None
                 else "the type table" if loader is None else "the root")
        raise FormatError(f"{where} is malformed: {describe(e)}") from e
    finally:
        CHECKED.reset(checked)
        if loader is not None:
            loader.release()
