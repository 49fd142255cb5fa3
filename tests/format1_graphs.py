"""The graphs saved in tests/data/format1/, format2/ and format3/: files written in
file format versions 1, 2 and 3, which every later autosave must keep loading.

The .sav files were written once each, by the autosave that wrote that format version,
with

    cd tests && python -c "import format1_graphs; format1_graphs.write('data/format1')"

and are committed; this module builds the same graphs again so test_integrity can check
that every loaded file holds exactly what was saved. Change nothing here that changes a
graph: the files cannot be regenerated in those formats any more.
"""

import collections
import dataclasses
import datetime
import decimal
import fractions
import pathlib
import random
import uuid

import attrs

import autosave


@autosave.save_root
@attrs.define
class Hero:
    name: str
    level: int
    inventory: list
    friend: "Hero | None" = None
    home: "Cottage | None" = None


@dataclasses.dataclass
class Cottage:
    owner: Hero
    rooms: dict
    tags: frozenset


class Chest:
    """A plain class: attributes set in __init__ and later."""

    def __init__(self, gold):
        self.gold = gold


class Rune:
    __slots__ = ("glyph", "power")

    def __init__(self, glyph):
        self.glyph = glyph          # power left unset


def stdlib():
    shared = [1, 2, 3]
    rng = random.Random(42)
    for _ in range(5):
        rng.random()
    loop = ["loop"]
    loop.append(loop)
    counter = collections.Counter("abracadabra")
    default = collections.defaultdict(list)
    default["a"].append(1)
    return {
        "none": None, "bools": [True, False],
        "ints": [0, -1, 2**63 - 1, -2**63, 2**64 - 1, 2**100, -2**200],
        "floats": [0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan")],
        "text": ["", "plain", "héllo wörld", "\ud800 lone surrogate", "x" * 300],
        "bytes": [b"", b"\x00\xff" * 10, bytearray(b"mutable")],
        "tuple": (1, "two", (3.0,)),
        "set": {"b", "a", "c"}, "frozenset": frozenset({3, 1, 2}),
        "shared": [shared, shared], "loop": loop,
        "when": datetime.datetime(2024, 2, 29, 12, 30, 15, 123456,
                                  tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        "date": datetime.date(1999, 12, 31), "delta": datetime.timedelta(days=3, seconds=7),
        "decimal": decimal.Decimal("3.14159265358979323846"),
        "fraction": fractions.Fraction(22, 7), "complex": complex(1.5, -2),
        "deque": collections.deque([1, 2, 3], maxlen=5),
        "ordered": collections.OrderedDict([("z", 1), ("a", 2)]),
        "counter": counter, "default": default,
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "path": pathlib.PurePosixPath("saves/slot1.sav"),
        "range": range(3, 30, 4), "rng": rng,
    }


def heroes():
    anna = Hero("Anna", 7, ["sword", Chest(120)])
    bob = Hero("Bob", 3, [Rune("ᚠ")], friend=anna)
    anna.friend = bob                                   # a cycle through two instances
    cottage = Cottage(anna, {"hall": [anna.inventory[1]], "attic": []},
                      frozenset({"cosy", "old"}))
    anna.home = bob.home = cottage
    anna.inventory[1].keys = ["brass", "iron"]          # an attribute added later
    return [anna, bob]


def chain():
    node = None
    for i in range(2000):
        node = [i, node]
    return node


def tiny():
    return 7


GRAPHS = {"stdlib": stdlib, "heroes": heroes, "chain": chain, "tiny": tiny}


def write(directory):
    """Save every graph into ``directory`` (imported, not run as __main__, so that the
    classes are saved under this module's name)."""
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, build in GRAPHS.items():
        autosave.save(out / f"{name}.sav", build())
        print(name, (out / f"{name}.sav").stat().st_size)
