"""The engine's per-reference loops (autosave.format.kernels), in Python and in C, held to one
contract (docs/speedups.md).

One suite runs against both implementations; generated inputs (forged ones for the
load's loops) must give both the same result or the same exception class. Everything
else in the suite compares them too: every save is made a second time with the Python
loops (conftest.py) and must give the same bytes, and the mutation fuzzer loads every
forged file with both (test_mutation_fuzz.py). What could crash the interpreter runs
in a subprocess.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave.format import kernels
from helpers import assert_leaves_nothing
from autosave.format.kernels import python_loops

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = sorted(kernels.PURE)

try:
    from autosave import _speedups
except ImportError:                    # no C compiler where autosave was installed
    _speedups = None

IMPLEMENTATIONS = [pytest.param(kernels.PURE, id="Python"),
                   pytest.param({**{name: getattr(_speedups, name, None) for name in NAMES},
                                 "new_memo": getattr(_speedups, "Memo", None)},
                                id="C", marks=pytest.mark.skipif(
                                    _speedups is None, reason="autosave._speedups not built"))]


@pytest.fixture(params=IMPLEMENTATIONS)
def k(request):
    """One implementation's kernels, by name: k["look_up"](...)."""
    return request.param


class Node:
    pass


# -- the contract, against each implementation --------------------------------------------


def test_kinds_is_the_set_of_types(k):
    n = Node()
    assert k["kinds"]([1, "a", n, 2, None, n, 3.0]) == {int, str, Node, type(None), float}
    assert k["kinds"](()) == set()
    assert k["kinds"](iter([True, 1])) == {bool, int}


def test_first_kinds_are_the_distinct_types_in_order(k):
    assert k["first_kinds"]([Node(), 1, Node(), "a", 2, None]) == [Node, int, str, type(None)]
    assert k["first_kinds"]([]) == []


def fresh(name):
    """A str equal to name that is not the same object (as a key made at run time)."""
    copy = "".join([name[:1], name[1:]])
    assert copy == name and copy is not name
    return copy


def test_shapes_are_the_key_tuples_of_the_instance_dicts(k):
    a, b, c, d = Node(), Node(), Node(), Node()
    a.key = b.key = d.key = 1
    c.other, c.key = 1, 2                # c: ("other", "key")
    assert k["shapes"]([a, b, d]) == ([("key",)], None)
    assert k["shapes"]([a, c, b, c]) == ([("key",), ("other", "key")], [0, 1, 0, 1])
    e = Node()
    e.__dict__[fresh("key")] = 3         # a's shape, by an equal key
    assert k["shapes"]([a, e, c, e]) == ([("key",), ("other", "key")], [0, 0, 1, 0])
    assert k["shapes"]([]) == ([], None)


def test_split_separates_inline_items_from_references(k):
    n = Node()
    mask, inline, refs = k["split"]([1, n, "a", n, None], frozenset({int, str, type(None)}))
    assert (mask, inline, refs) == (b"\x00\x01\x00\x01\x00", [1, "a", None], [n, n])
    assert k["split"]((), frozenset()) == (b"", [], [])


def test_look_up_gives_cells_and_the_distinct_missing_objects_in_order(k):
    a, b, c = Node(), Node(), Node()
    table = {a: ("A",)}
    cells, missing = k["look_up"](table, [b, a, c, b, a])
    assert cells == [None, ("A",), None, None, ("A",)]
    assert missing == [b, c] and missing[0] is b
    assert k["look_up"](table, [a, a]) == ([("A",), ("A",)], [])
    assert k["look_up"](table, []) == ([], [])


@pytest.mark.parametrize("as_given", [list, tuple, iter])
def test_look_up_of_objects_all_new_gives_them_as_they_are(k, as_given):
    """None known: the column itself, repeats and all (file_all files each once)."""
    a, b = Node(), Node()
    objs = as_given([b, a, b])
    cells, missing = k["look_up"]({}, objs)
    assert cells == [None] * 3 and list(missing) == [b, a, b]
    assert missing is objs if as_given is not iter else type(missing) is list
    objs = as_given([b, a, b])
    keys, cells, missing = k["look_up_ids"]({}, objs)
    assert cells == [None] * 3 and list(map(id, missing)) == [id(b), id(a), id(b)]
    assert missing is objs if as_given is not iter else type(missing) is list


@pytest.mark.parametrize("memo_type", ["dict", "its own"])
def test_look_up_ids_keys_by_identity_even_for_equal_objects(k, memo_type):
    x, y = [1], [1]                     # equal, distinct, unhashable
    memo = {} if memo_type == "dict" else k["new_memo"]()
    memo[id(x)] = [7]
    keys, cells, missing = k["look_up_ids"](memo, [x, y, y, x])
    assert cells == [[7], None, None, [7]]
    assert len(missing) == 1 and missing[0] is y
    if type(memo) is dict:              # a dict's keys are the ids
        assert keys == [id(x), id(y), id(y), id(x)]
    memo[id(y)] = [8]                   # what meeting y does; then the keys find both
    assert k["fill_missing"](memo, keys, cells) == [[7], [8], [8], [7]]


