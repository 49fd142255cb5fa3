"""The game's data: ordinary game classes with no save code in them.

Most classes are attrs classes (slotted, as `@attrs.define` makes them); `Squad`,
`Sprite` and `ItemTemplate` are plain Python classes. autosave saves both kinds.
The only autosave-specific lines are the `@autosave.save_root` on `Level`, the
`autosave.asset(...)` calls that register static data, and one transient field.
"""

import collections
import enum
import math
import random

import attrs

import autosave

# -- static data: loaded once at startup, never part of a save ---------------------------


class Sprite:
    """Art: a plain class. Registered as an asset, so saves store only its id."""

    def __init__(self, name, frames, size):
        self.name = name
        self.frames = frames
        self.size = size

    def __repr__(self):
        return f"Sprite({self.name!r})"


class ItemTemplate:
    """What an item *is* (shared by every copy of it): also a plain-class asset."""

    def __init__(self, name, sprite, damage=0, reach=0.0, heal=0):
        self.name = name
        self.sprite = sprite
        self.damage = damage
        self.reach = reach
        self.heal = heal

    def __repr__(self):
        return f"ItemTemplate({self.name!r})"


# In a real game these come from data files. Registering them with autosave.asset means a
# save refers to "sprites/orc" by name, and a load hands back these very objects.
SPRITES = {
    name: autosave.asset(Sprite(name, frames, size), f"sprites/{name}")
    for name, frames, size in [
        ("orc", 8, 32), ("elf", 6, 24), ("dwarf", 6, 20), ("goblin", 4, 16),
        ("sword", 1, 8), ("bow", 1, 8), ("axe", 1, 8), ("potion", 2, 6),
        ("banner-red", 3, 16), ("banner-blue", 3, 16), ("banner-green", 3, 16),
    ]
}
ITEMS = {
    t.name: autosave.asset(t, f"items/{t.name}")
    for t in [
        ItemTemplate("sword", SPRITES["sword"], damage=12, reach=1.5),
        ItemTemplate("bow", SPRITES["bow"], damage=7, reach=8.0),
        ItemTemplate("axe", SPRITES["axe"], damage=16, reach=1.2),
        ItemTemplate("potion", SPRITES["potion"], heal=35),
    ]
}
WEAPONS = [ITEMS["sword"], ITEMS["bow"], ITEMS["axe"]]
RACES = [SPRITES["orc"], SPRITES["elf"], SPRITES["dwarf"], SPRITES["goblin"]]
BANNERS = [SPRITES["banner-red"], SPRITES["banner-blue"], SPRITES["banner-green"]]


# -- components ----------------------------------------------------------------------------


@attrs.define
class Position:
    x: float
    y: float

    def distance_to(self, other):
        return math.hypot(other.x - self.x, other.y - self.y)


@attrs.define
class Health:
    hp: int
    max_hp: int

    @property
    def alive(self):
        return self.hp > 0


class Mode(enum.Enum):
    IDLE = "idle"
    HUNT = "hunt"
    FLEE = "flee"


@attrs.define(eq=False)
class Brain:
    """The AI component: what the NPC wants to do next, and to whom."""
    mode: Mode = Mode.IDLE
    plan: "list[tuple]" = attrs.Factory(list)     # steps: ("move", x, y), ("attack",), ("drink",)
    target: "NPC | None" = None          # another NPC: references go everywhere, cycles too


# -- entities ------------------------------------------------------------------------------


@attrs.define(eq=False, repr=False)
class NPC:
    id: int
    name: str
    sprite: Sprite                       # an asset
    pos: Position
    health: Health
    brain: Brain
    weapon: ItemTemplate                 # an asset
    bag: "list[ItemTemplate]" = attrs.Factory(list)   # ItemTemplates (assets), repeats allowed
    squad: "Squad | None" = None         # the squad lists this NPC too: a cycle
    kills: int = 0

    def __repr__(self):
        return f"<NPC {self.id} {self.name} hp={self.health.hp}>"


class Squad:
    """A plain class: attributes set in __init__, no declarations."""

    def __init__(self, name, banner):
        self.name = name
        self.banner = banner             # an asset
        self.leader = None               # one of the members: a shared reference
        self.members = []

    def __repr__(self):
        return f"<Squad {self.name} ({len(self.members)} members)>"


@autosave.save_root
@attrs.define(eq=False, repr=False)
class Level:
    """The save root: everything reachable from here is saved."""
    rng: random.Random                   # the only source of randomness; saved mid-sequence
    npcs: "list[NPC]" = attrs.Factory(list)       # the NPCs, in update order
    by_id: "dict[int, NPC]" = attrs.Factory(dict)  # the same NPC objects, by id
    squads: "list[Squad]" = attrs.Factory(list)
    tick: int = 0
    next_id: int = 1
    log: collections.deque = attrs.Factory(lambda: collections.deque(maxlen=32))
    # Wall-clock time of the last step: useful at runtime, meaningless in a save.
    last_step_seconds: float = attrs.field(default=0.0, metadata=autosave.transient)

    def __repr__(self):
        return f"<Level tick={self.tick} npcs={len(self.npcs)}>"
