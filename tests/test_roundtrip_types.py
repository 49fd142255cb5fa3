"""Round trips of every kind of value autosave supports.

Each test saves a small graph (through bytes and through a file), loads it back and
checks value equality, the exact type, and identity where it matters (shared objects
stay shared, classes/functions/enum members/assets come back as the very same object).
Every round trip also checks determinism: dumping the same graph twice gives the same
bytes, and ``dumps(loads(b)) == b``.
"""

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import itertools
import math
import pathlib
import random
import struct
import uuid
import weakref
import zoneinfo

import attrs
import pytest

import autosave
import helpers
from helpers import assert_isomorphic, float_bits

autosave.allow(__name__)


@autosave.save_root      # the game's own module: its classes' __reduce__ are its code
class _Game:
    pass


@pytest.fixture(params=["bytes", "file"])
def rt(request, tmp_path):
    """A round trip: dumps/loads, or save/load through a file in tmp_path."""
    if request.param == "bytes":
        return helpers.roundtrip
    n = itertools.count()
    return lambda obj: helpers.roundtrip_file(obj, tmp_path / f"save{next(n)}.asv")


# -- classes under test (module level, so a load can find them by name) -------------------


@attrs.define
class ASlots:
    x: int
    items: list = attrs.field(factory=list)
    other: object = None


@attrs.define(slots=False)
class ADict:
    x: int
    items: list = attrs.field(factory=list)


@attrs.frozen
class AFrozen:
    x: int
    name: str = "n"


@attrs.frozen(slots=False)
class AFrozenDict:
    x: int
    tags: tuple = ()


@dataclasses.dataclass
class DPlain:
    x: int
    items: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class DFrozen:
    x: int
    y: str = "y"


@dataclasses.dataclass(slots=True)
class DSlots:
    x: int
    other: object = None


@dataclasses.dataclass(frozen=True, slots=True)
class DFrozenSlots:
    x: int
    y: tuple = ()


@dataclasses.dataclass(slots=True)
class DSlotsBase:
    a: int = 0


@dataclasses.dataclass(slots=True)
class DSlotsChild(DSlotsBase):
    b: int = 1


class SBase:
    __slots__ = ("a", "b", "__weakref__")


class SChild(SBase):
    __slots__ = ("c", "__hidden")

    def hidden(self):
        return self.__hidden


class Plain:
    kind = "class attribute"

    def __init__(self, x):
        self.x = x


class WithState:
    """Saves only ``value``; ``__setstate__`` rebuilds the cache (observable)."""

    def __init__(self, value):
        self.value = value
        self.cache = f"derived from {value}"
        self.setstate_calls = 0

    def __getstate__(self):
        return {"value": self.value}

    def __setstate__(self, state):
        self.value = state["value"]
        self.cache = f"rebuilt from {state['value']}"
        self.setstate_calls = getattr(self, "setstate_calls", 0) + 1


class Reduced:
    def __init__(self, a, b):
        self.a, self.b = a, b
        self.sum = a + b

    def __reduce__(self):
        return (Reduced, (self.a, self.b))


class ReducedEx:
    def __init__(self, a):
        self.a = a

    def __reduce_ex__(self, protocol):
        return (ReducedEx, (self.a,), {"extra": self.a * 10, "me": self})


class ReducedBag(list):
    def __reduce__(self):
        return (ReducedBag, (), {"label": self.label}, iter(self))


class ReducedTable(dict):
    def __reduce__(self):
        return (ReducedTable, (), None, None, iter(self.items()))


class MyList(list):
    pass


class MyDict(dict):
    pass


class MySet(set):
    pass


class MyFrozenSet(frozenset):
    pass


class MyTuple(tuple):
    pass


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyBytes(bytes):
    pass


class MyDeque(collections.deque):
    pass


Point = collections.namedtuple("Point", "x y")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Perm(enum.Flag):
    R = 4
    W = 2
    X = 1


class Counter2:
    def __init__(self):
        self.n = 0

    def bump(self, by=1):
        self.n += by
        return self.n


def module_function(x, y=1, *, z=2):
    return (x, y, z)


def make_counter(start=0):
    count = start

    def increment():
        nonlocal count
        count += 1
        return count
    return increment


