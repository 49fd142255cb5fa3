"""A wealth-and-epidemic model in the style of mesa's examples, split into shards.

Each shard is a ``@autosave.save_root`` region of a grid: agents move, trade, fall
ill and recover, each driven by a suspended ``@autosave.coroutine`` (its daily
routine), with one ``random.Random`` per shard, so that a shard's run is a function of
its seed alone. Agents befriend each other (shared references and cycles); a numpy
array holds the region's pollution field when numpy is installed. Nothing here knows
how to save itself.
"""

import random

import autosave

try:
    import numpy as np
except ImportError:                   # the field is optional
    np = None

WIDTH = 24


class Agent:
    def __init__(self, uid, x, y, wealth):
        self.uid, self.x, self.y, self.wealth = uid, x, y, wealth
        self.ill, self.friends, self.routine = 0, [], None


@autosave.coroutine
def routine(agent, shard):
    """An agent's day: wander, trade with a friend, rest; ill agents stay put."""
    while True:
        for _ in range(shard.rng.randint(1, 4)):
            if not agent.ill:
                agent.x = (agent.x + shard.rng.choice((-1, 0, 1))) % WIDTH
                agent.y = (agent.y + shard.rng.choice((-1, 0, 1))) % WIDTH
            yield "wander"
        if agent.friends and agent.wealth > 0:
            friend = shard.rng.choice(agent.friends)
            agent.wealth -= 1
            friend.wealth += 1
            yield "trade"
        if agent.ill:
            agent.ill -= 1
        yield "rest"


@autosave.save_root
class Shard:
    """One region of the model: its agents, their routines, its clock and RNG."""

    def __init__(self, shard_id, seed, n_agents=50, field=True):
        self.shard_id, self.tick = shard_id, 0
        self.rng = random.Random(seed)
        self.agents = [Agent(f"{shard_id}-{i}", self.rng.randrange(WIDTH),
                             self.rng.randrange(WIDTH), self.rng.randint(1, 5))
                       for i in range(n_agents)]
        for agent in self.agents:
            agent.friends = self.rng.sample(self.agents, 3)
            agent.routine = routine(agent, self)
        self.agents[0].ill = 5
        self.field = (np.zeros((WIDTH, WIDTH)) if field and np is not None else None)
        self.log = []

    def step(self):
        self.tick += 1
        by_cell = {}
        for agent in self.agents:
            next(agent.routine)
            by_cell.setdefault((agent.x, agent.y), []).append(agent)
        if self.rng.random() < 0.1:              # an infection from outside
            self.rng.choice(self.agents).ill = 4
        for cell in by_cell.values():            # contagion within a cell
            if any(a.ill for a in cell):
                for a in cell:
                    if not a.ill and self.rng.random() < 0.3:
                        a.ill = 3
        if self.field is not None:
            for agent in self.agents:
                self.field[agent.x, agent.y] += 0.1
            self.field *= 0.95
        if self.tick % 10 == 0:
            self.log.append((self.tick, sum(a.ill > 0 for a in self.agents)))


def fingerprint(shard):
    """Everything that makes a shard's future: equal fingerprints, equal runs."""
    index = {id(a): i for i, a in enumerate(shard.agents)}
    field = None if shard.field is None else shard.field.round(9).tobytes()
    return (shard.shard_id, shard.tick, shard.rng.getstate(), field, tuple(shard.log),
            tuple((a.uid, a.x, a.y, a.wealth, a.ill, tuple(index[id(f)] for f in a.friends))
                  for a in shard.agents))


def run_shard(shard, ticks):
    for _ in range(ticks):
        shard.step()
    return shard
