"""Graphs the benchmarks time, shared by test_bench_core.py and compare.py.

* ``level_graph()``  the demo level (examples/game) scaled to ~15k objects
* ``world_graph()``  ~100k objects of typical game data: attrs and plain objects holding
                     ints, floats, short strings and lists of references, shared all over
                     and full of cycles

Plus the tools both runners need: ``count_objects`` (how many objects a graph holds:
instances and containers, what autosave writes one record each for), ``same_graph`` (a
structural comparison used to check a round trip before timing it) and ``deep_call``
(run something on a thread with a big stack, because pickle recurses once per level of
nesting and these graphs nest thousands of levels deep).
"""

import collections
import enum
import math
import random
import struct
import sys
import threading
from pathlib import Path

import attrs

import autosave

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import game  # noqa: E402  (examples/game, the demo's model)
from worldsim import Item, Terrain, Tile, Unit, World  # noqa: E402

LEVEL_OBJECTS = 15_000
WORLD_OBJECTS = 100_000


# -- graph 1: the demo level, scaled up ------------------------------------------------------


def level_graph(objects=LEVEL_OBJECTS, seed=11, ticks=20):
    """The examples/level.py level with enough NPCs for about ``objects`` objects."""
    per_npc = count_objects(_played_level(seed, 200, ticks)) / 200
    return _played_level(seed, max(6, round(objects / per_npc)), ticks)


def _played_level(seed, n_npcs, ticks):
    level = game.build_level(seed=seed, n_npcs=n_npcs)
    for _ in range(ticks):
        game.step(level)
    return level


# -- graph 2: a big world of small objects ---------------------------------------------------


KINDS = ["peasant", "soldier", "archer", "merchant", "wolf", "bandit"]
TAGS = ["hungry", "tired", "armed", "rich", "lost", "brave", "wounded", "hostile"]
ITEM_KINDS = ["bread", "arrow", "coin", "herb", "rope", "torch", "gem"]


