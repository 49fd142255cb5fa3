"""Format 4's batches (docs/format.md, "Batches"): what the writer puts in them, what a
load does with them, and forged batches, each refused with a FormatError that names
the batch, never loaded as something else."""

import collections
import enum

import attrs
import pytest

import autosave
from autosave.errors import FormatError, UntrustedTypeError
from autosave.format.wire import ABSENT, decode, frame, msgpack_pack

autosave.allow(__name__)


@autosave.save_root      # the game's own module: its classes' __reduce__ are its code
class Game:
    pass


@attrs.define(eq=False)
class Unit:
    name: str
    hp: int
    home: object = None
    bag: list = attrs.Factory(list)


class Plain:
    def __init__(self, x):
        self.x = x


@attrs.define(frozen=True)
class Key:                     # hashed by value: in a batch when x is inline, built
    x: object                  # whole as it is allocated; a record otherwise


class Reads:
    """Reads what it is given while loading: must see the lists filled."""

    def __init__(self, items):
        self.items = items

    def __getstate__(self):
        return {"items": self.items}

    def __setstate__(self, state):
        self.items = state["items"]
        self.total = sum(len(x) for x in state["items"])


class Built:
    def __init__(self, parts):
        self.parts = parts
        self.count = sum(map(len, parts))

    def __reduce__(self):
        return (Built, (self.parts,))


def body(data):
    types, records, root, _, _, batches = decode(data)
    return types, records, root, batches


def names(types, batches):
    return [types[b[0]][0] for b in batches]


def test_plain_instances_and_lists_are_batched_others_are_records():
    a = Unit("a", 3)
    b = Unit("b", 4, home=a, bag=[a, (1, 2), Key(1)])
    types, records, root, batches = body(autosave.dumps([a, b, Plain(1.5),
                                                         {Key((2, 3)): a}]))
    assert set(names(types, batches)) == {"builtins.list", "builtins.tuple",
                                         f"{__name__}.Unit", f"{__name__}.Plain",
                                         f"{__name__}.Key"}       # Key(1): inline only
    record_types = {types[r[0]][0] for r in records}
    # a value hash over a reference; a dict keyed by one
    assert record_types == {f"{__name__}.Key", "builtins.dict"}
    assert [r for r in records if types[r[0]][0].endswith("Key")][0][1] != (2, 3)


def test_columns_take_the_kind_their_values_need():
    units = [Unit(f"u{i}", i, home=None if i % 2 else f"s{i}") for i in range(4)]
    for u in units:
        u.bag = [units[0]]
    types, _, _, batches = body(autosave.dumps(units))
    unit = next(b for b in batches if types[b[0]][0].endswith("Unit"))
    name, hp, home, bag = unit[2:]
    assert name == [0, ["u0", "u1", "u2", "u3"]] and hp[0] == 0
    assert home == [0, ["s0", None, "s2", None]]
    assert bag[0] == 1 and len(bag[1]) == 4      # references: differences of indices


def test_setstate_and_reduce_constructors_see_the_lists_they_are_given_filled():
    shared = [[1, 2], [3]]
    graph = [Reads(shared), Built(shared), shared]
    back = autosave.loads(autosave.dumps(graph))
    assert back[0].total == 3 and back[1].count == 3
    assert back[0].items is back[1].parts is back[2]


def test_a_dict_keyed_by_value_hashed_objects_holding_batch_objects_loads():
    u = Unit("k", 1)
    graph = {Key(1): u, "u": u, (Key(2), u): [u]}
    back = autosave.loads(autosave.dumps(graph))
    assert back[Key(1)] is back["u"] and back["u"].name == "k"
    assert back[(Key(2), back["u"])] == [back["u"]]


def forged(types, records, root, batches):
    return frame(msgpack_pack([types, records, root, batches]))


UNIT = [f"{__name__}.Unit", 1, ["name", "hp", "home", "bag"]]
LIST = ["builtins.list", 1, []]


def test_a_forged_batch_with_columns_that_fit_loads():
    data = forged([UNIT, LIST], [], [0],
                  [[0, 1, [0, ["a"]], [0, [5]], [0, [None]], [1, [1]]],
                   [1, 1, [0, [1]], [2, b"\x01", [], [0]]]])
    u = autosave.loads(data)
    assert u.name == "a" and u.hp == 5 and u.bag == [u]