def test_file_all_gives_each_object_its_reference(k):
    a, b = Node(), Node()
    table = {}
    assert k["file_all"](table, [a, b], [a, b], 5) is None
    assert table == {a: -6, b: -7}
    memo = k["new_memo"]()
    keys = k["look_up_ids"](memo, [a, b])[0]      # ids, or for a Memo the objects
    assert k["file_all"](memo, keys, (a, b), 0) is None
    assert sorted(memo.items()) == sorted({id(a): -1, id(b): -2}.items())
    assert k["file_all"](memo, [], [], 9) is None
    assert len(memo) == 2


def test_file_all_files_a_repeated_object_once_and_gives_the_distinct_ones(k):
    a, b, c = Node(), Node(), Node()
    table = {}
    distinct = k["file_all"](table, [b, a, b, c, a], [b, a, b, c, a], 3)
    assert distinct == [b, a, c] and distinct[0] is b
    assert table == {b: -4, a: -5, c: -6}
    memo = k["new_memo"]()
    keys = k["look_up_ids"](memo, [c, c, a])[0]
    assert k["file_all"](memo, keys, [c, c, a], 0) == [c, a]
    assert sorted(memo.items()) == sorted({id(c): -1, id(a): -2}.items())
    with pytest.raises(ValueError):
        k["file_all"]({}, [a, b], [a], 0)


def test_fill_missing_looks_up_what_the_first_lookup_missed(k):
    table = {"a": 1, "b": 2, "c": 3}
    assert k["fill_missing"](table, ["a", "c", "b"], [1, None, None]) == [1, 3, 2]
    with pytest.raises(KeyError):
        k["fill_missing"](table, ["a", "z"], [1, None])


def test_list_columns_are_the_lengths_then_the_items(k):
    assert k["list_columns"]([[1, 2], [], (3,), ["x"]]) == [[2, 0, 1, 1], [1, 2, 3, "x"]]
    assert k["list_columns"]([]) == [[], []]


def test_differences_map_cells_through_the_tail(k):
    tail = [0, 1, 2, 3, 4, 5, 30, 20, 10]   # tail[-1] = 10, tail[-3] = 30, tail[5] = 5
    assert k["differences"]([-1, -3, -2], tail) == [10, 20, -10]      # batch objects'
    assert k["differences"](iter([[5], -1, [0]]), tail) == [5, 5, -10]   # and records'
    assert k["differences"]([[5], [-1]], tail) == [5, 5]
    assert k["differences"]([], tail) == []


@pytest.mark.parametrize("cells, error", [
    ([-1, (-1,)], TypeError),           # a cell is an int or a list, never a tuple
    ([[5], "x"], TypeError), ([[None]], TypeError), ([[[1]]], TypeError),
    ([-1, []], IndexError), ([9], IndexError), ([[-10]], IndexError), ([2 ** 70], IndexError),
])
def test_differences_refuse_what_is_not_a_cell(k, cells, error):
    with pytest.raises(error):
        k["differences"](cells, list(range(9)))


def test_resolve_refs_sums_differences_and_picks_objects(k):
    objs = ["a", "b", "c"]
    assert k["resolve_refs"]([2, -1, 0, -1], objs) == ([2, 1, 1, 0], ["c", "b", "b", "a"])
    assert k["resolve_refs"]([True, True], objs) == ([1, 2], ["b", "c"])
    assert k["resolve_refs"]([], objs) == ([], [])


@pytest.mark.parametrize("diffs, error", [
    ([3], IndexError), ([-1], IndexError), ([1, -2], IndexError), ([2**64], IndexError),
    ([2**70, -2**70], IndexError), ([-2**63, 2**63], IndexError), ([2**63 - 1, 1], IndexError),
    ([0.0], TypeError), (["1"], TypeError), ([None], TypeError), ([5, 1.5], TypeError),
    ([1, [1]], TypeError)])
def test_resolve_refs_refuses_what_a_forged_column_may_hold(k, diffs, error):
    with pytest.raises(error):
        k["resolve_refs"](diffs, ["a", "b", "c"])


def test_merge_mixed_interleaves_by_the_mask(k):
    assert k["merge_mixed"](b"\x00\x01\x01\x00", ["i", "j"], ["R", "S"]) == ["i", "R", "S", "j"]
    assert k["merge_mixed"](b"", [], []) == []


@pytest.mark.parametrize("mask, inline, refs", [
    (b"\x00\x01", ["i"], []), (b"\x00", ["i", "j"], []), (b"\x02", [], []),
    (b"\x02\x00", ["i"], ["R"]), (b"\x01\x01", [], ["R"])])
def test_merge_mixed_refuses_a_mask_that_does_not_match(k, mask, inline, refs):
    with pytest.raises(ValueError):
        k["merge_mixed"](mask, inline, refs)