def make_shared_pair():
    total = 0

    def add(k):
        nonlocal total
        total += k
        return total

    def read():
        return total
    return add, read


def make_lambdas(k):
    return (lambda x: x * k), (lambda x: x + k)


def make_recursive():
    def countdown(n):
        return countdown(n - 1) if n else "done"
    return countdown


class Target:
    __slots__ = ("name", "__weakref__")

    def __init__(self, name):
        self.name = name


@attrs.define
class TransientAttrs:
    a: int
    scratch: list = attrs.field(factory=lambda: ["fresh"], metadata=autosave.transient)
    derived: int = attrs.field(default=attrs.Factory(lambda self: self.a * 2, takes_self=True),
                               metadata=autosave.transient)


@dataclasses.dataclass
class TransientDataclass:
    a: int
    scratch: str = dataclasses.field(default="default", metadata=autosave.transient)
    buffer: list = dataclasses.field(default_factory=list, metadata=autosave.transient)


class TransientPlain:
    __autosave_transient__ = ("cache",)
    cache = "class default"

    def __init__(self):
        self.kept = 1
        self.cache = "SECRET-TRANSIENT-PLAIN"


class Hooked:
    calls = []   # (object, what its hook saw); kept outside the object so that loading
                 # does not change the object's saved state

    def __init__(self, name):
        self.name = name
        self.peer = None
        self.table = {}
        self.table_of_keys = {}

    def __autosave_loaded__(self):
        # Everything is filled before any hook runs: the peer and the tables are complete.
        Hooked.calls.append((self, (self.peer.name, len(self.table), self in self.peer.table,
                                    HookKey(self) in self.peer.table_of_keys)))


@attrs.frozen
class HookKey:
    owner: object


# -- attrs classes and dataclasses --------------------------------------------------------


def test_attrs_slotted(rt):
    shared = [1, 2]
    a = ASlots(1, shared, other=shared)
    c = rt(a)
    assert type(c) is ASlots and c == a and c is not a
    assert c.items is c.other, "a list referenced twice must stay one list"
    c.items.append(3)
    assert c.other == [1, 2, 3] and shared == [1, 2]


def test_attrs_dict_class(rt):
    a = ADict(5, ["x"])
    a.extra = "added later"
    c = rt(a)
    assert type(c) is ADict and c == a
    assert c.extra == "added later"


def test_attrs_frozen(rt):
    items = [AFrozen(1), AFrozen(2, "b"), AFrozenDict(3, ("t",))]
    c = rt(items)
    assert [type(x) for x in c] == [AFrozen, AFrozen, AFrozenDict]
    assert c == items
    assert hash(c[0]) == hash(items[0])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        c[0].x = 9


def test_dataclasses(rt):
    shared = DSlots(1)
    graph = [DPlain(1, ["a"]), DFrozen(2), shared, DFrozenSlots(3, (1, 2)), DSlotsChild(4, 5),
             DSlots(2, other=shared)]
    c = rt(graph)
    assert [type(x) for x in c] == [type(x) for x in graph]
    assert c == graph
    assert c[5].other is c[2]
    assert not hasattr(c[2], "__dict__"), "slots=True dataclass must stay slotted"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c[1].x = 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        c[3].x = 0
    assert {c[1]: "k"}[DFrozen(2)] == "k"


def test_frozen_keys_in_dicts_and_sets(rt):
    k1, k2 = AFrozen(1), DFrozen(2)
    graph = {"d": {k1: "one", k2: "two"}, "s": {k1, k2}, "fs": frozenset([k1]), "k1": k1}
    c = rt(graph)
    assert c["d"] == graph["d"] and c["s"] == graph["s"] and c["fs"] == graph["fs"]
    assert AFrozen(1) in c["d"] and DFrozen(2) in c["s"]
    (key,) = c["fs"]
    assert key is c["k1"] and next(iter(c["d"])) is c["k1"]


# -- __slots__ and plain classes ------------------------------------------------------------