@pytest.mark.parametrize("batches, match", [
    ([[0, 1, [0, ["a"]]]], "must have 4 columns"),
    ([[0, 0]], "at least one"),
    ([[5, 1]], "names type 5"),
    ([[0, 1, [0, ["a"]], [0, [1]], [1, [7]], [0, [None]]]], "refers past"),
    ([[0, 1, [0, ["a"]], [0, [1]], [1, [-1]], [0, [None]]]], "refers past"),
    ([[0, 1, [0, ["a"]], [0, [1]], [1, ["x"]], [0, [None]]]], "references are not ints"),
    ([[0, 1, [0, ["a"]], [0, [1]], [0, [[0]]], [0, [None]]]], "holds a reference"),
    ([[0, 1, [0, ["a", "b"]], [0, [1]], [0, [None]], [0, [None]]]], "first column holds 2"),
    ([[0, 1, [0, ["a"]], [0, [1, 2]], [0, [None]], [0, [None]]]], "2 values for 1"),
    ([[0, 1, [0, ["a"]], [0, [1]], [2, [[0, 1]]], [0, [None]]]], "malformed column"),
    ([[0, 1, [0, ["a"]], [0, [1]], [2, b"\x00", [], [0]], [0, [None]]]], "mask does not"),
    ([[0, 1, [0, ["a"]], [0, [1]], [2, b"\x02", [], [0]], [0, [None]]]], "bits set past"),
    ([[0, 1, [0, ["a"]], [0, [1]], [2, b"\x00", [[0]], []], [0, [None]]]], "hold a reference"),
    ([[0, 1, [3, ["a"]], [0, [1]], [0, [None]], [0, [None]]]], "malformed column"),
    ([[0, 1, [0, ["a"]], [0, [1]], [0, [None]], [0, [None]]], [1, 1, [0, [2]], [0, [1]]]],
     "lengths add up to 2"),
    ([[1, 2, [0, [-1, 2]], [0, [1]]]], "non-negative"),
    # a lengths column holds ints only, whatever kind of column it is
    ([[1, 1, [0, [1.0]], [0, [1]]]], "non-negative ints"),
    ([[1, 1, [0, [True]], [0, [1]]]], "non-negative ints"),
    ([[1, 1, [0, [None]], [0, []]]], "non-negative ints"),
    ([[1, 1, [0, [ABSENT]], [0, []]]], "non-negative ints"),
    ([[1, 1, [0, [[0]]], [0, []]]], "non-negative ints"),
    ([[1, 1, [1, [0]], [0, []]]], "non-negative ints"),
    ([[1, 1, [0, [1]]]], "must have 2 columns"),
    ([[2, 1]], "not one whose objects are written in batches"),
])
def test_forged_batches_are_format_errors_naming_the_batch(batches, match):
    data = forged([UNIT, LIST, ["autosave.reduce", 1, []]], [], [0], batches)
    with pytest.raises(FormatError, match=match):
        autosave.loads(data)


def test_a_batch_of_an_untrusted_class_is_refused_before_anything_is_built():
    data = forged([["os.system", 1, ["x"]]], [], [0], [[0, 1, [0, ["echo hi"]]]])
    with pytest.raises(UntrustedTypeError):
        autosave.loads(data)


def test_records_refer_to_batch_objects_by_index_without_a_cycle_mark():
    u = Unit("a", 1)
    data = autosave.dumps((u, u))
    types, records, root, batches = body(data)
    (rec,) = records
    assert rec[1:] == [[0], [0]]            # the Unit: index 0, a batch object
    assert decode(data)[4] == bytearray(1)  # not marked as closing a cycle


def test_dicts_with_inline_keys_and_tuples_of_plain_items_are_batched():
    u = Unit("a", 1)
    graph = [{"a": u, 1: (u, 2.5)}, {(1, 2): u}, (u, [u]), ((1,), 2), {Key(3): 1}]
    data = autosave.dumps(graph)
    types, records, root, batches = body(data)
    batched = names(types, batches)
    assert "builtins.dict" in batched and "builtins.tuple" in batched
    record_names = [types[r[0]][0] for r in records]
    # keys not all inline, a tuple of a tuple: records
    assert record_names.count("builtins.dict") == 2 and "builtins.tuple" in record_names
    back = autosave.loads(data)
    assert back[0]["a"] is back[0][1][0] is back[1][(1, 2)] is back[2][0]
    assert back[2][1] == [back[2][0]] and back[3] == ((1,), 2) and back[4] == {Key(3): 1}