@pytest.mark.slow
def test_no_kernel_keeps_a_reference_to_what_it_was_given(k):
    """Leaks show as memory that stays traced after the results are dropped."""
    objs = [Node() for _ in range(50)]
    table = {o: -i for i, o in enumerate(objs[:25])}
    memo = {id(o): -i for i, o in enumerate(objs[:25])}
    own_memo = k["new_memo"]()
    own_memo.update(memo.items())
    tail = list(range(100))
    filled = [Slotted() for _ in range(10)]
    for i, o in enumerate(filled):
        o.a = i
    shaped = [Node() for _ in range(10)]
    for o in shaped:
        o.p, o.q = [], "x"
    calls = [lambda: k["kinds"](objs), lambda: k["look_up"](table, objs),
             lambda: k["first_kinds"](objs + [1, "a"]),
             lambda: k["shapes"](objs),
             lambda: k["fill_slots"]([Slotted.a, Slotted.b], [Slotted()] * 3,
                                     [objs[:3], objs[3:6]]),
             lambda: k["fill_lists"]([[], []], [2, 3], objs[:5]),
             lambda: k["fill_attributes"](objs[:5], ("p", "q"), [objs[5:10], objs[10:15]]),
             lambda: k["slot_columns"]([Slotted.a, Slotted.b], filled, None),
             lambda: k["list_columns"]([objs[:3], (), tuple(objs[3:9])]),
             lambda: k["fill_missing"](table, objs[:25], [None] * 25),
             lambda: k["file_all"]({}, list(map(id, objs)), objs, 7),
             lambda: k["file_all"]({}, objs + objs[:3], objs + objs[:3], 7),
             lambda: k["dict_columns"](shaped, ("p", "q")),
             lambda: k["split"](objs + [1, "a"], frozenset({int})),
             lambda: k["look_up_ids"](memo, objs),
             lambda: k["file_all"](own_memo.__class__(), k["look_up_ids"](own_memo, objs)[0],
                                   objs, 7),
             lambda: k["look_up_ids"](own_memo, objs),
             lambda: k["differences"](list(table.values()), tail),
             lambda: k["resolve_refs"]([1] * 40, objs),
             lambda: k["merge_mixed"](b"\x00\x01" * 20, objs[:20], objs[20:40])]
    bad = [lambda: k["resolve_refs"]([1] * 40 + [99], objs),
           lambda: k["resolve_refs"]([1, "x"], objs),
           lambda: k["merge_mixed"](b"\x00\x02", objs[:1], objs[1:2]),
           lambda: k["fill_slots"]([Slotted.a], [Slotted()], [objs[:2]]),
           lambda: k["fill_attributes"]([Slotted()], ("a",), [objs[:1]]),
           lambda: k["dict_columns"](shaped, ("p", "r")),
           lambda: k["fill_missing"](table, objs[20:30], [None] * 10)]
    def once():
        for call in calls:
            call()
        for call in bad:
            try:
                call()
            except (IndexError, KeyError, TypeError, ValueError):
                pass
            else:
                raise AssertionError("a bad input was taken")

    assert_leaves_nothing(once)


class Slotted:
    __slots__ = ("a", "b")


def test_fill_slots_sets_every_object_from_its_column(k):
    objs = [Slotted(), Slotted()]
    k["fill_slots"]([Slotted.a, Slotted.b], objs, [[1, 2], ("x", "y")])
    assert [(o.a, o.b) for o in objs] == [(1, "x"), (2, "y")]
    k["fill_slots"]([], objs, [])


@pytest.mark.parametrize("descriptors, columns, error", [
    ([Slotted.a], [[1]], ValueError),                     # a column too short
    ([Slotted.a], [[1, 2], [3, 4]], ValueError),          # a column too many
    ([property(lambda s: 1)], [[1, 2]], TypeError),       # not a slot
    ([Node.__init__], [[1, 2]], TypeError)])
def test_fill_slots_refuses_what_is_not_one_slot_per_column(k, descriptors, columns, error):
    with pytest.raises(error):
        k["fill_slots"](descriptors, [Slotted(), Slotted()], columns)


def test_fill_slots_refuses_an_object_of_another_class(k):
    with pytest.raises(TypeError):
        k["fill_slots"]([Slotted.a], [Node()], [[1]])


def test_slot_columns_read_every_slot_unset_ones_as_absent(k):
    objs = [Slotted(), Slotted(), Slotted()]
    objs[0].a, objs[0].b, objs[1].b, objs[2].a = 1, 2, 3, 4
    columns = k["slot_columns"]([Slotted.a, Slotted.b], objs, "ABSENT")
    assert list(map(list, columns)) == [[1, "ABSENT", 4], [2, 3, "ABSENT"]]
    assert k["slot_columns"]([], objs, None) == []
    assert list(map(list, k["slot_columns"]([Slotted.a], [], None))) == [[]]


def test_slot_columns_refuse_what_is_not_a_slot(k):
    with pytest.raises(TypeError):
        k["slot_columns"]([property(lambda s: 1)], [Slotted()], None)


