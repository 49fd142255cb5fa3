"""The load protocol: what the loader asks of a *plan* (a type entry's way of making its
records' objects), and the scheduling facts it reads from one, named once.

A plan is an adapter (``autosave/adapters``) or a class's plan (``plans.py``). It makes
objects with three calls, and describes itself with a handful of facts that decide
*when* the loader may make those calls (docs/format.md, "Reading"):

* ``allocate(rec)`` an empty object, for a mutable type, filled later;
* ``build(vals)`` the object from its record's values (immutable types);
* ``fill(obj, vals)`` completes what ``allocate`` made;
* optionally ``record_reader(objs)``: a create-from-record bound to the load's built
  objects, which resolves what it needs of a record itself (a coroutine record's
  function and values, not its names).

Plans declare the facts as attributes (an adapter's class attributes, see
``adapters.base.Adapter``); ``schedule_of`` reads them here, once per plan, into a
frozen ``Schedule`` with names and enums instead of magic values. The loop
(``rebuild``) and the budgets (``limits``) read schedules, never a plan's attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from ..checks.limits import Hashing

ALL = slice(1, None)       # every part of a record (position 0 is its type index)


@dataclass(frozen=True, slots=True)
class Schedule:
    """When the loader may make a type's objects: the facts of one plan."""
    mutable: bool              # allocated first, filled later (may close cycles)
    has_fill: bool             # has a fill step
    reads_parts: bool          # build or fill reads what the parts hold: held back
                               # until the batch objects are filled
    deep: bool                 # runs the game's code on its parts (__setstate__, a
                               # constructor): waits for all they reach, as pickle
    hashes: bool               # hashes some parts (keys, members)
    has_loaded_hook: bool      # the class has __autosave_loaded__
    build_slice: slice         # the parts a build needs built
    build_finished: slice | None   # parts that must be finished (filled) before build
    fill_finished: slice | None    # parts that must be finished before fill
    shallow: bool              # fill_finished parts need only be filled themselves, not
                               # what they hold (a list iterator reads its list's length)
    hashing: Hashing           # what hashing one of its objects visits
    c_dealloc_levels: int      # 0, or the C stack one nesting level takes to free
                               # (CPython frees it by unchecked C recursion)
    # (fill waits, build waits, after batches) while the batch objects are filled (0)
    # and while they are not (1): what ``step_of`` asks of every load, worked out once
    waits: tuple[tuple[Any, Any, bool], tuple[Any, Any, bool]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "waits", tuple(
            (self.waits_to_fill(unfilled), self.waits_to_build(unfilled),
             unfilled and self.shallow and not self.mutable and self.has_fill
             and self.waits_to_build(True) is None)
            for unfilled in (False, True)))

    def waits_to_fill(self, batches_unfilled: bool) -> slice | None:
        """The parts a fill must find finished. While batch objects are not filled, a
        plan that reads its parts must find all of them finished (what they hold may
        be a batch object)."""
        if (self.fill_finished is not None or not batches_unfilled
                or not self.reads_parts or not self.has_fill):
            return self.fill_finished
        return ALL

    def waits_to_build(self, batches_unfilled: bool) -> slice | None:
        """The parts a build must find finished (as ``waits_to_fill``)."""
        if (self.build_finished is not None or not batches_unfilled
                or not self.reads_parts or self.mutable):
            return self.build_finished
        return self.build_slice


class LoadPlan(Protocol):
    """What the loader calls on a plan (``allocate`` for mutable types, ``build`` for
    the others, ``fill`` where ``has_fill``)."""

    def allocate(self, rec: list[Any]) -> Any: ...

    def build(self, vals: list[Any]) -> Any: ...

    def fill(self, obj: Any, vals: list[Any]) -> None: ...


def schedule_of(plan: Any) -> Schedule:
    """A plan's facts, read once per plan: an adapter's for the process (they are
    fixed when it is registered), a class plan's for its load."""
    schedule = plan.__dict__.get("_schedule")
    if schedule is None:
        schedule = plan._schedule = _read_schedule(plan)
    return schedule


_HASHING = tuple(Hashing)


def _read_schedule(plan: Any) -> Schedule:
    dealloc = getattr(plan, "c_dealloc", False)
    return Schedule(
        mutable=bool(plan.mutable),
        has_fill=bool(plan.has_fill),
        reads_parts=bool(getattr(plan, "reads_parts", True)),
        deep=bool(getattr(plan, "deep", False)),
        hashes=bool(plan.hashes),
        has_loaded_hook=bool(plan.has_loaded_hook),
        build_slice=getattr(plan, "build_slice", ALL),
        build_finished=plan.build_finished,
        fill_finished=plan.fill_finished,
        shallow=bool(getattr(plan, "shallow", False)),
        hashing=_HASHING[getattr(plan, "hash_kind", 0)],
        c_dealloc_levels=0 if dealloc is False else int(dealloc),
    )


def plan_names(plans: list[Any]) -> list[str]:
    """The type names errors about records name (an adapter's, or its class's)."""
    return [plan_name(p) for p in plans]


def plan_name(plan: Any) -> str:
    return str(getattr(plan, "name", None) or getattr(getattr(plan, "schema", None), "name",
                                                       "?"))


class LazyNames:
    """``plan_names(plans)`` as a table each name of which is read when an error needs
    it: a load that refuses nothing reads none."""

    __slots__ = ("plans",)

    def __init__(self, plans: list[Any]) -> None:
        self.plans = plans

    def __getitem__(self, t: int) -> str:
        return plan_name(self.plans[t])


class Step(NamedTuple):
    """A type's entry in the build loop (``Loader.build_records``): the schedule's facts
    resolved for this load, with the plan's bound calls, unpacked once per record."""
    plan: Any
    mutable: bool
    fill: Any                  # plan.fill, or None: nothing to fill
    fill_waits: slice | None   # parts a fill must find finished
    hook: bool                 # has __autosave_loaded__
    create: Any                # allocate-and-fill in one call, or None
    from_record: Any           # generated code's create-from-record, or None
    build_waits: slice | None  # parts a build must find finished
    schedule: Schedule
    after_batches: bool        # built in its turn, filled once the batch objects are
                               # (a shallow fill while they are not filled yet)


def step_of(plan: Any, schedule: Schedule, batches_unfilled: bool,
            objs: list[Any] | None = None) -> Step:
    """``objs``: the load's built objects, for a plan that reads its records itself
    (``record_reader(objs)``: a create-from-record bound to them, as generated code's)."""
    fill_waits, build_waits, after_batches = schedule.waits[batches_unfilled]
    from_record = getattr(plan, "create_from_record", None)
    if from_record is None and objs is not None:
        reader = getattr(plan, "record_reader", None)
        if reader is not None:
            from_record = reader(objs)
    return _make_step((plan, schedule.mutable, plan.fill if schedule.has_fill else None,
                       fill_waits, schedule.has_loaded_hook, getattr(plan, "create", None),
                       from_record, build_waits, schedule, after_batches))


_make_step = Step._make
