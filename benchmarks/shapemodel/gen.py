"""Game states for the shape benchmarks: a seeded random generator, and named workloads.

``random_state(seed, objects)`` draws a state of about ``objects`` objects from every
class style of ``shapemodel`` (attrs slotted, with a __dict__ and frozen; dataclasses
frozen and plain; plain classes; namedtuples; enums) crossed with container mixes
(JSON-like nested dicts and lists of primitives, tuples of positions, sets and
frozensets of objects, dicts keyed by value-hashed objects), with objects shared
between parts and cycles through plain classes. Same seed, same state.

``WORKLOADS`` are the fixed shapes a game's state is commonly made of, one each, sized
by ``objects`` too: ``WORKLOADS[name](objects)`` gives ``(root, pickle_root)``, where
``pickle_root`` is the same state as pickle can hold it (the coroutines' state machine).
"""

import random

import autosave

from . import Agent, Crate, Faction, Hex, Mood, Npc, Pos, Quest, Room, State, Vec

WORDS = ["sword", "shield", "potion", "herb", "coin", "rope", "torch", "gem", "bread",
         "arrow", "scroll", "key", "ring", "cloak", "boots", "lamp"]
DIRECTIONS = ["north", "south", "east", "west", "up", "down"]


class Builder:
    """Draws the parts of one state, counting the objects it makes."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.count = 0
        self.agents: list = []       # objects later parts may share
        self.positions: list = []
        self.npcs: list = []

    def made(self, n: int = 1) -> None:
        self.count += n

    # -- primitives and JSON-like documents ---------------------------------------------

    def primitive(self):
        rng = self.rng
        kind = rng.randrange(7)
        if kind == 0:
            return rng.randrange(-1000, 100_000)
        if kind == 1:
            return round(rng.uniform(-100, 100), rng.randrange(1, 6))
        if kind == 2:
            return rng.choice(WORDS)
        if kind == 3:
            return f"{rng.choice(WORDS)}-{rng.randrange(1000)}"
        if kind == 4:
            return rng.random() < 0.5
        if kind == 5:
            return None
        return rng.randrange(100)

    def document(self, depth: int = 0):
        """A nested dict or list of primitives, as a quest database or an inventory
        loaded from JSON would be."""
        rng = self.rng
        self.made()
        width = rng.randrange(1, 8)
        if rng.random() < 0.6:
            return {rng.choice(WORDS) if rng.random() < 0.7 else f"k{i}":
                    self.document(depth + 1) if depth < 3 and rng.random() < 0.3
                    else self.primitive() for i in range(width)}
        return [self.document(depth + 1) if depth < 3 and rng.random() < 0.25
                else self.primitive() for _ in range(width)]

    # -- class styles --------------------------------------------------------------------

    def agents_part(self):
        rng = self.rng
        group = [Agent(len(self.agents) + i, rng.uniform(0, 500), rng.uniform(0, 500),
                       rng.randrange(1, 100), rng.choice(list(Faction)))
                 for i in range(rng.randrange(5, 40))]
        shared = rng.sample(WORDS, 3)            # one tags list held by several agents
        for a in group:
            a.neighbours = rng.sample(group, min(len(group), rng.randrange(0, 5)))
            a.tags = shared if rng.random() < 0.3 else rng.sample(WORDS, rng.randrange(3))
        self.agents += group
        self.made(3 * len(group))
        return group

    def crates_part(self):
        rng = self.rng

        def crate(depth):
            self.made(2)
            c = Crate(rng.choice(WORDS), round(rng.uniform(0, 50), 2))
            if depth < 2:
                c.contents = [crate(depth + 1) for _ in range(rng.randrange(3))]
            return c
        return [crate(0) for _ in range(rng.randrange(2, 10))]

    def position(self):
        rng = self.rng
        x, y = rng.randrange(-50, 50), rng.randrange(-50, 50)
        kind = rng.randrange(4)
        if self.positions and rng.random() < 0.2:
            return rng.choice(self.positions)          # shared
        self.made()
        p = Pos(x, y) if kind == 0 else Hex(x, y) if kind == 1 else \
            Vec(float(x), float(y)) if kind == 2 else (x, y)
        self.positions.append(p)
        return p

    def positions_part(self):
        """A path: a tuple of positions; a visited set; a frozen set of hexes."""
        rng = self.rng
        self.made(3)
        path = tuple(self.position() for _ in range(rng.randrange(2, 20)))
        visited = set(path)
        hexes = frozenset(Hex(rng.randrange(20), rng.randrange(20))
                          for _ in range(rng.randrange(1, 8)))
        self.made(len(hexes))
        return [path, visited, hexes]

    def keyed_part(self):
        """Dicts keyed by value-hashed objects: a map, a faction table, a tuple index."""
        rng = self.rng
        self.made(3)
        grid = {self.position(): rng.choice(WORDS) for _ in range(rng.randrange(2, 20))}
        factions = {f: rng.randrange(100) for f in rng.sample(list(Faction), 2)}
        moods = [rng.choice(list(Mood)) for _ in range(rng.randrange(1, 5))]
        return {"grid": grid, "factions": factions, "moods": moods}

    def sets_part(self):
        rng = self.rng
        self.made(2)
        out = [set(rng.sample(WORDS, rng.randrange(1, 6))),
               frozenset(rng.randrange(1000) for _ in range(rng.randrange(1, 6)))]
        if self.agents:
            self.made()
            out.append(set(rng.sample(self.agents, min(len(self.agents), 4))))
        return out

    def quests_part(self):
        rng = self.rng
        quests = []
        for i in range(rng.randrange(1, 6)):
            self.made(2)
            giver = rng.choice(self.npcs) if self.npcs and rng.random() < 0.7 else None
            quests.append(Quest(f"q{i}-{rng.choice(WORDS)}", rng.randrange(5),
                                {w: rng.random() < 0.5 for w in rng.sample(WORDS, 3)}, giver))
        return quests

    def rooms_part(self):
        """Plain classes with cycles: rooms linked both ways, npcs pointing back."""
        rng = self.rng
        rooms = [Room(f"room{rng.randrange(10_000)}") for _ in range(rng.randrange(2, 8))]
        self.made(3 * len(rooms))
        for a, b in zip(rooms, rooms[1:]):
            d = rng.randrange(0, len(DIRECTIONS), 2)
            a.exits[DIRECTIONS[d]], b.exits[DIRECTIONS[d + 1]] = b, a
        for room in rooms:
            for _ in range(rng.randrange(3)):
                npc = Npc(rng.choice(WORDS), rng.uniform(0, 9), rng.uniform(0, 9))
                npc.room = room
                npc.inventory = {w: rng.randrange(9) for w in rng.sample(WORDS, 2)}
                if self.npcs and rng.random() < 0.5:
                    npc.friends.append(rng.choice(self.npcs))
                room.occupants.append(npc)
                self.npcs.append(npc)
                self.made(4)
        return rooms


PARTS = ["document", "agents_part", "crates_part", "positions_part", "keyed_part",
         "sets_part", "quests_part", "rooms_part"]


def random_state(seed: int, objects: int = 10_000) -> State:
    """A state of about ``objects`` objects drawn from every style and mix, by seed."""
    rng = random.Random(seed)
    builder = Builder(rng)
    state = State(seed)
    weights = [rng.random() + 0.05 for _ in PARTS]     # each seed leans its own way
    while builder.count < objects:
        part = rng.choices(PARTS, weights)[0]
        state.parts.setdefault(part, []).append(getattr(builder, part)())
    return state


# -- named workloads: one per shape ------------------------------------------------------


def agents(objects: int):
    """attrs slotted agents with shared neighbour lists: the batches' own shape."""
    rng = random.Random(1)
    n = objects // 3
    group = [Agent(i, rng.uniform(0, 500), rng.uniform(0, 500), rng.randrange(1, 100),
                   rng.choice(list(Faction))) for i in range(n)]
    shared = [rng.sample(group, 4) for _ in range(max(1, n // 10))]
    for a in group:
        a.neighbours = rng.choice(shared)
        a.tags = rng.sample(WORDS, 2)
    return group, group


def json_like(objects: int):
    """Nested dicts and lists of str/int/float/bool/None: inventories, quest databases,
    dialogue tables."""
    rng = random.Random(2)
    builder = Builder(rng)
    db = {"inventory": [], "quests": {}, "dialogue": []}
    while builder.count < objects:
        builder.made(3)
        db["inventory"].append({"item": rng.choice(WORDS), "count": rng.randrange(1, 99),
                                "weight": round(rng.uniform(0, 10), 2),
                                "equipped": rng.random() < 0.2, "enchant": None,
                                "tags": rng.sample(WORDS, 2)})
        db["quests"][f"q{builder.count}"] = {
            "stage": rng.randrange(9), "done": rng.random() < 0.5,
            "log": [f"{rng.choice(WORDS)} found" for _ in range(rng.randrange(3))]}
        db["dialogue"].append(builder.document())
    return db, db


def value_keys(objects: int):
    """Frozen dataclasses and attrs as dict keys and set members, enums, namedtuples and
    tuples of positions, sets of objects."""
    rng = random.Random(3)
    builder = Builder(rng)
    state = {"grid": {}, "paths": [], "regions": [], "factions": {}, "seen": set()}
    while builder.count < objects:
        builder.made(2)
        p = Pos(rng.randrange(1000), rng.randrange(1000))
        state["grid"][p] = (rng.choice(list(Faction)), Hex(p.x % 40, p.y % 40))
        state["seen"].add(Vec(float(p.x), float(p.y)))
        if rng.random() < 0.1:
            builder.made(3)
            state["paths"].append(tuple((rng.randrange(50), rng.randrange(50))
                                        for _ in range(rng.randrange(2, 10))))
            state["regions"].append(frozenset(Hex(rng.randrange(9), rng.randrange(9))
                                              for _ in range(4)))
    for f in Faction:
        state["factions"][f] = {Mood.CALM: 1, Mood(rng.randrange(3)): 2}
    return state, state


def coroutines(objects: int):
    """NPCs each with a suspended @autosave.coroutine; pickle gets the same NPCs as a
    hand-written state machine (pickle cannot save a suspended generator)."""
    import coroutine_game as cg
    n = max(1, objects // 2)
    return cg.guards(n), state_machines(n)


def state_machines(n: int):
    """The coroutine workload's NPCs as plain objects: a guard and its patrol's state."""
    import coroutine_game as cg
    out = []
    for i in range(n):
        g = cg.Guard(f"g{i}", speed=1.0 + (i % 3) * 0.5)
        g.brain = Patrol(g, i % 4, (i * 7) % 3, i % 11)
        out.append(g)
    return out


@autosave.saveable
class Patrol:
    """A patrol written by hand: which waypoint, which look, how many laps."""

    def __init__(self, guard, waypoint, looks, laps):
        self.guard, self.waypoint, self.looks, self.laps = guard, waypoint, looks, laps


@autosave.saveable
class Frame:
    """A suspended coroutine's saved state as a plain object: its function, its label
    and each saved local, as attributes (``frames_as_objects``)."""


def frames_as_objects(objects: int):
    """The coroutine workload with every suspended coroutine replaced by a plain
    object holding the same values (its function, its label, its saved locals: the
    same references, iterators and nested frames): what the coroutines' own load costs
    against plain objects of the same size (issue 34). pickle gets the state machine."""
    from autosave.coroutines.adapter import COROUTINE
    import coroutine_game as cg
    guards, machines = coroutines(objects)
    functions = {"patrol": cg.patrol, "chase": cg.chase}
    made: dict[int, Frame] = {}

    def plain(co):
        found = made.get(id(co))
        if found is None:
            _, label, *pairs = COROUTINE.parts(co)
            found = made[id(co)] = Frame()
            found.function, found.label = functions[co.__qualname__], label
            for name, value in zip(pairs[::2], pairs[1::2]):
                held = plain(value) if type(value).__module__ == "coroutine_game" \
                    and hasattr(value, "_spec") else value
                setattr(found, name.replace("@", "_"), held)
        return found

    for g in guards:
        g.brain = plain(g.brain)
    return guards, machines


def machine_workload(objects: int):
    """The coroutine workload's NPCs as a hand-written state machine, saved by both."""
    machines = state_machines(max(1, objects // 2))
    return machines, machines


def numpy_scene(objects: int):
    """Entities with 2-3 small arrays each, plus a few big arrays."""
    import numpy as np
    rng = np.random.default_rng(4)
    n = objects // 4
    scene = {"entities": [], "terrain": rng.random((1000, 1000), dtype=np.float32),
             "heights": rng.random(1_000_000), "mask": rng.random(1_000_000) < 0.5}
    for i in range(n):
        e = Npc(f"e{i}", float(i % 100), float(i // 100))
        e.friends = [rng.random(2), rng.integers(0, 9, size=3)]
        if i % 2:
            e.inventory = {"path": rng.integers(0, 256, size=(4, 2), dtype=np.int16)}
        scene["entities"].append(e)
    return scene, scene


def oo_cycles(objects: int):
    """Plain __dict__ classes, classic game code: rooms and npcs pointing at each other."""
    builder = Builder(random.Random(5))
    rooms = []
    while builder.count < objects:
        rooms += builder.rooms_part()
    for a, b in zip(rooms, rooms[1:]):          # one world: every room reaches the rest
        a.exits.setdefault("portal", b)
    return rooms, rooms


WORKLOADS = {
    "agents": agents,
    "json-like": json_like,
    "value-keys": value_keys,
    "coroutines": coroutines,
    "state-machine": machine_workload,
    "frames-as-objects": frames_as_objects,
    "numpy-scene": numpy_scene,
    "oo-cycles": oo_cycles,
}