def test_dict_columns_read_each_key_of_the_shape(k):
    a, b = Node(), Node()
    a.x, a.y = 1, 2
    b.x, b.y = 3, 4
    assert list(map(list, k["dict_columns"]([a, b], ("x", "y")))) == [[1, 3], [2, 4]]
    c = Node()
    c.y, c.x = 5, 6                      # the same keys in another order: read by key
    assert list(map(list, k["dict_columns"]([a, c], ("x", "y")))) == [[1, 6], [2, 5]]
    d = Node()
    d.__dict__[fresh("x")], d.y = 7, 8  # an equal key that is another object
    assert list(map(list, k["dict_columns"]([d], ("x", "y")))) == [[7], [8]]


@pytest.mark.parametrize("attrs", [{"x": 1}, {"x": 1, "y": 2, "z": 3}, {"x": 1, "z": 2}])
def test_dict_columns_refuse_attributes_changed_since_the_shape(k, attrs):
    a, b = Node(), Node()
    a.x, a.y = 1, 2
    b.__dict__.update(attrs)
    with pytest.raises(ValueError):
        k["dict_columns"]([a, b], ("x", "y"))


def test_fill_attributes_sets_each_field_in_each_dict(k):
    objs = [Node(), Node(), Node()]
    objs[1].old = "kept"
    k["fill_attributes"](objs, ("b", "a"), [[1, 2, 3], ["x", "y", "z"]])
    assert [vars(o) for o in objs] == [{"b": 1, "a": "x"}, {"old": "kept", "b": 2, "a": "y"},
                                       {"b": 3, "a": "z"}]
    assert list(vars(objs[0])) == ["b", "a"]          # in the order of the fields
    k["fill_attributes"](objs, ("a", "a"), [[0, 0, 0], [7, 8, 9]])   # the last one wins
    assert [o.a for o in objs] == [7, 8, 9]
    k["fill_attributes"]([Slotted()], (), [])          # no field: nothing is touched


class Guarded:
    """Refuses attributes through __setattr__, and has a property named like a field:
    a fill writes the __dict__ under both (the contract), never through them."""
    def __setattr__(self, name, value):
        raise AssertionError("a fill went through __setattr__")

    @property
    def shown(self):
        return "the property"


class Shadowing:
    """A property over a field, with no __setattr__ of its own."""
    @property
    def shown(self):
        return "the property"

    @shown.setter
    def shown(self, value):
        raise AssertionError("a fill went through the property")


class GuardedSlots(Slotted):
    __slots__ = ()

    def __setattr__(self, name, value):
        raise AssertionError("a fill went through __setattr__")


class ShadowedSlots(Slotted):
    __slots__ = ()

    @property
    def a(self):
        return "the property"

    @a.setter
    def a(self, value):
        raise AssertionError("a fill went through the property")


@pytest.mark.parametrize("classes", [[Guarded] * 4, [Shadowing] * 4,
                                     [Node, Guarded, Node, Shadowing]])
def test_fill_attributes_writes_the_dict_under_any_setattr_or_descriptor(k, classes):
    objs = [cls() for cls in classes]
    k["fill_attributes"](objs, ("shown", "b"), [[1, 2, 3, 4], list("wxyz")])
    assert [vars(o) for o in objs] == [{"shown": i, "b": c} for i, c in zip(range(1, 5), "wxyz")]


@pytest.mark.parametrize("cls", [GuardedSlots, ShadowedSlots])
def test_fill_slots_calls_the_slot_under_any_setattr_or_shadowing_property(k, cls):
    objs = [cls(), cls(), Slotted()]
    k["fill_slots"]([Slotted.a, Slotted.b], objs, [[1, 2, 3], list("xyz")])
    assert [(Slotted.a.__get__(o), o.b) for o in objs] == [(1, "x"), (2, "y"), (3, "z")]


@pytest.mark.parametrize("objs, fields, columns, error", [
    ([Node()], ("a",), [], ValueError),                 # no column for the field
    ([Node(), Node()], ("a",), [[1]], ValueError),      # a column too short
    ([Slotted()], ("a",), [[1]], TypeError),            # no __dict__
    ([Node()], ([],), [[1]], TypeError),                # a field that cannot be a key
])
def test_fill_attributes_refuses_what_does_not_fit(k, objs, fields, columns, error):
    with pytest.raises(error):
        k["fill_attributes"](objs, fields, columns)


def test_fill_frames_gives_each_object_its_own_copy_of_the_template(k):
    objs = [Node(), Node(), Node()]
    objs[1].old = "replaced"
    template = {"a": None, "b": None, "c": "unbound"}
    k["fill_frames"](objs, template, ("b", "a"), [[1, 2, 3], ["x", "y", "z"]])
    assert [vars(o) for o in objs] == [{"a": a, "b": b, "c": "unbound"}
                                       for a, b in zip("xyz", [1, 2, 3])]
    assert list(vars(objs[0])) == ["a", "b", "c"]      # the template's order
    vars(objs[0])["c"] = 5
    assert template == {"a": None, "b": None, "c": "unbound"} and objs[1].c == "unbound"
    k["fill_frames"](objs, template, ("a", "a"), [[0, 0, 0], [7, 8, 9]])   # the last wins
    assert [o.a for o in objs] == [7, 8, 9] and [o.b for o in objs] == [None] * 3
    k["fill_frames"]([], template, ("a",), [[]])