def test_slots_inherited_weakref_and_unset(rt):
    s = SChild()
    s.a = [1]
    s.c = s.a
    s._SChild__hidden = "private"
    # s.b is never set
    c = rt(s)
    assert type(c) is SChild
    assert c.a == [1] and c.c is c.a
    assert c.hidden() == "private"
    assert not hasattr(c, "b"), "an unset slot must stay unset"
    with pytest.raises(AttributeError):
        c.b
    assert weakref.ref(c)() is c, "the __weakref__ slot must still work"
    assert not hasattr(c, "__dict__")


def test_plain_classes_with_attributes_added_later(rt):
    p1, p2, p3 = Plain(1), Plain(2), Plain(3)
    p2.extra = [p1]
    p3.kind = "shadowed"
    p3.zeta, p3.alpha = 1, 2   # insertion order is kept
    c = rt([p1, p2, p3])
    assert [type(x) for x in c] == [Plain] * 3
    assert [x.x for x in c] == [1, 2, 3]
    assert not hasattr(c[0], "extra") and "extra" not in vars(c[0])
    assert c[1].extra[0] is c[0]
    assert c[0].kind == "class attribute" and "kind" not in vars(c[0])
    assert c[2].kind == "shadowed"
    assert list(vars(c[2])) == ["x", "kind", "zeta", "alpha"]


# -- __getstate__ / __reduce__ -------------------------------------------------------------


def test_getstate_setstate(rt):
    w = WithState([1, 2])
    c = rt([w, w])
    assert type(c[0]) is WithState and c[0] is c[1]
    assert c[0].value == [1, 2]
    assert c[0].cache == "rebuilt from [1, 2]"
    assert c[0].setstate_calls == 1


def test_reduce(rt):
    r = Reduced(2, 3)
    c = rt({"a": r, "b": r})
    assert type(c["a"]) is Reduced and c["a"] is c["b"]
    assert (c["a"].a, c["a"].b, c["a"].sum) == (2, 3, 5)


def test_reduce_ex_with_state_referring_back(rt):
    r = ReducedEx(4)
    c = rt(r)
    assert type(c) is ReducedEx
    assert c.a == 4 and c.extra == 40
    assert c.me is c


def test_reduce_with_list_and_dict_items(rt):
    bag = ReducedBag([1, "two", (3,)])
    bag.label = "bag"
    table = ReducedTable(a=1, b=[2])
    c = rt([bag, table])
    assert type(c[0]) is ReducedBag and list(c[0]) == [1, "two", (3,)] and c[0].label == "bag"
    assert type(c[1]) is ReducedTable and dict(c[1]) == {"a": 1, "b": [2]}


# -- subclasses of builtins ----------------------------------------------------------------


@pytest.mark.parametrize("cls, value", [
    (MyList, [1, [2]]),
    (MyDict, {"a": 1, 2: "b"}),
    (MySet, {1, 2, 3}),
    (MyFrozenSet, {"a", "b"}),
    (MyTuple, (1, "x", None)),
    (MyStr, "caf\u00e9 \ud800"),
    (MyInt, 2 ** 80),
    (MyInt, -5),
    (MyFloat, -0.0),
    (MyBytes, b"\x00\xff"),
])
def test_builtin_subclasses_keep_type_value_and_attributes(rt, cls, value):
    obj = cls(value)
    obj.tag = ["extra", obj]
    c = rt(obj)
    assert type(c) is cls
    assert c == obj
    if cls is MyFloat:
        assert float_bits(c) == float_bits(obj)
    assert c.tag[0] == "extra" and c.tag[1] is c


def test_list_and_dict_subclasses_in_a_two_cycle(rt):
    lst = MyList([1])
    d = MyDict(a=lst)
    lst.append(d)
    lst.owner = d
    d.owner = lst
    c = rt(lst)
    assert type(c) is MyList and type(c[1]) is MyDict
    assert c[1]["a"] is c and c.owner is c[1] and c[1].owner is c


def test_list_and_dict_subclasses_in_cycles(rt):
    lst = MyList()
    lst.append(lst)
    d = MyDict()
    d["me"] = d
    d["list"] = lst
    lst.owner = d
    c = rt(d)
    assert type(c) is MyDict and c["me"] is c
    assert type(c["list"]) is MyList and c["list"][0] is c["list"] and c["list"].owner is c