DICT = ["builtins.dict", 1, []]
TUPLE = ["builtins.tuple", 1, []]


@pytest.mark.parametrize("types, records, batches, match", [
    # a tuple's items: inline values and batch objects that are not tuples
    ([UNIT, TUPLE], [[0]], [[1, 1, [0, [1]], [1, [1]]]], "refers past"),
    ([UNIT, TUPLE], [], [[1, 2, [0, [1, 0]], [1, [1]]]], "is a tuple of a batch"),
    ([TUPLE], [], [[0, 1, [0, [2]], [0, [1]]]], "add up to 2"),
    ([TUPLE], [], [[0, 1, [0, [1.0]], [0, [1]]]], "non-negative ints"),
    ([DICT], [], [[0, 1, [0, [1.0]], [0, ["k"]], [0, [1]]]], "non-negative ints"),
    # a dict's keys: inline values only
    ([DICT, LIST], [], [[1, 1, [0, [0]], [0, []]], [0, 1, [0, [1]], [1, [0]], [0, [1]]]],
     "keys must be inline"),
    ([DICT], [], [[0, 1, [0, [1]], [0, ["k"]], [0, []]]], "1 keys and 0 values"),
    ([DICT], [], [[0, 1, [0, [1]], [0, ["k"]]]], "must have 3 columns"),
])
def test_forged_tuple_and_dict_batches_are_refused(types, records, batches, match):
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged(types, records, [0], batches))


def test_a_dict_batch_of_colliding_int_keys_is_refused_as_a_flood():
    keys = [i * ((1 << 61) - 1) for i in range(1, 3000)]      # one hash value, CPython
    data = forged([DICT], [], [0], [[0, 1, [0, [len(keys)]], [0, keys], [0, [0] * len(keys)]]])
    with pytest.raises(FormatError, match="share one hash"):
        autosave.loads(data)


class Box:
    """Built by its constructor, which reads the list it is given."""

    def __init__(self, items):
        self.items = items
        self.n = len(items)

    def __reduce__(self):
        return (Box, (self.items,))


class Peek:
    """Reads, in __setstate__, a field of a batch object that holds a Box."""

    def __init__(self, unit):
        self.unit = unit

    def __getstate__(self):
        return {"unit": self.unit}

    def __setstate__(self, state):
        self.unit = state["unit"]
        self.seen = state["unit"].home.n


def test_code_run_on_load_sees_batch_objects_whole_even_through_a_constructor():
    u = Unit("a", 1, home=Box([1, 2, 3]))
    back = autosave.loads(autosave.dumps([Peek(u), u, {"k": Box([u])}]))
    assert back[0].seen == 3 and back[0].unit is back[1]
    assert back[1].home.items == [1, 2, 3] and back[2]["k"].n == 1


def test_a_struct_time_and_a_datetime_are_built_from_filled_parts():
    import datetime
    import time
    t = time.gmtime(31536000)
    d = datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    back = autosave.loads(autosave.dumps([t, d, {"when": d}]))
    assert back[0].tm_zone == t.tm_zone and back[0] == t and back[1] == d
    assert back[2]["when"] is back[1]


def test_a_batch_cannot_declare_more_objects_than_its_bytes_describe():
    huge = forged([UNIT], [], [0], [[0, 10 ** 12, [0, ["a"]], [0, [1]], [0, [None]],
                                     [0, [None]]]])
    with pytest.raises(FormatError, match="first column holds 1"):
        autosave.loads(huge)
    # a class with no saved field: nothing in the file per object
    empty = forged([[f"{__name__}.Empty", 1, []]], [], [0], [[0, 10 ** 9]])
    with pytest.raises(FormatError, match="more objects than the save has bytes"):
        autosave.loads(empty)


class Empty:
    __slots__ = ()


