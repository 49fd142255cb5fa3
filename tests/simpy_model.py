"""A SimPy model whose processes are @autosave.coroutine generators: a shop with a
shared counter (customers queue, renege when their patience runs out), machines that a
saboteur interrupts, a store of parts a packer takes (or gives up waiting for) and a
crane the packer holds until an inspector preempts it. Every event goes to
``world.log`` as (time, what...)."""

import random

import simpy

import autosave

autosave.allow("simpy", __name__)


class World:
    def __init__(self, env, seed):
        self.env = env
        self.rng = random.Random(seed)
        self.log = []
        self.counter = simpy.Resource(env, capacity=2)
        self.served = 0
        self.machines = {}       # name -> Process
        self.working = set()     # machines that may be sabotaged now
        self.parts = simpy.Store(env, capacity=3)
        self.crane = simpy.PreemptiveResource(env, capacity=1)

    def machines_alive(self):
        return any(m.is_alive for m in self.machines.values())

    def note(self, *what):
        self.log.append((round(self.env.now, 9), *what))


@autosave.coroutine
def customer(world, name, patience):
    env = world.env
    world.note("arrive", name)
    with world.counter.request() as req:
        results = yield req | env.timeout(patience)
        if req in results:
            world.note("served", name)
            yield env.timeout(world.rng.uniform(1.0, 4.0))
            world.served += 1
            world.note("leave", name)
        else:
            world.note("renege", name)
    return name


@autosave.coroutine
def source(world, count):
    env = world.env
    for i in range(count):
        proc = env.process(customer(world, f"c{i}", world.rng.uniform(0.5, 3.0)))
        if i % 5 == 4:
            # wait for this one before sending more
            got = yield proc
            world.note("waited", got)
        yield env.timeout(world.rng.expovariate(1.0))
    world.note("source-done")


@autosave.coroutine
def machine(world, name):
    env = world.env
    made = 0
    while True:
        work = world.rng.uniform(2.0, 5.0)
        start = env.now
        world.working.add(name)
        try:
            yield env.timeout(work)
            made += 1
            world.note("made", name, made)
        except simpy.Interrupt as interrupt:
            world.note("broken", name, interrupt.cause, round(env.now - start, 9))
            world.working.discard(name)
            yield env.timeout(1.5)
            world.note("repaired", name)
        finally:
            world.working.discard(name)
        if made and made % 2 == 0:
            yield world.parts.put((name, made))
            world.note("stored", name, made)
        if made >= 8:
            world.note("retired", name)
            return made


@autosave.coroutine
def saboteur(world):
    env = world.env
    while True:
        yield env.timeout(world.rng.uniform(3.0, 9.0))
        if not any(m.is_alive for m in world.machines.values()):
            world.note("saboteur-done")
            return
        if world.working:
            victim = world.rng.choice(sorted(world.working))
            world.machines[victim].interrupt(f"sabotage@{round(env.now, 3)}")


@autosave.coroutine
def packer(world):
    env = world.env
    while True:
        get = world.parts.get()
        got = yield get | env.timeout(6)
        if get not in got:
            get.cancel()
            world.note("packer-idle")
            if not world.machines_alive() and not world.parts.items:
                return "packer-done"
            continue
        part = got[get]
        with world.crane.request(priority=1) as crane:
            try:
                yield crane & env.timeout(0.5)
                world.note("lifting", part)
                yield env.timeout(2.0)
                world.note("packed", part)
            except simpy.Interrupt as interrupt:
                world.note("preempted", part, type(interrupt.cause).__name__)


@autosave.coroutine
def inspector(world):
    env = world.env
    while world.machines_alive():
        yield env.timeout(world.rng.uniform(4.0, 7.0))
        with world.crane.request(priority=0, preempt=True) as req:
            yield req
            world.note("inspecting")
            yield env.timeout(0.3)
    world.note("inspector-done")


def build(seed=7, customers=30, machines=2):
    env = simpy.Environment()
    world = World(env, seed)
    env.process(source(world, customers))
    for i in range(machines):
        world.machines[f"m{i}"] = env.process(machine(world, f"m{i}"))
    env.process(saboteur(world))
    env.process(packer(world))
    env.process(inspector(world))
    return world