def test_deque_subclass(rt):
    # docs/format.md: "for subclasses of list/tuple/set/frozenset/deque, the items"
    q = MyDeque([1, 2, 3], maxlen=5)
    q.tag = "t"
    c = rt(q)
    assert type(c) is MyDeque and list(c) == [1, 2, 3] and c.maxlen == 5 and c.tag == "t"


def test_namedtuple(rt):
    p = Point(1, [2])
    c = rt([p, p])
    assert type(c[0]) is Point and c[0] == p and c[0].y == [2]
    assert c[0] is c[1]
    assert c[0]._asdict() == {"x": 1, "y": [2]}


def _self_list():
    lst = [1j]          # the complex gets a record before the list's own
    lst.append(lst)
    return lst, lambda c: c[1] is c and c[0] == 1j


def _self_dict():
    d = {"z": 1j}
    d["me"] = d
    return d, lambda c: c["me"] is c and c["z"] == 1j


def _self_plain():
    p = Plain(1j)
    p.me = p
    return p, lambda c: c.me is c and c.x == 1j


def _self_attrs():
    a = ASlots(1, [2])
    a.other = a
    return a, lambda c: c.other is c and c.items == [2]


def _self_defaultdict():
    dd = collections.defaultdict(list)
    dd["me"] = dd
    return dd, lambda c: c["me"] is c and c.default_factory is list


@pytest.mark.parametrize("make", [_self_list, _self_dict, _self_plain, _self_attrs,
                                  _self_defaultdict])
def test_object_referring_to_itself(make):
    obj, check = make()
    c = autosave.loads(autosave.dumps(obj))
    assert check(c)


def test_object_referring_to_itself_as_first_record():
    lst = []
    lst.append(lst)
    c = helpers.roundtrip(lst)
    assert c[0] is c


# -- enums --------------------------------------------------------------------------------


def test_enums(rt):
    graph = [Color.RED, Color.GREEN, Level.HIGH, Perm.R, Perm.R | Perm.W, Perm(0),
             Perm.R | Perm.W | Perm.X, {Color.RED: Level.LOW}]
    c = rt(graph)
    for x, y in zip(graph[:7], c):
        assert type(y) is type(x) and y == x
    assert c[0] is Color.RED and c[1] is Color.GREEN and c[2] is Level.HIGH and c[3] is Perm.R
    assert c[4] == Perm.R | Perm.W and Perm.W in c[4] and Perm.X not in c[4]
    assert c[5] == Perm(0) and not c[5]
    assert c[6].value == 7
    assert c[7] == {Color.RED: Level.LOW}
    assert isinstance(c[2], int) and c[2] == 2


# -- the standard library's value types -------------------------------------------------


def test_datetime_family(rt):
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    custom = datetime.timezone(datetime.timedelta(hours=-3, minutes=-30), "NST")
    values = [
        datetime.datetime(2024, 2, 29, 23, 59, 59, 999999),
        datetime.datetime(2024, 7, 1, 12, 0, tzinfo=paris),
        datetime.datetime(2023, 10, 29, 2, 30, tzinfo=paris, fold=1),
        datetime.datetime(2000, 1, 1, tzinfo=custom),
        datetime.date(1, 1, 1),
        datetime.time(23, 59, 1, 5, tzinfo=datetime.timezone.utc),
        datetime.time(1, 2, 3),
        datetime.timedelta(days=-3, seconds=5, microseconds=7),
        custom,
        datetime.timezone.utc,
    ]
    c = rt(values)
    for x, y in zip(values, c):
        assert type(y) is type(x) and y == x and repr(y) == repr(x)
    assert c[1].tzinfo is paris and c[1].utcoffset() == datetime.timedelta(hours=2)
    assert c[2].fold == 1 and c[2].utcoffset() == datetime.timedelta(hours=1)
    assert c[3].tzname() == "NST"
    assert c[5].tzinfo == datetime.timezone.utc