def test_a_class_with_no_saved_field_is_batched_and_comes_back():
    back = autosave.loads(autosave.dumps([Empty(), Empty()]))
    assert type(back[0]) is Empty and back[0] is not back[1]


class Reader:
    """Built by a constructor that reads, in a dict it is given, an object that a
    constructor of its own builds."""

    def __init__(self, table):
        self.table = table
        self.n = table["box"].n

    def __reduce__(self):
        return (Reader, (self.table,))


def test_a_constructor_reading_a_batch_object_waits_for_the_values_patched_into_it():
    table = {"box": Box([1, 2])}
    back = autosave.loads(autosave.dumps([Reader(table), table]))
    assert back[0].n == 2 and back[0].table is back[1] and back[1]["box"].items == [1, 2]


class Needs:
    """A constructor that needs a Sees built first (it takes one as an argument)."""

    def __init__(self, sees, items):
        self.sees, self.items, self.n = sees, items, len(items)

    def __reduce__(self):
        return (Needs, (self.sees, self.items))


class Sees:
    """A constructor that reads a dict whose value is a Needs: built by code that needs
    this one first."""

    def __init__(self, table):
        self.table = table
        self.first = _first_needs(table)

    def __reduce__(self):
        return (Sees, (self.table,))


def _first_needs(table):
    """The Needs in table, read as a constructor may: any placeholder would show."""
    values = (table.values() if isinstance(table, dict) else table
              if isinstance(table, list) else [getattr(table, n, None) for n in ("home", "a")])
    for v in values:
        if type(v).__name__ not in ("int", "str", "NoneType", "list"):
            assert isinstance(v, Needs), f"a constructor was handed {type(v).__name__}"
            return v
    return None


@pytest.mark.parametrize("holder", ["dict", "list", "slots", "attrs"])
def test_on_a_cycle_of_constructors_code_sees_objects_without_what_is_not_built(holder):
    # Sees's constructor must run before Needs's (Needs takes it as an argument), and
    # reads what Needs fills in: as pickle does, it sees the table without it, never a
    # placeholder; once Needs is built, the table holds it, in its place.
    if holder == "dict":
        table, put, get = {"x": 1}, lambda t, v: t.__setitem__("a", v), None
    elif holder == "list":
        table, put = [1, None, 2], lambda t, v: t.__setitem__(1, v)
    elif holder == "slots":
        table, put = Unit("u", 1), lambda t, v: setattr(t, "home", v)
    else:
        table, put = Plain(1), lambda t, v: setattr(t, "a", v)
    sees = Sees.__new__(Sees)
    sees.table, sees.first = table, None
    needs = Needs(sees, [1, 2])
    put(table, needs)
    data = autosave.dumps([needs, table])
    back = autosave.loads(data)
    needs2, table2 = back
    assert needs2.sees.table is table2 and needs2.n == 2
    assert needs2.sees.first is None                      # not there yet when it ran
    if holder == "dict":
        assert list(table2.items()) == [("x", 1), ("a", needs2)]
    elif holder == "list":
        assert table2 == [1, needs2, 2]
    elif holder == "slots":
        assert table2.home is needs2 and table2.name == "u"
    else:
        assert vars(table2) == {"x": 1, "a": needs2}
    assert autosave.dumps(back) == data


class Armour:
    __slots__ = ("rating", "worn")


