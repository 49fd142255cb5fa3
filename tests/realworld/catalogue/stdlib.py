"""Entries of the standard library: no allow() for any of them."""

import array
import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import ipaddress
import itertools
import logging
import operator
import os
import random
import re
import time
import types
import typing
import uuid
import weakref
import zoneinfo
from pathlib import PurePosixPath

import autosave

from . import Slot, entry, take

GAME_LOG = logging.getLogger("catalogue.game")     # created at import, as a game's are

stdlib = entry          # an entry that needs no library and allows nothing


@stdlib("decimal.Context", lambda c: (str(c.divide(decimal.Decimal(1), decimal.Decimal(7))),
                                      c.prec, c.rounding, c.flags[decimal.Inexact],
                                      c.traps[decimal.DivisionByZero]))
def _context():
    return decimal.Context(prec=6, rounding=decimal.ROUND_DOWN, traps=[decimal.DivisionByZero])


@stdlib("decimal.Decimal", lambda d: (str(d * 3), str(d.sqrt(decimal.Context(prec=12)))))
def _decimal():
    return decimal.Decimal("1.10")


@stdlib("fractions.Fraction", lambda f: (str(f + fractions.Fraction(1, 6)), f.limit_denominator(10)))
def _fraction():
    return fractions.Fraction(22, 7)


@stdlib("array.array", lambda a: (a.typecode, a.tolist(), a[::-1].tobytes()))
def _array():
    return array.array("d", [1.5, -2.0, 3.25])


@stdlib("re.Pattern", lambda p: (p.findall("a1 b22 c333"), p.flags, dict(p.groupindex)))
def _pattern():
    return re.compile(r"(?P<letter>[a-z])(?P<digits>\d+)", re.I)


@stdlib("collections.ChainMap", lambda s: (s.cm["hp"], _set(s.cm, "mp", 1), s.local, s.cm.maps[1] is s.defaults))
def _chainmap():
    defaults, local = {"hp": 10, "mp": 0}, {}
    return Slot(defaults=defaults, local=local, cm=collections.ChainMap(local, defaults))


def _set(mapping, key, value):
    mapping[key] = value
    return dict(mapping)


def _poke_proxy(s):
    s.defaults["hp"] = 3
    return s.ro["hp"], dict(s.ro), type(s.ro).__name__


@stdlib("types.MappingProxyType", _poke_proxy, pickle=False)
def _proxy():
    defaults = {"hp": 10}
    return Slot(defaults=defaults, ro=types.MappingProxyType(defaults))


def _cycle():
    cyc = itertools.cycle("abc")
    for _ in range(4):
        next(cyc)
    return cyc


stdlib("itertools.cycle", take(5))(_cycle)
stdlib("itertools.count", take(3))(lambda: itertools.count(5, 2))
stdlib("itertools.repeat", list)(lambda: itertools.repeat("x", 3))
stdlib("itertools.chain", list)(lambda: itertools.chain([1], (2, 3), "ab"))
stdlib("itertools.islice", list)(lambda: itertools.islice(iter(range(20)), 3, 15, 4))
stdlib("itertools.takewhile", list)(lambda: itertools.takewhile(operator.truth, iter([3, 2, 1, 0, 5])))


def _dropping():
    drop = itertools.dropwhile(operator.not_, iter([0, 0, 1, 0, 2]))
    next(drop)
    return drop


stdlib("itertools.dropwhile", list)(_dropping)


def _accumulating():
    acc = itertools.accumulate(iter([1, 2, 3, 4]), operator.mul, initial=10)
    next(acc), next(acc)
    return acc


stdlib("itertools.accumulate", list)(_accumulating)
stdlib("itertools.starmap", list)(lambda: itertools.starmap(pow, iter([(2, 3), (3, 2)])))
stdlib("itertools.compress", list)(lambda: itertools.compress(iter("abcd"), iter([1, 0, 1, 1])))
stdlib("itertools.zip_longest", list)(
    lambda: itertools.zip_longest(iter([1]), iter([2, 3]), fillvalue="-"))
stdlib("itertools.filterfalse", list)(lambda: itertools.filterfalse(None, iter([0, 1, "", "a"])))


def _grouping():
    groups = itertools.groupby(iter("aaabccdd"))
    next(groups)
    key, group = next(groups)
    return Slot(groups=groups, current=group)


def _groups(s):
    # the group in hand stays valid until the groupby moves on
    return list(s.current), [(k, list(g)) for k, g in s.groups]


stdlib("itertools.groupby", _groups)(_grouping)


def _teed():
    a, b = itertools.tee(iter(range(6)))
    next(a), next(a), next(b)
    return Slot(a=a, b=b)