def test_numbers(rt):
    values = [decimal.Decimal("1.10"), decimal.Decimal("-0"), decimal.Decimal("NaN"),
              decimal.Decimal("-Infinity"), decimal.Decimal("1E+30"),
              decimal.Decimal("3.141592653589793238462643383279502884197"),
              fractions.Fraction(-7, 3), fractions.Fraction(2 ** 100, 3),
              complex(1.5, -0.0), complex(float("nan"), float("inf"))]
    c = rt(values)
    for x, y in zip(values, c):
        assert type(y) is type(x) and str(y) == str(x)
    assert c[0].as_tuple() == (0, (1, 1, 0), -2), "Decimal keeps its trailing zero"
    assert c[1].is_signed() and c[2].is_nan()
    assert c[7] == fractions.Fraction(2 ** 100, 3)
    assert float_bits(c[8].imag) == float_bits(-0.0)
    assert math.isnan(c[9].real) and c[9].imag == math.inf


def test_bytes_bytearray_range(rt):
    ba = bytearray(b"\x00mutable\xff")
    graph = [b"", b"\x00\x01" * 100, ba, ba, range(10, -10, -3), range(0)]
    c = rt(graph)
    assert type(c[1]) is bytes and c[1] == graph[1]
    assert type(c[2]) is bytearray and c[2] == ba and c[2] is c[3]
    c[2].append(1)
    assert c[3].endswith(b"\x01") and not ba.endswith(b"\x01")
    assert type(c[4]) is range and c[4] == range(10, -10, -3) and list(c[4]) == list(graph[4])
    assert c[5] == range(0)


def test_collections(rt):
    q = collections.deque([1, 2, 3], maxlen=3)
    dd = collections.defaultdict(list, {"a": [1]})
    od = collections.OrderedDict([("b", 1), ("a", 2), ("c", 3)])
    od.move_to_end("b")
    counter = collections.Counter("abracadabra")
    c = rt([q, dd, od, counter, collections.deque()])
    cq, cdd, cod, cctr, empty = c
    assert type(cq) is collections.deque and list(cq) == [1, 2, 3] and cq.maxlen == 3
    cq.append(4)
    assert list(cq) == [2, 3, 4], "maxlen must still bound the loaded deque"
    assert type(cdd) is collections.defaultdict and cdd.default_factory is list
    assert cdd == {"a": [1]}
    cdd["new"].append(5)
    assert cdd["new"] == [5]
    assert type(cod) is collections.OrderedDict and list(cod) == ["a", "c", "b"]
    cod.move_to_end("a")
    assert list(cod) == ["c", "b", "a"]
    assert type(cctr) is collections.Counter and cctr == counter and cctr["zzz"] == 0
    assert cctr.most_common(1) == [("a", 5)]
    assert empty.maxlen is None and len(empty) == 0


def test_defaultdict_with_module_function_factory(rt):
    dd = collections.defaultdict(make_counter)
    dd["x"]()
    c = rt(dd)
    assert c.default_factory is make_counter
    assert c["x"]() == 2, "the saved closure continues its count"
    assert c["y"]() == 1, "the factory builds fresh values for missing keys"


def test_uuid_and_paths(rt):
    values = [uuid.UUID("12345678-1234-5678-1234-567812345678"), uuid.uuid4(),
              pathlib.PurePosixPath("/a/b c/ü"), pathlib.PureWindowsPath(r"C:\x\y.txt"),
              pathlib.Path("relative/dir")]
    c = rt(values)
    for x, y in zip(values, c):
        assert type(y) is type(x) and y == x
    assert c[3].drive == "C:"


def test_random_continues_the_same_sequence(rt):
    rng = random.Random(1234)
    [rng.random() for _ in range(10)]
    rng.gauss(0, 1)   # leaves a pending gauss_next
    c = rt({"rng": rng})["rng"]
    assert type(c) is random.Random and c is not rng
    expected = [rng.gauss(0, 1), *[rng.random() for _ in range(5)], rng.randrange(10 ** 30),
                rng.sample(range(100), 5)]
    actual = [c.gauss(0, 1), *[c.random() for _ in range(5)], c.randrange(10 ** 30),
              c.sample(range(100), 5)]
    assert actual == expected


def test_itertools_count_continues(rt):
    counters = [itertools.count(5), itertools.count(-2, 3), itertools.count(0.5, 0.25),
                itertools.count(2 ** 70)]
    for ctr in counters:
        next(ctr)
    c = rt(counters)
    for x, y in zip(counters, c):
        assert type(y) is itertools.count
        assert [next(y) for _ in range(3)] == [next(x) for _ in range(3)]