class Enchanted(Armour):
    """Shadows a slot of its base with a property: the column is what getattr reads."""
    __slots__ = ()

    @property
    def rating(self):
        return Armour.rating.__get__(self) * 10

    @rating.setter
    def rating(self, value):
        Armour.rating.__set__(self, value // 10)


def test_a_slot_shadowed_by_a_property_is_saved_as_getattr_reads_it():
    pieces = [Enchanted() for _ in range(3)]
    for i, piece in enumerate(pieces):
        piece.rating = 10 * i
        if i:
            piece.worn = pieces[i - 1]
    types, _, _, batches = body(autosave.dumps(pieces))
    [batch] = [b for b in batches if types[b[0]][0].endswith("Enchanted")]
    assert batch[2] == [0, [0, 10, 20]]                      # the property's values
    back = autosave.loads(autosave.dumps(pieces))
    assert [p.rating for p in back] == [0, 10, 20]
    assert not hasattr(back[0], "worn") and back[2].worn is back[1]


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


def test_a_column_meeting_new_objects_more_than_once_files_each_once():
    """A column whose objects are all new, some of them more than once (the units'
    homes; enum members in their bags) files each one once, in the order first met:
    one object in its batch, shared again on load."""
    homes = [Plain(i) for i in range(3)]
    units = [Unit(f"u{i}", i, home=homes[i % 3], bag=[Colour.RED, Colour.BLUE, Colour.RED])
             for i in range(12)]
    data = autosave.dumps(units)
    types, records, root, batches = body(data)
    counts = {types[b[0]][0]: b[1] for b in batches}
    assert counts[f"{__name__}.Plain"] == 3 and counts[f"{__name__}.Unit"] == 12
    assert counts[f"{__name__}.Colour"] == 2 and records == []
    back = autosave.loads(data)
    assert [u.home.x for u in back] == [i % 3 for i in range(12)]
    assert all(u.home is back[i % 3].home for i, u in enumerate(back))
    assert all(u.bag == [Colour.RED, Colour.BLUE, Colour.RED] for u in back)


@autosave.saveable
@attrs.frozen
class Cell:                    # slotted, hashed by value
    q: int
    r: object = None


KEY = [f"{__name__}.Key", 1, ["x"]]
CELL = [f"{__name__}.Cell", 1, ["q", "r"]]


def test_value_hashed_objects_of_inline_fields_are_built_whole_before_records_hash_them():
    keys = [Key(i) for i in range(40)] + [Key("a"), Key(None), Key(2.5)]
    cells = [Cell(i % 7, f"r{i % 3}") for i in range(50)]
    graph = {"by_key": {k: i for i, k in enumerate(keys)}, "cells": set(cells),
             "frozen": frozenset(cells[:9]), "pairs": [(cells[0], keys[0])],
             "table": {c: [c] for c in cells[:21]}, "nested": Key(Key(1))}
    data = autosave.dumps(graph)
    types, records, _, batches = body(data)
    batched = set(names(types, batches))
    assert {f"{__name__}.Key", f"{__name__}.Cell"} <= batched
    # Key(Key(1)) holds a reference: that one alone is a record
    assert [types[r[0]][0] for r in records].count(f"{__name__}.Key") == 1
    back = autosave.loads(data)
    assert back["by_key"] == graph["by_key"] and back["by_key"][Key("a")] == 40
    assert back["cells"] == set(cells) and back["frozen"] == frozenset(cells[:9])
    assert back["table"] == graph["table"] and back["nested"] == Key(Key(1))
    for c, (same,) in back["table"].items():   # one object per saved object
        assert same is c


def test_a_value_hashed_object_with_an_unset_slot_is_a_record():
    c = Cell(1)
    object.__delattr__(c, "r")
    types, records, _, batches = body(autosave.dumps([c, Cell(2)]))
    assert f"{__name__}.Cell" in names(types, batches)       # Cell(2)
    assert f"{__name__}.Cell" in {types[r[0]][0] for r in records}


def test_a_value_hashed_batch_holding_references_is_filled_later_and_hashed_then():
    """Written by no autosave, but loadable: a record hashing its objects waits until
    the batches are filled."""
    data = forged([CELL, UNIT, ["builtins.dict", 1, []]], [[2, [0], 1]], [-1],
                  [[0, 1, [0, [3]], [1, [1]]],
                   [1, 1, [0, ["u"]], [0, [1]], [0, [None]], [0, [None]]]])
    back = autosave.loads(data)
    ((cell, one),) = back.items()
    assert one == 1 and cell.q == 3 and cell.r.name == "u" and back[cell] == 1


@pytest.mark.parametrize("batches, match", [
    ([[0, 1, [0, [[0]]]]], "holds a reference"),
    ([[0, 2, [0, [1]]]], "first column holds 1"),
    ([[0, 1, [3, ["a"]]]], "malformed column"),
])
def test_forged_value_hashed_batches_are_format_errors_naming_the_batch(batches, match):
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged([KEY], [], [0], batches))


# -- namedtuples (format 6) ------------------------------------------------------------

Vec = collections.namedtuple("Vec", "x y")