class WithSetattr:
    def __setattr__(self, name, value):
        raise AssertionError("a fill went through __setattr__")


@pytest.mark.parametrize("objs, template, fields, columns, error", [
    ([Node()], {"a": 0}, ("a",), [], ValueError),                # no column for the field
    ([Node(), Node()], {"a": 0}, ("a",), [[1]], ValueError),     # a column too short
    ([Node()], {"a": 0}, ("b",), [[1]], ValueError),             # not in the template
    ([Node()], {1: 0}, (1,), [[1]], ValueError),                 # a field not a str
    ([Node()], [("a", 0)], ("a",), [[1]], TypeError),            # no dict to copy
    ([Slotted()], {"a": 0}, ("a",), [[1]], TypeError),           # no __dict__
    ([Node(), WithSetattr()], {"a": 0}, ("a",), [[1, 2]], TypeError),   # own __setattr__
])
def test_fill_frames_refuses_what_does_not_fit_before_touching_anything(
        k, objs, template, fields, columns, error):
    with pytest.raises(error):
        k["fill_frames"](objs, template, fields, columns)
    assert all(not vars(o) for o in objs if hasattr(o, "__dict__"))


def test_fill_lists_extends_each_list_by_its_run(k):
    lists = [[], [], []]
    k["fill_lists"](lists, [2, 0, 1], ["a", "b", "c"])
    assert lists == [["a", "b"], [], ["c"]]


# -- the two implementations, compared on generated inputs ---------------------------------

needs_c = pytest.mark.skipif(_speedups is None, reason="autosave._speedups not built")


def outcome(fn, *args):
    """What a call gives: its result with the type of every value in it (True == 1, but
    a True where the other gives 1 is a disagreement), or the class of what it raised."""
    try:
        return "ok", typed(fn(*args))
    except (IndexError, TypeError, ValueError, OverflowError) as e:
        return "raised", type(e)


def typed(value):
    if type(value) in (list, tuple):
        return type(value), [typed(v) for v in value]
    return type(value), value


POOL = [Node() for _ in range(6)] + [[1], [1], (2,)]
inline = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                   st.text(max_size=3), st.binary(max_size=3))
column_items = st.one_of(inline, st.sampled_from(POOL))


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(column_items, max_size=40), st.sets(st.integers(0, len(POOL) - 1)))
def test_save_loops_agree(column, known):
    assert kernels.PURE["kinds"](column) == _speedups.kinds(column)
    assert kernels.PURE["first_kinds"](column) == _speedups.first_kinds(column)
    inline_types = frozenset(map(type, column[::2]))
    assert kernels.PURE["split"](column, inline_types) == _speedups.split(column, inline_types)
    hashable = [o for o in column if isinstance(o, Node)]
    # a value None is what get() gives for a missing key: both take it as missing
    table = {POOL[i]: None if i % 5 == 0 else -i - 1 for i in known if isinstance(POOL[i], Node)}
    assert outcome(kernels.PURE["look_up"], table, hashable) == \
        outcome(_speedups.look_up, table, hashable)
    memo = {id(POOL[i]): None if i % 7 == 0 else [i] for i in known}
    py, c = kernels.PURE["look_up_ids"](memo, column), _speedups.look_up_ids(memo, column)
    assert py[:2] == c[:2] and list(map(id, py[2])) == list(map(id, c[2]))
    for obj in column:                  # what meeting the missing ones does
        memo.setdefault(id(obj), [0])
    filed_py, filed_c = {}, {}          # the column's objects, some repeated, filed
    assert kernels.PURE["file_all"](filed_py, hashable, hashable, len(known)) == \
        _speedups.file_all(filed_c, hashable, tuple(hashable), len(known))
    assert filed_py == filed_c
    assert kernels.PURE["fill_missing"](memo, py[0], py[1]) == \
        _speedups.fill_missing(memo, c[0], c[1])
    lists = [column[:i] for i in range(0, len(column), 3)] + [tuple(column)]
    assert kernels.PURE["list_columns"](lists) == _speedups.list_columns(lists)


# More classes than the loops remember by address (csrc/kinds.c, TYPE_CACHE), and
# classes whose metaclass hashes and compares them by name: the sets the loops ask run
# Python code, and must be asked exactly as often as the answers need.
class _ByName(type):
    def __eq__(cls, other):
        return isinstance(other, _ByName) and cls.__name__ == other.__name__

    def __hash__(cls):
        return hash(cls.__name__)


MANY = [type(f"K{i}", (), {})() for i in range(20)] + \
    [_ByName("Twin", (), {})(), _ByName("Twin", (), {})()]


@needs_c
@settings(max_examples=FUZZ or 200, **SETTINGS)
@given(st.lists(st.one_of(inline, st.sampled_from(MANY)), max_size=200),
       st.lists(st.sampled_from(MANY), max_size=12))
