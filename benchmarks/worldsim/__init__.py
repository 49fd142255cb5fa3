"""The benchmark world's classes: typical game data, attrs and plain classes.

A package of its own so that ``autosave-codegen worldsim`` (run from benchmarks/) can
write its generated code next to it, as a game's build would.
"""

import enum
import random

import attrs

import autosave


class Terrain(enum.Enum):
    GRASS = 1
    WATER = 2
    ROCK = 3
    SAND = 4


@attrs.define(eq=False, repr=False)
class Tile:
    x: int
    y: int
    terrain: Terrain
    height: float
    units: "list[Unit]" = attrs.Factory(list)   # units standing here; each points back: cycles


@attrs.define(eq=False, repr=False)
class Unit:
    id: int
    name: str
    kind: str
    x: float
    y: float
    hp: int
    speed: float
    home: Tile                           # shared: many units per tile
    tags: "list[str]" = attrs.Factory(list)        # short strings
    inventory: "list[Item]" = attrs.Factory(list)
    friends: "list[Unit]" = attrs.Factory(list)    # other units: shared references, cycles
    leader: "Unit | None" = None


class Item:
    """A plain class, as older game code often has."""

    def __init__(self, kind, weight, count, owner):
        self.kind = kind
        self.weight = weight
        self.count = count
        self.owner = owner               # back to the unit carrying it: a cycle


@autosave.save_root
@attrs.define(eq=False, repr=False)
class World:
    rng: random.Random
    grid: "list[list[Tile]]" = attrs.Factory(list)  # rows of tiles
    units: "list[Unit]" = attrs.Factory(list)
    by_name: "dict[str, Unit]" = attrs.Factory(dict)  # the same units again, by name
    tick: int = 0