class Loud(collections.namedtuple("Loud", "a b")):
    """Iterates as no tuple does: its items are read one by one, in a record."""
    __slots__ = ()

    def __iter__(self):
        return iter(("loud", "loud"))


class Tagged(collections.namedtuple("Tagged", "a")):
    pass                                     # a __dict__: fields of its own, a record


VEC = [f"{__name__}.Vec", 1, []]


def test_namedtuples_of_inline_items_are_batched_and_built_before_records_hash_them():
    vecs = [Vec(i % 9, float(i)) for i in range(60)] + [Vec("a", None), Vec(b"", True)]
    graph = {"seen": set(vecs), "by": {v: [v] for v in vecs[:30]},
             "frozen": frozenset(vecs[:5]), "pairs": [(vecs[0], 1)],
             "deep": Vec([1], Vec(1, 2)), "short": Vec._make([3, 4])}
    data = autosave.dumps(graph)
    types, records, _, batches = body(data)
    assert f"{__name__}.Vec" in names(types, batches)
    # Vec([1], ...) holds references: that one alone is a record, under the same entry
    assert [types[r[0]][0] for r in records].count(f"{__name__}.Vec") == 1
    assert [t[0] for t in types].count(f"{__name__}.Vec") == 1
    back = autosave.loads(data)
    assert back["seen"] == set(vecs) and all(type(v) is Vec for v in back["seen"])
    assert back["by"] == graph["by"] and back["frozen"] == graph["frozen"]
    assert back["deep"] == graph["deep"] and type(back["deep"].y) is Vec
    for v, (same,) in back["by"].items():     # one object per saved object
        assert same is v
    assert autosave.copy(graph) == graph


def test_tuple_subclasses_that_iterate_otherwise_or_hold_a_dict_are_records():
    loud, tagged = Loud(1, 2), Tagged(1)
    tagged.note = "x"
    types, records, _, batches = body(autosave.dumps([loud, tagged, Vec(1, 2)]))
    assert f"{__name__}.Vec" in names(types, batches)
    assert {f"{__name__}.Loud", f"{__name__}.Tagged"} <= {types[r[0]][0] for r in records}
    back = autosave.loads(autosave.dumps([loud, tagged]))
    assert type(back[0]) is Loud and tuple(tuple.__iter__(back[0])) == (1, 2)
    assert back[1] == (1,) and back[1].note == "x"


@pytest.mark.parametrize("batches, match", [
    ([[0, 1, [0, [1]], [1, [0]]]], "batch 0: a .*Vec's item in a batch is not an inline"),
    ([[0, 1, [0, [1]], [0, [ABSENT]]]], "batch 0: .*unset-slot marker"),
    ([[0, 2, [0, [1, 2]], [0, [7]]]], "batch 0"),
    ([[0, 1, [0, [1]]]], r"batch 0 \(.*Vec\) must have 2 columns, it has 1"),
    ([[0, 1, [0, [-1]], [0, []]]], "batch 0"),
])
def test_forged_namedtuple_batches_are_format_errors_naming_the_batch(batches, match):
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged([VEC], [], [0], batches))


def test_a_forged_namedtuple_batch_of_any_length_loads_as_its_record_would():
    data = forged([VEC], [], [0], [[0, 2, [0, [3, 0]], [0, [1, 2, 3]]]])
    back = autosave.loads(data)
    assert type(back) is Vec and tuple.__iter__(back).__length_hint__() == 3
    assert tuple(tuple.__iter__(back)) == (1, 2, 3)


def test_the_tools_read_a_namedtuple_batch_as_the_records_it_stands_for():
    from autosave.format.expand import records_of
    graph = [Vec(1, "a"), Vec(2.5, None), Vec(3, 4)[:1], {Vec(5, 6)}]
    types, records, root = records_of(autosave.dumps(graph))
    vec = [t[0] for t in types].index(f"{__name__}.Vec")
    assert sorted(r[1:] for r in records if r[0] == vec) == [[1, "a"], [2.5, None], [5, 6]]
    from autosave.compat.diff import diff
    changed = diff(autosave.dumps(graph), autosave.dumps([Vec(1, "b")] + graph[1:]))
    assert [c.path for c in changed.changes] == ["root[0][1]"]


# -- enum members (format 6) -----------------------------------------------------------