def test_save_loops_agree_past_the_types_they_remember(column, inline_objs):
    assert kernels.PURE["kinds"](column) == _speedups.kinds(column)
    assert kernels.PURE["first_kinds"](column) == _speedups.first_kinds(column)
    inline_types = frozenset(map(type, inline_objs)) | {int, str}
    assert kernels.PURE["split"](column, inline_types) == _speedups.split(column, inline_types)


class Index:
    """Not an int, but indexes a list as one."""
    def __init__(self, i):
        self.i = i

    def __index__(self):
        return self.i


cells = st.one_of(st.integers(-14, 14), st.integers(-14, 14).map(lambda i: [i]),
                  st.sampled_from([2 ** 63, [-2 ** 63 - 1], [2 ** 70], -2 ** 70]),  # past any index
                  st.sampled_from([True, [False], Index(3), [Index(-2)], (1,), [], "x",   # forged
                                   [(1,)], 1.0, None, [None, 1]]))


@pytest.mark.slow
@needs_c
@settings(max_examples=FUZZ or 200, **SETTINGS)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["alpha", "beta", "gamma", 1]),
                                  st.booleans()), unique_by=lambda t: t[0], max_size=3),
                max_size=12))
def test_shapes_agree(key_lists):
    objs = []
    for keys in key_lists:
        obj = Node()
        for key, made in keys:
            obj.__dict__[fresh(key) if made and type(key) is str else key] = None
        objs.append(obj)
    assert kernels.PURE["shapes"](objs) == _speedups.shapes(objs)


@needs_c
@settings(max_examples=FUZZ or 200, **SETTINGS)
@given(st.lists(st.tuples(st.one_of(st.none(), inline), st.one_of(st.none(), inline),
                          st.booleans()), max_size=20))
def test_column_reads_agree(rows):
    """Slots set or unset, and __dict__s of one shape, some in another key order."""
    slotted, dicts = [], []
    for a, b, swapped in rows:
        obj = Slotted()
        if a is not None:
            obj.a = a
        if b is not None:
            obj.b = b
        slotted.append(obj)
        plain = Node()
        for key, value in (("q", b), ("p", a)) if swapped else (("p", a), ("q", b)):
            setattr(plain, key, value)
        dicts.append(plain)
    descriptors = [Slotted.a, Slotted.b]
    as_lists = lambda columns: list(map(list, columns))
    assert as_lists(kernels.PURE["slot_columns"](descriptors, slotted, "A")) == \
        as_lists(_speedups.slot_columns(descriptors, slotted, "A"))
    assert as_lists(kernels.PURE["dict_columns"](dicts, ("p", "q"))) == \
        as_lists(_speedups.dict_columns(dicts, ("p", "q")))
    # and filled back, field by field, into objects some of which hold attributes
    columns = kernels.PURE["dict_columns"](dicts, ("p", "q"))
    filled = {}
    for name, fill in (("py", kernels.PURE["fill_attributes"]),
                       ("c", _speedups.fill_attributes)):
        objs = [Node() for _ in dicts]
        for obj, (_, _, swapped) in zip(objs, rows):
            if swapped:
                obj.q = "before"
        fill(objs, ("q", "p"), columns[::-1])
        filled[name] = [list(vars(o).items()) for o in objs]
    assert filled["py"] == filled["c"]


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(cells, max_size=40), st.permutations(range(12)))
def test_differences_agree(column, tail):
    tail = list(tail)                   # cells up to 14 away either way: some fall outside
    assert outcome(kernels.PURE["differences"], column, tail) == \
        outcome(_speedups.differences, column, tail)


extreme = st.one_of(st.integers(-2**70, 2**70), st.sampled_from(
    [2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**62, -2**62, 2**64, True, False]))


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(cells, max_size=20), st.lists(extreme, min_size=12, max_size=12))
def test_differences_agree_on_tails_past_64_bits(column, tail):
    """Indices no save reaches, but both loops must give the same: Python's
    subtraction, with no signed overflow in the C (undefined behaviour)."""
    assert outcome(kernels.PURE["differences"], column, tail) == \
        outcome(_speedups.differences, column, tail)


@needs_c
def test_resolve_refs_give_ints_for_true_and_false():
    for diffs in ([True], [True, True], [False], [True, False, True]):
        assert outcome(kernels.PURE["resolve_refs"], diffs, ["a", "b", "c"]) == \
            outcome(_speedups.resolve_refs, diffs, ["a", "b", "c"])
        assert all(type(i) is int for i in kernels.PURE["resolve_refs"](diffs, "abc")[0])


forged_differences = st.lists(st.one_of(
    st.integers(-4, 4), st.integers(-2**70, 2**70), st.booleans(), st.floats(),
    st.none(), st.text(max_size=2), st.just(2**63), st.just(-2**63)), max_size=30)