@pytest.mark.parametrize("value", [
    2 ** 64 - 1, 2 ** 64, -(2 ** 63), -(2 ** 63) - 1, 2 ** 200 + 1, -(3 ** 150), 10 ** 1000,
])
def test_ints_beyond_64_bits(rt, value):
    c = rt([value, -value, {value: value}])
    assert c[0] == value and c[1] == -value and c[2] == {value: value}
    assert type(c[0]) is int and type(c[1]) is int


NAN_WITH_PAYLOAD = struct.unpack("<d", b"\x01\x00\x00\x00\x00\x00\xf8\x7f")[0]


def test_floats_bit_exact(rt):
    values = [float("nan"), -float("nan"), NAN_WITH_PAYLOAD, -0.0, 0.0, math.inf, -math.inf,
              5e-324, 1.7976931348623157e308, 0.1]
    c = rt(values)
    assert [float_bits(x) for x in c] == [float_bits(x) for x in values]
    assert all(type(x) is float for x in c)


def test_strings_with_surrogates_and_emoji(rt):
    values = ["\ud800", "\udfff", "a\udc80b", "😀🎮", "\x00nul", "", "é" * 1000,
              {"\ud83d": "lone high surrogate as a key"}, {"\udcff", "😀", "x"}]
    c = rt(values)
    assert c == values
    assert all(type(x) is str for x in c[:7])


# -- classes, functions, methods, closures ---------------------------------------------


def test_classes_and_module_functions_are_the_same_objects(rt):
    values = [ASlots, Plain, Color, module_function, make_counter, len, math.floor, list,
              collections.OrderedDict]
    c = rt(values)
    for x, y in zip(values, c):
        assert y is x


def test_bound_methods_act_on_the_loaded_object(rt):
    obj = Counter2()
    obj.bump()
    lst = [1]
    c = rt({"obj": obj, "bump": obj.bump, "append": lst.append, "lst": lst})
    assert c["bump"].__self__ is c["obj"]
    assert c["bump"](5) == 6
    assert c["obj"].n == 6 and obj.n == 1
    c["append"](2)
    assert c["lst"] == [1, 2] and lst == [1]


def test_bound_method_alone_brings_its_object(rt):
    obj = Counter2()
    obj.n = 41
    c = rt(obj.bump)
    assert c() == 42 and obj.n == 41


def test_partial(rt):
    obj = Counter2()
    p = functools.partial(module_function, [1], z=3)
    nested = functools.partial(p, 2)
    bump = functools.partial(obj.bump, 10)
    c = rt([p, nested, bump, obj])
    assert type(c[0]) is functools.partial and c[0].func is module_function
    assert c[0]() == ([1], 1, 3) and c[0].args == ([1],) and c[0].keywords == {"z": 3}
    assert c[1]() == ([1], 2, 3)
    assert c[2]() == 10 and c[3].n == 10
    assert c[1].func is module_function and c[1].args[0] is c[0].args[0]


def test_closure_counter_continues(rt):
    inc = make_counter(10)
    inc(), inc()
    c = rt(inc)
    assert c() == 13 and c() == 14
    assert inc() == 13, "the original keeps its own count"


def test_closures_sharing_a_cell_still_share_it(rt):
    add, read = make_shared_pair()
    add(5)
    c_add, c_read = rt((add, read))
    assert c_add.__closure__[0] is c_read.__closure__[0]
    assert c_add(2) == 7 and c_read() == 7
    assert read() == 5


def test_lambdas_defined_inside_functions(rt):
    mul, add = make_lambdas(3)
    mul2, _ = make_lambdas(5)
    c = rt([mul, add, mul2])
    assert c[0](2) == 6 and c[1](2) == 5 and c[2](2) == 10
    assert c[0].__code__ is mul.__code__ and c[1].__code__ is add.__code__


def test_recursive_closure(rt):
    f = make_recursive()
    c = rt(f)
    assert c(3) == "done"
    assert c.__closure__[0].cell_contents is c


# -- weak references ------------------------------------------------------------------