class Perm(enum.Flag):
    R = 4
    W = 2


class Mood(enum.IntEnum):
    CALM = 0
    ANGRY = 1
    CROSS = 1                   # an alias: the member ANGRY


MOOD = [f"{__name__}.Mood", 1, []]


def test_enum_members_by_name_are_batched_and_tuples_of_them_are_too():
    graph = {"grid": {Key(i): (Mood(i % 2), Key(i), Cell(i)) for i in range(30)},
             "alias": Mood.CROSS, "keys": {Mood.CALM: 1, Colour.RED: 2},
             "flags": [Perm.R | Perm.W, Perm.R], "pair": (Perm.R | Perm.W, Key(1))}
    data = autosave.dumps(graph)
    types, records, _, batches = body(data)
    counts = {types[b[0]][0]: b[1] for b in batches}
    assert counts[f"{__name__}.Mood"] == 2 and counts[f"{__name__}.Colour"] == 1
    assert counts["builtins.tuple"] == 30          # their items all exist when allocated
    by_record = [types[r[0] if r[0] >= 0 else ~r[0]][0] for r in records]
    # a Flag member with no name of its own is looked up by value, a record; so is a
    # tuple holding one
    assert by_record.count(f"{__name__}.Perm") == 1 and "builtins.tuple" in by_record
    back = autosave.loads(data)
    assert back == graph and back["alias"] is Mood.ANGRY
    assert back["grid"][Key(3)][0] is Mood.ANGRY and back["pair"][0] is Perm.R | Perm.W


@pytest.mark.parametrize("batches, match", [
    ([[0, 1, [1, [0]]]], "batch 0: an enum's batch holds references"),
    ([[0, 2, [0, ["CALM"]]]], "batch 0 declares 2 objects, its first column holds 1"),
    ([[0, 1, [0, [3]]]], "holds a member name"),
    ([[0, 1, [0, ["CALM"]], [0, [1]]]], r"batch 0 \(enum Mood\) must have 1 column"),
])
def test_forged_enum_batches_are_format_errors_naming_the_batch(batches, match):
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged([MOOD], [], [0], batches))


def test_a_member_gone_is_refused_from_a_batch_as_from_a_record():
    """One lookup, the record's (tests/test_error_fixes.py applies its fix)."""
    messages = []
    for data in (forged([MOOD], [], [0], [[0, 1, [0, ["SULKY"]]]]),
                 forged([MOOD], [[0, "SULKY"]], [-1], [])):
        with pytest.raises(autosave.IncompatibleSaveError, match="no member 'SULKY'") as e:
            autosave.loads(data)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


class Access(enum.Flag):
    R = 4
    W = 2
    RW = 6                      # a named combination: a member by name
    X = 1


@pytest.mark.parametrize("cls, values", [
    (Access, [Access(v) for v in range(8)]),
    (Mood, [Mood.CALM, Mood.ANGRY, Mood.CROSS, Mood(1)]),
    (Colour, list(Colour)),
])
def test_the_batch_takes_exactly_the_members_saved_by_name(cls, values):
    from autosave.model.anatomy import enum_by_name
    from autosave.saving.batchable import inline_fields
    fits = inline_fields("enum", None, cls, None)
    assert [fits(v) for v in values] == [enum_by_name(v) for v in values]
    back = autosave.loads(autosave.dumps(values))
    assert back == values and all(a is b for a, b in zip(back, values))


class Unhashed(collections.namedtuple("Unhashed", "a b")):
    __slots__ = ()
    __hash__ = None             # built at allocation all the same: never filled again


class Plainly(enum.Enum):
    A = 1
    B = 2
    __hash__ = None


def test_batches_built_at_allocation_are_whole_whatever_their_class_hashes():
    graph = [Unhashed(1, "x"), Unhashed(2.5, None), Plainly.A, Plainly.B, Plainly.A,
             (Plainly.B, Unhashed(3, 4)), {"k": Unhashed(5, 6)}]
    data = autosave.dumps(graph)
    types, _, _, batches = body(data)
    assert {f"{__name__}.Unhashed", f"{__name__}.Plainly"} <= set(names(types, batches))
    back = autosave.loads(data)
    assert back == graph and back[2] is Plainly.A and type(back[0]) is Unhashed