@pytest.mark.slow
@needs_c
@settings(max_examples=FUZZ or 500, **SETTINGS)
@given(forged_differences, st.integers(0, 8))
def test_load_loops_agree_on_forged_references(diffs, n):
    objs = [f"o{i}" for i in range(n)]
    assert outcome(kernels.PURE["resolve_refs"], diffs, objs) == \
        outcome(_speedups.resolve_refs, diffs, objs)


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.binary(max_size=20), st.integers(0, 20), st.integers(0, 20))
def test_load_loops_agree_on_forged_masks(mask, n_inline, n_refs):
    args = (mask, [f"i{j}" for j in range(n_inline)], [f"r{j}" for j in range(n_refs)])
    assert outcome(kernels.PURE["merge_mixed"], *args) == outcome(_speedups.merge_mixed, *args)


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.integers(-2, 4), max_size=8), st.integers(0, 12),
       st.sampled_from([0, 1, 2**63, 2**64, True]))
def test_fill_lists_checks_the_lengths_it_is_given(lengths, n_items, odd):
    """The C never reads past the items, whatever the lengths: it fills only when they
    are ints >= 0 (bools count, as in Python) adding up to the items, and then as the
    Python does; the loader's check_lengths is stricter still (no bools)."""
    lengths = [*lengths, odd] if odd else lengths
    items = [f"i{j}" for j in range(n_items)]
    if not (all(isinstance(m, int) and m >= 0 for m in lengths) and sum(lengths) == n_items):
        with pytest.raises(ValueError):
            _speedups.fill_lists([[] for _ in lengths], lengths, items)
        return
    c, py = [[] for _ in lengths], [[] for _ in lengths]
    _speedups.fill_lists(c, lengths, items)
    kernels.PURE["fill_lists"](py, lengths, items)
    assert c == py


@needs_c
@settings(max_examples=FUZZ or 60, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.text(max_size=3)),
                max_size=60))
def test_whole_saves_and_loads_agree(edges):
    """A generated graph gives the same bytes, and loads to the same graph, with
    either implementation (beside the check every save in the suite makes)."""
    nodes = [Node() for _ in range(6)]
    for node in nodes:
        node.items, node.name = [], ""
    for a, b, name in edges:
        nodes[a].items.append(nodes[b])
        nodes[a].items.append(name)
        nodes[b].name = name
    root = {"nodes": nodes, "pairs": [(n, n.name) for n in nodes]}
    data = autosave.dumps(root)
    with python_loops():
        assert autosave.dumps(root) == data
        back = autosave.loads(data)
        assert autosave.dumps(back) == data
    assert autosave.dumps(autosave.loads(data)) == data


autosave.allow(__name__)


# -- which implementation runs ---------------------------------------------------------------


def test_the_extension_is_built_where_a_compiler_is():
    """The extension is optional; where autosave was installed with a C compiler, its
    absence is a broken build, not a fallback."""
    if os.environ.get("AUTOSAVE_PUREPYTHON"):
        assert kernels.IMPLEMENTATION == "Python"
        return
    if not shutil.which(sysconfig.get_config_var("CC").split()[0] or "cc"):
        pytest.skip("no C compiler here")
    assert _speedups is not None and kernels.IMPLEMENTATION == "C"
    assert kernels.look_up is _speedups.look_up


def run(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_autosave_purepython_runs_the_python_loops_to_the_same_bytes():
    code = """
        import autosave
        from autosave.format import kernels
        class Node: pass
        autosave.allow("__main__")
        nodes = [Node() for _ in range(100)]
        for i, n in enumerate(nodes):
            n.next, n.data = nodes[(i * 7) % 100], [i, nodes[i // 2], (i, str(i))]
        data = autosave.dumps(nodes)
        assert autosave.dumps(autosave.loads(data)) == data
        print(kernels.IMPLEMENTATION, data.hex())
        """
    pure = run(code, AUTOSAVE_PUREPYTHON="1")
    default = run(code, AUTOSAVE_PUREPYTHON="")
    assert pure.returncode == 0 and default.returncode == 0, pure.stderr + default.stderr
    assert pure.stdout.split()[0] == "Python"
    assert pure.stdout.split()[1] == default.stdout.split()[1]


@needs_c
def test_code_run_by_a_hash_cannot_pull_the_column_from_under_a_c_loop():
    """A key's __hash__ or __eq__ may run anything, emptying the list being walked (the
    engine's own columns hold objects hashed by identity, but the loops promise safety
    for any): the C loops walk a copy, so every object gets its cell."""
    code = """
        from autosave import _speedups

        class Evil:
            def __init__(self, victim):
                self.victim = victim
            def __hash__(self):
                self.victim.clear()
                return 1
            def __eq__(self, other):
                self.victim.clear()
                return self is other

        objs = []
        objs += [Evil(objs) for _ in range(1000)]
        cells, missing = _speedups.look_up({Evil([]): -1}, objs)
        print(len(cells), len(missing), len(objs), missing is objs)  # all new: objs itself
        cells, missing = _speedups.look_up({Evil([]): -1}, tuple(Evil(objs) for _ in range(9)))
        print(len(cells), len(missing))
        """
    done = run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1000", "0", "0", "True", "9", "9"]


def test_python_loops_blocks_may_overlap_and_the_import_choice_comes_back():
    """Blocks opened in two threads can close in either order (a save in a thread)."""
    first, second = python_loops(), python_loops()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)         # not the last opened
    assert kernels.look_up is kernels.PURE["look_up"]
    second.__exit__(None, None, None)
    assert all(getattr(kernels, name) is fn for name, fn in kernels.CHOSEN.items())


