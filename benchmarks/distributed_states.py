"""The states benchmarks/compare_distributed.py moves, built twice with the same data:
as a ``@save_root`` class (which autosave.dask / autosave.ray claim) and as a plain
class (which the engines' default serializers take). No coroutines: pickle could not
move them, and the comparison is on what both can."""

import random

import autosave

try:
    import numpy as np
except ImportError:
    np = None


class Agent:
    def __init__(self, uid, rng):
        self.uid = uid
        self.pos = (rng.random(), rng.random())
        self.stats = {"hp": rng.randrange(100), "gold": rng.randrange(1000)}
        self.friends = []


class PlainWorld:
    def __init__(self, agents, field):
        self.agents, self.field, self.tick = agents, field, 0


@autosave.save_root
class SavedWorld(PlainWorld):
    pass


def agents(n, seed=1):
    rng = random.Random(seed)
    made = [Agent(i, rng) for i in range(n)]
    for start in range(0, n, 10):                 # squads of ten: shared references and
        squad = made[start:start + 10]            # cycles, shallow enough for pickle
        for a in squad:
            a.friends = rng.sample(squad, 2)
    return made


def build(kind, claimed):
    """``objects``: 2,500 agents (an agent, its position tuple, its stats dict and its
    friends list: 10,000 objects). ``array``: 100 agents and a 64 MiB float64 array;
    ``array, read-only``: the same, the array marked read-only (static data, which
    a receiver may share without a copy)."""
    cls = SavedWorld if claimed else PlainWorld
    if kind == "objects":
        return cls(agents(2500), None)
    field = np.random.default_rng(0).random(8 << 20)      # 8 Mi float64: 64 MiB
    field.flags.writeable = kind != "array, read-only"
    return cls(agents(100), field)


def touch(world):
    """A task on the receiving worker: reads the state (so it must have arrived)."""
    return len(world.agents) + (0 if world.field is None else int(world.field.size))
