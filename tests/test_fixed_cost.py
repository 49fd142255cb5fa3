"""What a small save and load skip, and that each skipped step is made where it matters.

A save's check that its records would load, and a load's budget pass and build loop,
look at the types the records have only: batch objects end every chain the budgets
bound, so a type whose objects are all in batches has nothing to check. These tests
show the checks still refuse what they refused, whatever the batches around them."""

import collections

import pytest

import autosave
from autosave.checks.limits import C_DEPTH, check_records
from autosave.format import kernels
from autosave.format.kernels import python_loops
from autosave.format.wire import decode
from autosave.loading.plans import plan_for, release_plans
from autosave.loading.protocol import plan_names, schedule_of

autosave.allow(__name__)

def _deque_chain(n):
    d = collections.deque()
    for _ in range(n - 1):
        d = collections.deque([d])
    return d


def _tuple_chain(n):
    t = ()
    for _ in range(n - 1):
        t = (t,)
    return t


class Holder:
    def __init__(self, value):
        self.value = value
        self.tags = {"k": [1, 2]}


def _checked(data, only_record_types):
    """check_records on a file's records, given the schedules of every type, or (a
    dict) of the types its records have only."""
    types, records, _, _, _, batches = decode(data)
    plans = [plan_for(i, e) for i, e in enumerate(types)]
    try:
        schedules = [schedule_of(p) for p in plans]
        names = plan_names(plans)
        first = sum(b[1] for b in batches)
        if only_record_types:
            used = {rec[0] for rec in records}
            schedules = {t: schedules[t] for t in used}
            names = {t: names[t] for t in used}
        check_records(schedules, records, first, names)
    finally:
        release_plans(plans)


@pytest.mark.parametrize("depth", [10, C_DEPTH - 5])
def test_the_budget_pass_reads_the_record_types_alone(depth):
    """Given only the schedules of the types records have (a dict: any other type
    asked for is a KeyError), the pass makes the same decision as with all of them."""
    root = [Holder(_deque_chain(depth)) for _ in range(3)] + [{"k": (1, 2.5)}]
    data = autosave.dumps(root)
    _checked(data, only_record_types=False)
    _checked(data, only_record_types=True)


def test_a_chain_beside_batches_is_refused_by_save_and_load_alike(monkeypatch):
    """A deque chain held by batch objects (a plain instance, a list, a dict): the save
    refuses it; a file made without the save's check is refused by the load."""
    from autosave.saving.saver import Saver
    root = [Holder(_deque_chain(C_DEPTH + 50)), {"a": 1}]
    with pytest.raises(autosave.SaveError, match="would save but not load"):
        autosave.dumps(root)
    monkeypatch.setattr(Saver, "check_loadable", lambda self, types, records: None)
    unchecked = autosave.dumps(root)
    with pytest.raises(autosave.FormatError, match="chain of"):
        autosave.loads(unchecked)
    with pytest.raises(autosave.FormatError, match="chain of"):
        _checked(unchecked, only_record_types=True)


def test_a_key_hashed_beside_batches_is_refused_at_save_time():
    root = [Holder(1), {_tuple_chain(C_DEPTH + 2): 1}]
    with pytest.raises(autosave.SaveError, match="would save but not load"):
        autosave.dumps(root)


def test_the_loops_a_save_takes_follow_python_loops_blocks():
    """``loops()`` hands out one namespace per implementation, made once: the one of
    the block open now, the import's choice again once it is closed."""
    outside = kernels.loops()
    assert all(getattr(outside, name) is fn for name, fn in kernels.CHOSEN.items())
    with python_loops():
        inside = kernels.loops()
        assert all(getattr(inside, name) is fn for name, fn in kernels.PURE.items())
        assert isinstance(inside.new_memo(), dict)
        in_python = autosave.dumps([Holder(i) for i in range(5)])
    assert kernels.loops() is outside
    assert autosave.dumps([Holder(i) for i in range(5)]) == in_python


class Base:
    pass


class Child(Base):
    def __init__(self, n):
        self.n = n


class Meta(type):
    pass


class WithMeta(metaclass=Meta):
    def __init__(self, n):
        self.n = n


@pytest.mark.parametrize("cls", [Child, WithMeta])
def test_a_kept_plan_sees_hooks_added_to_a_base_after_it_was_made(cls, monkeypatch):
    """A kept plan's facts are read again at each use, through the whole MRO (one pass
    for both hooks when the metaclass is ``type``): a loaded hook or ``__setstate__``
    added to a base since makes the plan anew."""
    from autosave.loading import plans
    entry = [f"{__name__}.{cls.__qualname__}", 1, ["n"]]
    first = plans.plan_for(0, entry)
    assert plans.schedule_of(first).has_loaded_hook is False
    base = cls.__mro__[1] if cls is Child else object
    if base is object:                       # a base of its own: set on the class
        base = cls
    seen = []
    monkeypatch.setattr(base, "__autosave_loaded__", lambda self: seen.append(self.n),
                        raising=False)
    second = plans.plan_for(0, entry)
    assert plans.schedule_of(second).has_loaded_hook is True
    assert autosave.loads(autosave.dumps([cls(3)]))[0].n == 3 and seen == [3]
    monkeypatch.setattr(base, "__setstate__", lambda self, state: None, raising=False)
    third = plans.plan_for(0, entry)
    assert plans._CACHE[(entry[0], 1, "n")][2][3] is base.__dict__["__setstate__"]
    assert third is not second