def world_graph(objects=WORLD_OBJECTS, seed=5):
    """About ``objects`` objects: a tile grid plus units carrying items.

    A tile with its unit list is 2 objects; a unit with its three lists and ~1.5 items
    is ~5.5. A fifth of the budget goes to the grid.
    """
    rng = random.Random(seed)
    side = max(2, math.isqrt(objects // 10))
    n_units = max(1, round((objects - 2 * side * side - side - 4) / 5.5))
    world = World(rng=random.Random(seed + 1))
    terrains = list(Terrain)
    for y in range(side):
        world.grid.append([Tile(x, y, rng.choice(terrains), round(rng.uniform(0, 50), 2))
                           for x in range(side)])
    for i in range(n_units):
        home = world.grid[rng.randrange(side)][rng.randrange(side)]
        unit = Unit(
            id=i, name=f"u{i}", kind=rng.choice(KINDS),
            x=home.x + rng.random(), y=home.y + rng.random(),
            hp=rng.randint(1, 100), speed=round(rng.uniform(0.5, 3.0), 3), home=home,
            tags=rng.sample(TAGS, rng.randint(0, 3)),
        )
        unit.inventory = [Item(rng.choice(ITEM_KINDS), round(rng.uniform(0.1, 5), 2),
                               rng.randint(1, 20), unit) for _ in range(rng.randint(0, 3))]
        home.units.append(unit)
        world.units.append(unit)
        world.by_name[unit.name] = unit
    for unit in world.units:
        unit.friends = [world.units[rng.randrange(n_units)] for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.3:
            unit.leader = world.units[rng.randrange(n_units)]
    return world


# -- counting and comparing graphs ------------------------------------------------------------

INLINE = (type(None), bool, int, float, str, bytes)   # values written inline, not as objects


def children(obj):
    """The objects and values ``obj`` refers to, in a fixed order."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield v
    elif isinstance(obj, (list, tuple, collections.deque, set, frozenset)):
        yield from obj
    elif isinstance(obj, (enum.Enum, random.Random, type)) or callable(obj):
        return
    else:
        for name in _slots(type(obj)):
            if hasattr(obj, name):
                yield getattr(obj, name)
        yield from getattr(obj, "__dict__", {}).values()


def count_objects(root):
    """How many distinct non-inline objects are reachable from ``root``."""
    seen = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if type(obj) in INLINE or id(obj) in seen:
            continue
        seen.add(id(obj))
        stack.extend(children(obj))
    return len(seen)


class GraphMismatch(AssertionError):
    pass


def same_graph(a, b):
    """Raise GraphMismatch unless graphs ``a`` and ``b`` have the same shape and values.

    Walks both graphs in step, pairing each object of ``a`` with one of ``b``: types,
    inline values (floats bit for bit), container order, instance fields and the sharing
    of references (each object pairs with exactly one other, both ways) must all match.
    An object may pair with itself: assets, enum members and classes come back as the
    very same objects. Fields marked autosave.transient are not compared.
    """
    pair, back = {}, {}
    by_identity = []         # (member hashed by identity, the set it must be in, path)
    # Breadth-first, so an error names the shortest path to the difference. Paths are
    # (parent, label) links, spelled out only on error.
    stack = collections.deque([(a, b, None, "root")])
    while stack:
        x, y, parent, label = stack.popleft()
        here = (parent, label)

        def fail(message):
            raise GraphMismatch(f"{_spell(here)}: {message}")

        if type(x) is not type(y):
            fail(f"{type(x).__name__} != {type(y).__name__}")
        if type(x) in INLINE:
            if not _same_value(x, y):
                fail(f"{x!r:.80} != {y!r:.80}")
            continue
        known = pair.get(id(x))
        if known is not None or id(y) in back:
            if known is not y or back.get(id(y)) is not x:
                fail("a reference is shared differently")
            continue
        pair[id(x)], back[id(y)] = y, x
        if x is y:
            continue
        if isinstance(x, (set, frozenset)):
            if len(x) != len(y):
                fail(f"{len(x)} != {len(y)} members")
            # Members hashed by value pair with their equal; those hashed by identity
            # must pair, through the rest of the graph, with members of y (checked last).
            by_value = {m: m for m in y if type(m).__hash__ is not object.__hash__}
            for i, m in enumerate(x):
                if type(m).__hash__ is object.__hash__:
                    by_identity.append((m, y, here))
                elif m not in by_value:
                    fail(f"member {m!r:.80} is missing")
                else:
                    stack.append((m, by_value[m], here, f"<member {i}>"))
        elif isinstance(x, random.Random):
            if x.getstate() != y.getstate():
                fail("random state differs")
        elif isinstance(x, dict):
            if len(x) != len(y):
                fail(f"{len(x)} != {len(y)} entries")
            for i, ((kx, vx), (ky, vy)) in enumerate(zip(x.items(), y.items())):
                stack.append((kx, ky, here, f"<key {i}>"))
                stack.append((vx, vy, here, f"[{kx!r:.40}]"))
        elif isinstance(x, (list, tuple, collections.deque)):
            if len(x) != len(y) or getattr(x, "maxlen", None) != getattr(y, "maxlen", None):
                fail(f"lengths {len(x)} != {len(y)}")
            stack.extend((vx, vy, here, i) for i, (vx, vy) in enumerate(zip(x, y)))
        elif type(x).__module__ == "numpy" and hasattr(x, "dtype"):     # arrays, scalars
            if (x.dtype != y.dtype or x.shape != y.shape
                    or (x.tolist() != y.tolist() if x.dtype.hasobject else x.tobytes() != y.tobytes())):
                fail("numpy values differ")
        elif hasattr(x, "bit_generator"):                                 # numpy generators
            if x.bit_generator.state != y.bit_generator.state:
                fail("generator state differs")
        elif isinstance(x, (enum.Enum, type)) or callable(x):
            fail(f"{x!r:.80} came back as a different object")
        else:
            skip = _transient_fields(type(x))
            for name in _slots(type(x)):
                if name in skip:
                    continue
                if hasattr(x, name) != hasattr(y, name):
                    fail(f".{name} is set on one side only")
                if hasattr(x, name):
                    stack.append((getattr(x, name), getattr(y, name), here, f".{name}"))
            dx, dy = getattr(x, "__dict__", {}), getattr(y, "__dict__", {})
            kx, ky = [k for k in dx if k not in skip], [k for k in dy if k not in skip]
            if kx != ky:
                fail(f"attributes {kx} != {ky}")
            stack.extend((dx[k], dy[k], here, f".{k}") for k in kx)
    members = {}
    for m, y, here in by_identity:
        if pair.get(id(m)) is None:
            raise GraphMismatch(f"{_spell(here)}: a set member is reached only through "
                                f"the set (which this check does not support)")
        ids = members.get(id(y))
        if ids is None:
            ids = members[id(y)] = set(map(id, y))
        if id(pair[id(m)]) not in ids:
            raise GraphMismatch(f"{_spell(here)}: a set member is missing")


def _spell(node):
    labels = []
    while node is not None:
        node, label = node
        labels.append(f"[{label}]" if isinstance(label, int) else label)
    return "".join(reversed(labels))


def _same_value(x, y):
    if type(x) is float:
        return struct.pack("<d", x) == struct.pack("<d", y)
    return x == y


_slot_cache = {}


def _slots(cls):
    names = _slot_cache.get(cls)
    if names is None:
        names = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            for s in (slots,) if isinstance(slots, str) else slots:
                if s not in ("__dict__", "__weakref__") and s not in names:
                    names.append(s)
        names = _slot_cache[cls] = tuple(names)
    return names


_transient_cache = {}


def _transient_fields(cls):
    names = _transient_cache.get(cls)
    if names is None:
        names = _transient_cache[cls] = frozenset(
            f.name for f in (attrs.fields(cls) if attrs.has(cls) else ())
            if all(f.metadata.get(k) == v for k, v in autosave.transient.items()))
    return names


# -- running pickle on deep graphs -------------------------------------------------------------

BIG_STACK = 512 * 1024 * 1024


def allow_deep_recursion():
    """pickle recurses per nesting level: lift the Python limit (the C stack is deep_call's)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1_000_000))


def deep_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a thread with a 512 MiB stack; returns or raises its outcome."""
    outcome = {}

    def run():
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001  (re-raised on the calling thread)
            outcome["error"] = e

    previous = threading.stack_size(BIG_STACK)
    try:
        thread = threading.Thread(target=run, name="deep-call")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def numpy_graph():
    from numpy_scene import numpy_scene      # numpy is optional
    return numpy_scene()


GRAPHS = {
    "level-15k": level_graph,
    "world-100k": world_graph,
    "numpy-scene": numpy_graph,
}
