"""The classes of the shape benchmarks (benchmarks/shapes.py): one of each style games
write their state in, so the generator (``shapemodel.gen``) can mix them.

A package of its own so that ``autosave-codegen shapemodel`` (run from benchmarks/)
writes generated code for the classes annotations reach, as a game's build would.
"""

import collections
import dataclasses
import enum

import attrs

import autosave


class Faction(enum.Enum):
    NONE = 0
    RED = 1
    BLUE = 2
    GREEN = 3


class Mood(enum.IntEnum):
    CALM = 0
    ALERT = 1
    ANGRY = 2


Vec = collections.namedtuple("Vec", "x y")


@autosave.saveable
@dataclasses.dataclass(frozen=True)
class Pos:
    """A grid position: hashed by value, a dict key and a set member."""
    x: int
    y: int


@autosave.saveable
@attrs.frozen
class Hex:
    q: int
    r: int


@autosave.saveable
@attrs.define(eq=False, repr=False)
class Agent:
    """attrs, slotted, hashed by identity: what the batches were made for."""
    id: int
    x: float
    y: float
    hp: int
    faction: Faction
    neighbours: "list[Agent]" = attrs.Factory(list)
    tags: "list[str]" = attrs.Factory(list)


@autosave.saveable
@attrs.define(slots=False, eq=False, repr=False)
class Crate:
    """attrs with a __dict__."""
    kind: str
    weight: float
    contents: "list[Crate]" = attrs.Factory(list)


@autosave.saveable
@dataclasses.dataclass(eq=False)
class Quest:
    name: str
    stage: int
    flags: "dict[str, bool]"
    giver: "Npc | None" = None


@autosave.saveable
class Npc:
    """A plain class, as classic game code writes them: attributes set in __init__."""

    def __init__(self, name, x, y):
        self.name = name
        self.x = x
        self.y = y
        self.hp = 100
        self.room = None
        self.friends = []
        self.inventory = {}


@autosave.saveable
class Room:
    def __init__(self, name):
        self.name = name
        self.exits = {}          # direction -> Room: cycles
        self.occupants = []      # Npcs, which point back through .room


@autosave.save_root
@attrs.define(eq=False, repr=False)
class State:
    """The root the generator gives: a dict of whatever parts it drew."""
    seed: int
    parts: dict = attrs.Factory(dict)


autosave.allow(__name__)