stdlib("itertools.tee", lambda s: (list(s.a), list(s.b)))(_teed)


def _pairs():
    # itertools.pairwise cannot be saved (docs/types.md); its recipe over tee can
    a, b = itertools.tee(iter("abcde"))
    next(b, None)
    pairs = zip(a, b)
    next(pairs)
    return pairs


stdlib("pairwise as zip over tee", list)(_pairs)


def _combinatoric(make):
    def build():
        it = make()
        next(it), next(it)
        return it
    return build


stdlib("itertools.product", list)(_combinatoric(lambda: itertools.product("ab", range(3))))
stdlib("itertools.permutations", list)(_combinatoric(lambda: itertools.permutations("abc", 2)))
stdlib("itertools.combinations", list)(_combinatoric(lambda: itertools.combinations("abcd", 2)))
stdlib("itertools.combinations_with_replacement", list)(
    _combinatoric(lambda: itertools.combinations_with_replacement("abc", 2)))

stdlib("time.struct_time", lambda t: (tuple(t), t.tm_zone, t.tm_gmtoff, time.mktime(t)))(
    lambda: time.localtime(86400 * 365))
stdlib("os.stat_result", lambda s: (tuple(s), s.st_mtime_ns, s.st_mode))(lambda: os.stat(__file__))


def spawn(cls, n):
    return [cls.__name__] * n


class Rules:
    """Functions kept in fields, wrapped as a class body would."""

    def __init__(self):
        self.score = staticmethod(max)
        self.make = classmethod(spawn)


stdlib("staticmethod and classmethod in fields", lambda r: (
    type(r.score).__name__, r.score.__get__(r)([3, 9, 2]), type(r.make).__name__,
    r.make.__get__(None, Rules)(2)), pickle=False)(Rules)


class Charge(complex):
    """A complex number with attributes: a C value type subclassed by the game."""


def _charge():
    c = Charge(1, 2)
    c.label = "north"
    return c


stdlib("complex subclass with attributes",
       lambda c: (type(c).__name__, c * 2, c.label, abs(c)))(_charge)

T = typing.TypeVar("T")


class Box(typing.Generic[T]):
    def __init__(self, item=None):
        self.item = item


stdlib("Box[int](...) with __orig_class__", lambda b: (repr(b.__orig_class__), b.item))(
    lambda: Box[int](3))


def _logged():
    return Slot(log=GAME_LOG, root=logging.getLogger())


stdlib("logging.Logger in a field", lambda s: (
    s.log is logging.getLogger("catalogue.game"), s.log.name, s.root is logging.getLogger()))(_logged)


def _dates():
    zone = zoneinfo.ZoneInfo("Europe/Paris")
    return [datetime.datetime(2024, 3, 31, 1, 30, tzinfo=zone), datetime.date(2024, 2, 29),
            datetime.time(23, 59, 1, 5), datetime.timedelta(days=2, seconds=7),
            datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=5)))]


stdlib("datetime and zoneinfo", lambda xs: [
    (x + datetime.timedelta(hours=1)).isoformat() if isinstance(x, datetime.datetime)
    else str(x) for x in xs] + [xs[0].utcoffset(), xs[0].tzinfo.key])(_dates)


def _deque():
    q = collections.deque(range(5), maxlen=4)
    q.rotate(1)
    return q


stdlib("collections.deque", lambda q: (q.maxlen, _deque_push(q)))(_deque)


def _deque_push(q):
    q.append(9)
    return list(q)


def _defaultdict():
    d = collections.defaultdict(list)
    d["a"].append(1)
    return d


stdlib("collections.defaultdict", lambda d: (d["b"], d["a"], sorted(d), d.default_factory is list))(
    _defaultdict)


def _ordered():
    d = collections.OrderedDict.fromkeys("abcd")
    d.move_to_end("a")
    return d


stdlib("collections.OrderedDict", lambda d: (list(d), d.popitem(last=False)))(_ordered)
stdlib("collections.Counter", lambda c: (c.most_common(2), c["zzz"], c.total()))(
    lambda: collections.Counter("mississippi"))


class Suit(enum.Enum):
    HEARTS = 1
    SPADES = 2


class Perm(enum.IntFlag):
    READ = 4
    WRITE = 2


stdlib("enums", lambda xs: (xs[0] is Suit.SPADES, xs[1] == Perm.READ | Perm.WRITE,
                            repr(xs[1]), xs[2] is Suit.HEARTS))(
    lambda: [Suit.SPADES, Perm.READ | Perm.WRITE, Suit.HEARTS])


