"""`autosave diff` on files built to make it slow (docs/security.md): linear in both
files' sizes, and the loader's flood check on every dict and set it builds.

Work is counted in Python bytecode instructions executed by the diff (deterministic,
unlike a clock): four times the records must cost about four times the work."""

import sys

import pytest

from autosave.compat.diff import diff
from autosave.errors import FormatError

from forge import Forge


def instructions(fn, *args):
    _traced(fn, *args)     # Python 3.12 may count no opcode of a process's first traced call
    return _traced(fn, *args)


def _traced(fn, *args):
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        result = fn(*args)
    finally:
        sys.settrace(None)
    return count, result


def many_paired_with_one(n, kind):
    """A: n distinct containers; B: n references to one container of n entries, so
    every record of A is paired with B's one big record."""
    a, b = Forge(), Forge()
    if kind == "list":
        parts = [a.rec("builtins.list", i) for i in range(n)]
        big = b.rec("builtins.list", *range(n))
    elif kind == "dict":
        parts = [a.rec("builtins.dict", i, 0) for i in range(n)]
        big = b.rec("builtins.dict", *[x for i in range(n) for x in (i, 0)])
    else:
        parts = [a.rec("builtins.set", i) for i in range(n)]
        big = b.rec("builtins.set", *range(n))
    a.rec("builtins.list", *parts)
    b.rec("builtins.list", *[big] * n)
    return a.bytes(), b.bytes()


@pytest.mark.parametrize("kind", ["list", "dict", "set"])
def test_many_records_paired_with_one_big_record_cost_linear_work(kind):
    small, _ = instructions(diff, *many_paired_with_one(400, kind))
    large, result = instructions(diff, *many_paired_with_one(1600, kind))
    assert result.total_changes >= 1600                # every pairing is still counted
    assert large < 6 * small, (small, large)           # quadratic would be 16x


def test_the_counts_are_those_of_the_full_listing():
    """Counting instead of listing past the report's limit changes no total."""
    data = many_paired_with_one(50, "list")
    assert diff(*data, limit=10).total_changes == diff(*data, limit=10 ** 6).total_changes
    listed = diff(*data, limit=10 ** 6)
    assert len(listed.changes) == listed.total_changes


def colliding_keys(n):
    """Wide ints that all share one hash (hash(int) is the value mod 2**61 - 1)."""
    return [(1 << 80) + i * ((1 << 61) - 1) for i in range(n)]


@pytest.mark.parametrize("side", ["A", "B"])
def test_keys_crafted_to_collide_are_refused(side):
    f, g = Forge(), Forge()
    f.rec("builtins.dict", *[x for k in colliding_keys(2000) for x in (k, 0)])
    g.rec("builtins.dict", 1, 0)
    data = (f.bytes(), g.bytes()) if side == "A" else (g.bytes(), f.bytes())
    with pytest.raises(FormatError, match=f"{side}: record 0 holds 2000 keys of which 2000 "
                                          f"share one hash"):
        diff(*data)


def test_a_set_of_colliding_members_is_refused():
    f = Forge()
    f.rec("builtins.set", *colliding_keys(2000))
    with pytest.raises(FormatError, match="share one hash"):
        diff(f.bytes(), f.bytes())


def test_wide_int_keys_are_shown_without_printing_them():
    f, g = Forge(), Forge()
    key = 1 << 100000                                 # 30,000 digits: str() refuses
    f.rec("builtins.dict", key, 1)
    g.rec("builtins.dict", key, 2)
    [change] = diff(f.bytes(), g.bytes()).changes
    assert change.path == "root[<int of 100001 bits>]" and (change.a, change.b) == (1, 2)