@needs_c
def test_a_del_run_by_a_slot_set_cannot_pull_a_column_from_under_the_c_loop():
    """Setting a slot frees what it held, which may run __del__, which may empty the
    column being read: the C reads only within the column as it is now."""
    code = """
        from autosave import _speedups

        class S:
            __slots__ = ("a",)

        column = []

        class Shrinker:
            def __del__(self):
                column.clear()

        objs = [S() for _ in range(100)]
        objs[0].a = Shrinker()            # replaced first, then freed
        column += range(100)
        try:
            _speedups.fill_slots([S.a], objs, [column])
        except ValueError as e:
            print("refused", e)
        """
    done = run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused")


@autosave.saveable(name="test_kernels.Upgraded", version=2)
class Upgraded:
    def __init__(self, a):
        self.a = a


@autosave.upgrade("test_kernels.Upgraded", from_version=1)
def _upgraded_from_1(fields):
    return fields


@pytest.mark.parametrize("difference", [1, True])
def test_a_true_reference_difference_loads_alike_with_both_loops(difference):
    """msgpack's true in a batch's reference column counts as 1 in both loops; with
    the Python loops it once stayed a bool and a class with upgrade hooks refused it."""
    from autosave.format.wire import frame, msgpack_pack
    data = frame(msgpack_pack([
        [["test_kernels.Upgraded", 1, ["a"]], ["builtins.list", 1, []]], [], [0],
        [[0, 1, [1, [difference]]], [1, 1, [0, [0]], [0, []]]]]))
    made = []
    for python in (False, True):
        if python:
            with python_loops():
                made.append(autosave.loads(data))
        else:
            made.append(autosave.loads(data))
    assert [(type(m), m.a) for m in made] == [(Upgraded, [])] * 2


# -- one list of kernels, and no stale build ----------------------------------------------

def test_the_kernel_table_is_what_both_implementations_export():
    # kernels.def is the one list: every kernel has its Python and its C
    assert kernels.NAMES and set(kernels.NAMES) <= set(kernels.PURE)
    if _speedups is not None:
        exported = {name for name in dir(_speedups) if callable(getattr(_speedups, name))}
        assert exported == {*kernels.NAMES, "Memo"}


def _fake_checkout(tmp_path):
    from autosave.format.sources import KERNEL_TABLE, sources_digest
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "columns.c").write_text("/* a kernel */\n")
    table = tmp_path / KERNEL_TABLE
    table.parent.mkdir(parents=True)
    table.write_text(f"KERNEL_O({kernels.NAMES[0]}, \"doc\")\n")
    built = tmp_path / "autosave" / "_speedups.so"
    built.write_bytes(b"")
    fake = SimpleNamespace(__file__=str(built), SOURCES=sources_digest(tmp_path), Memo=object,
                           **{name: len for name in kernels.NAMES})
    return fake


def test_a_build_in_a_checkout_whose_sources_changed_is_refused(tmp_path):
    fake = _fake_checkout(tmp_path)
    assert kernels.build_problem(fake) is None
    (tmp_path / "csrc" / "columns.c").write_text("/* a kernel, edited */\n")
    problem = kernels.build_problem(fake)
    assert problem is not None and "rebuild it (pip install -e .)" in problem
    assert "AUTOSAVE_PUREPYTHON=1" in problem


def test_a_build_lacking_a_kernel_is_refused(tmp_path):
    fake = _fake_checkout(tmp_path)
    del fake.__dict__[kernels.NAMES[-1]]
    assert kernels.NAMES[-1] in kernels.build_problem(fake)


def test_an_installed_build_has_no_sources_to_compare(tmp_path):
    fake = _fake_checkout(tmp_path)
    fake.SOURCES = "built elsewhere"
    shutil.rmtree(tmp_path / "csrc")            # a wheel: no checkout beside it
    assert kernels.build_problem(fake) is None


@pytest.mark.skipif(_speedups is None, reason="autosave._speedups not built")
def test_the_extension_in_use_matches_its_sources():
    assert kernels.build_problem(_speedups) is None


@needs_c
@settings(max_examples=FUZZ or 100, **SETTINGS)
@given(st.lists(st.sampled_from("abcd"), max_size=4), st.integers(0, 5), st.data())
def test_fill_frames_agree(fields, n, data):
    template = {"a": 0, "b": None, "c": "x", "d": 1.5}
    columns = [data.draw(st.lists(inline, min_size=n, max_size=n)) for _ in fields]
    results = []
    for fill in (kernels.PURE["fill_frames"], _speedups.fill_frames):
        objs = [Node() for _ in range(n)]
        fill(objs, template, tuple(fields), columns)
        results.append([typed(list(vars(o).items())) for o in objs])
    assert results[0] == results[1]