@dataclasses.dataclass
class Unit:
    name: str
    hp: int = 10
    tags: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Cell:
    x: int
    y: int


stdlib("dataclasses", lambda s: (s.units[0] is s.units[1], s.units[0], s.seen[Cell(1, 2)],
                                 dataclasses.replace(s.units[2], hp=1)))(
    lambda: Slot(units=[u := Unit("ann", tags=["a"]), u, Unit("bob", 3)],
                 seen={Cell(1, 2): "start"}))


class Token:
    def __init__(self, name):
        self.name = name


def _tokens():
    tokens = [Token(n) for n in "xyz"]
    return Slot(all=frozenset(tokens), first=tokens[0])


stdlib("frozenset of instances", lambda s: (
    sorted(t.name for t in s.all), s.first in s.all, len(s.all)))(_tokens)


@autosave.coroutine
def patrol(route):
    while True:
        for spot in route:
            heard = yield spot
            if heard:
                yield f"heard {heard} at {spot}"


def _patrolling():
    guard = patrol(["gate", "tower", "well"])
    next(guard), next(guard)
    return guard


stdlib("autosave.coroutine generator mid-run",
       lambda g: [next(g), g.send("steps"), next(g), next(g), next(g)], pickle=False)(_patrolling)


def _rng():
    r = random.Random(9)
    r.random()
    return r


stdlib("random.Random mid-sequence", lambda r: (r.random(), r.randrange(100), r.gauss(0, 1)))(_rng)

Pos = collections.namedtuple("Pos", "x y")


stdlib("namedtuple, SimpleNamespace, uuid, paths, bytearray, range, slice", lambda xs: [
    xs[0]._replace(y=5), vars(xs[1]), xs[2].hex, str(xs[3] / "b"), xs[4] + b"!",
    list(xs[5]), xs[6].indices(10)])(
    lambda: [Pos(1, 2), types.SimpleNamespace(a=1), uuid.UUID(int=7), PurePosixPath("/a"),
             bytearray(b"hi"), range(2, 11, 3), slice(1, None, 2)])


class Tally:
    def __init__(self):
        self.n = 0

    def bump(self, by=1):
        self.n += by
        return self.n


def _callables():
    c = Tally()
    step = 5

    def closure():
        nonlocal step
        step += 1
        return step
    return Slot(c=c, bound=c.bump, part=functools.partial(c.bump, 10), closure=closure,
                key=operator.attrgetter("n"), lam=lambda x: x * step)


stdlib("bound methods, partials, closures, getters", lambda s: (
    s.bound(), s.part(), s.closure(), s.closure(), s.key(s.c), s.lam(2)), pickle=False)(_callables)


def _weak():
    units = [Unit("a"), Unit("b")]
    table = weakref.WeakValueDictionary({"a": units[0], "b": units[1]})
    return Slot(units=units[:1], table=table, ref=weakref.ref(units[0]))


stdlib("weak references", lambda s: (sorted(s.table), s.ref() is s.units[0]), pickle=False)(_weak)


def _iterators():
    items = [10, 20, 30, 40]
    d = {"a": 1, "b": 2, "c": 3}
    its = Slot(items=items, li=iter(items), di=iter(d.items()), en=enumerate("xyz", 1),
               zi=zip(iter("ab"), iter(items)), ma=map(abs, iter([-1, -2, -3])),
               fi=filter(None, iter([0, 1, 0, 2])), keys=d.keys(), rv=reversed(items))
    for it in (its.li, its.di, its.en, its.ma, its.fi, its.rv):
        next(it)
    return its


stdlib("iterators over builtins", lambda s: (
    list(s.li), list(s.di), list(s.en), list(s.zi), list(s.ma), list(s.fi),
    list(s.keys), list(s.rv)), pickle=False)(_iterators)



def _addresses():
    return [ipaddress.ip_address("10.0.0.7"), ipaddress.ip_address("::1"),
            ipaddress.ip_network("192.168.0.0/24"), ipaddress.ip_network("2001:db8::/32"),
            ipaddress.ip_interface("10.1.2.3/16"), ipaddress.ip_interface("fe80::1/64")]


stdlib("ipaddress values, nothing allowed", lambda xs: [
    (str(x), x.version, str(x + 1) if hasattr(x, "packed") else str(getattr(
        x, "netmask", ""))) for x in xs])(_addresses)


def _new_logger():
    # created in the saving process only: the loading one gets it from getLogger
    return Slot(log=logging.getLogger(f"catalogue.made.{os.getpid()}"))


stdlib("a logger the loading process has not created", lambda s: (
    s.log is logging.getLogger(s.log.name), s.log.name.startswith("catalogue.made.")))(
    _new_logger)