def test_weakref_alive_iff_target_saved_strongly(rt):
    strong, weak_only = Target("strong"), Target("weak only")
    graph = {"target": strong, "ref": weakref.ref(strong), "dangling": weakref.ref(weak_only)}
    c = rt(graph)
    assert type(c["ref"]) is weakref.ref and c["ref"]() is c["target"]
    assert weak_only.name == "weak only"   # alive in the game, but not saved
    assert c["dangling"]() is None


def test_weakref_saved_before_its_target(rt):
    t = Target("late")
    c = rt([weakref.ref(t), [t]])
    assert c[0]() is c[1][0]


# -- transient fields -------------------------------------------------------------------


def test_transient_fields_come_back_as_defaults(rt):
    ta = TransientAttrs(3)
    ta.scratch = ["SECRET-TRANSIENT-ATTRS"]
    ta.derived = -1
    td = TransientDataclass(4, "SECRET-TRANSIENT-DC", ["x"])
    tp = TransientPlain()
    data = autosave.dumps([ta, td, tp])
    for secret in (b"SECRET-TRANSIENT-ATTRS", b"SECRET-TRANSIENT-DC", b"SECRET-TRANSIENT-PLAIN"):
        assert secret not in data
    c = rt([ta, td, tp])
    assert c[0].a == 3 and c[0].scratch == ["fresh"] and c[0].derived == 6
    assert c[1].a == 4 and c[1].scratch == "default" and c[1].buffer == []
    assert c[2].kept == 1 and c[2].cache == "class default" and "cache" not in vars(c[2])
    c[1].buffer.append(1)
    assert TransientDataclass(0).buffer == [], "the factory gives each object its own value"


# -- assets -----------------------------------------------------------------------------


ASSET_TABLE = {"sprite": "ASSET-CONTENT-" + "x" * 200, "frames": list(range(50))}
autosave.asset(ASSET_TABLE, "test_roundtrip_types/table")


def test_assets_come_back_as_the_registered_object(rt):
    graph = {"a": ASSET_TABLE, "b": [ASSET_TABLE]}
    data = autosave.dumps(graph)
    assert b"ASSET-CONTENT" not in data
    c = rt(graph)
    assert c["a"] is ASSET_TABLE and c["b"][0] is ASSET_TABLE


# -- __autosave_loaded__ hooks --------------------------------------------------------


def test_loaded_hook_called_once_per_object_after_everything_is_filled(rt):
    a, b = Hooked("a"), Hooked("b")
    a.peer, b.peer = b, a
    a.table = {b: "x", a: "y", "s": 1}
    b.table = {a: "x"}
    a.table_of_keys = {HookKey(b): 1}
    b.table_of_keys = {HookKey(a): 2, HookKey(b): 3}
    Hooked.calls.clear()
    c = rt([a, b, a, [b, b]])
    seen = {id(obj): saw for obj, saw in Hooked.calls if obj is c[0] or obj is c[1]}
    assert len([1 for obj, _ in Hooked.calls if obj is c[0] or obj is c[1]]) == 2
    # Each hook saw its peer and both tables complete, keys hashed by their final value.
    assert seen[id(c[0])] == ("b", 3, True, True)
    assert seen[id(c[1])] == ("a", 1, True, True)


# -- everything at once ---------------------------------------------------------------


def test_kitchen_sink_is_isomorphic(rt):
    shared = [1, 2]
    inc = make_counter()
    obj = Counter2()
    lst = []
    tup = (lst, shared)
    lst.append(tup)
    graph = {
        "attrs": ASlots(1, shared), "frozen": AFrozen(2), "dc": DSlots(3, shared),
        "slots": SChild(), "plain": Plain(shared),
        "sub": MyList([shared]), "enum": Color.RED, "dt": datetime.date(2020, 1, 1),
        "rng": random.Random(7), "big": 2 ** 99, "nan": float("nan"),
        "inc": inc, "method": obj.bump, "obj": obj, "tup": tup, "set": {AFrozen(9), "s", 1},
        "asset": ASSET_TABLE, "deque": collections.deque([shared], maxlen=4),
    }
    c = rt(graph)
    assert_isomorphic(graph, c, same_objects=[ASSET_TABLE])
