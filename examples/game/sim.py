"""Building a level and running it: deterministic, every random draw comes from level.rng."""

import random
import time

from .model import BANNERS, ITEMS, NPC, RACES, SPRITES, WEAPONS, Brain, Health, Level, Mode, Position, Squad

ARENA = 100.0       # the level is a square ARENA x ARENA
SPEED = 2.5         # distance an NPC walks per tick
NAMES = ["Grom", "Ilya", "Borin", "Snik", "Maeve", "Tor", "Ash", "Kel", "Rurik", "Zed"]


def build_level(seed=7, n_npcs=300, squad_size=6):
    """A fresh level: n_npcs NPCs in squads of about squad_size, already targeting each other."""
    level = Level(rng=random.Random(seed))
    rng = level.rng
    for i in range(max(1, n_npcs // squad_size)):
        level.squads.append(Squad(f"squad-{i}", rng.choice(BANNERS)))
    for i in range(n_npcs):
        spawn(level, level.squads[i % len(level.squads)])
    for npc in level.npcs:
        npc.brain.target = pick_target(level, npc)
    return level


def spawn(level, squad):
    rng = level.rng
    hp = rng.randint(60, 120)
    npc = NPC(
        id=level.next_id,
        name=f"{rng.choice(NAMES)}-{level.next_id}",
        sprite=rng.choice(RACES),
        pos=Position(rng.uniform(0, ARENA), rng.uniform(0, ARENA)),
        health=Health(hp, hp),
        brain=Brain(),
        weapon=rng.choice(WEAPONS),
        bag=[ITEMS["potion"]] * rng.randint(0, 2),
        squad=squad,
    )
    level.next_id += 1
    level.npcs.append(npc)
    level.by_id[npc.id] = npc
    squad.members.append(npc)
    if squad.leader is None:
        squad.leader = npc
    return npc


def step(level):
    """One tick: every living NPC thinks and acts; the dead are replaced by newcomers."""
    started = time.perf_counter()
    level.tick += 1
    for npc in level.npcs:
        if npc.health.alive:
            think(level, npc)
            act(level, npc)
    for npc in [n for n in level.npcs if not n.health.alive]:
        squad = npc.squad
        remove(level, npc)
        spawn(level, squad)
    level.last_step_seconds = time.perf_counter() - started


def is_enemy(npc, other):
    return other is not None and other.health.alive and other.squad is not npc.squad


def pick_target(level, npc):
    """The squad leader's target if it has one, else a random enemy (a few tries)."""
    leader = npc.squad.leader
    if leader is not None and leader is not npc and is_enemy(npc, leader.brain.target):
        return leader.brain.target
    for _ in range(4):
        other = level.rng.choice(level.npcs)
        if is_enemy(npc, other):
            return other
    return None


def think(level, npc):
    brain, rng = npc.brain, level.rng
    if npc.health.hp < npc.health.max_hp // 3 and ITEMS["potion"] in npc.bag:
        brain.mode = Mode.FLEE
        brain.plan = [("drink",)]
        return
    if not is_enemy(npc, brain.target):
        brain.target = pick_target(level, npc)
        brain.plan.clear()
    if brain.target is None:
        brain.mode = Mode.IDLE
        return
    brain.mode = Mode.HUNT
    if not brain.plan:
        there = brain.target.pos
        if npc.pos.distance_to(there) <= npc.weapon.reach:
            brain.plan = [("attack",)] * rng.randint(1, 3)
        else:  # walk there by a slightly wobbly route
            brain.plan = [("move", there.x + rng.gauss(0, 2.0), there.y + rng.gauss(0, 2.0))
                          for _ in range(rng.randint(1, 2))]


def act(level, npc):
    brain = npc.brain
    if not brain.plan:
        return
    action = brain.plan[0]
    if action[0] == "move":
        _, x, y = action
        dx, dy = x - npc.pos.x, y - npc.pos.y
        dist = (dx * dx + dy * dy) ** 0.5
        if dist <= SPEED:
            npc.pos.x, npc.pos.y = x, y
            brain.plan.pop(0)
        else:
            npc.pos.x += dx / dist * SPEED
            npc.pos.y += dy / dist * SPEED
    elif action[0] == "attack":
        brain.plan.pop(0)
        target = brain.target
        if target is None or not target.health.alive or npc.pos.distance_to(target.pos) > npc.weapon.reach + 1:
            brain.plan.clear()
            return
        target.health.hp -= level.rng.randint(1, npc.weapon.damage)
        if target.brain.target is None or not target.brain.target.health.alive:
            target.brain.target = npc          # fight back: target and attacker point at each other
        if not target.health.alive:
            npc.kills += 1
            level.log.append((level.tick, "kill", npc.id, target.id))
            if level.rng.random() < 0.3:
                npc.bag.append(ITEMS["potion"])
    elif action[0] == "drink":
        brain.plan.pop(0)
        npc.bag.remove(ITEMS["potion"])
        npc.health.hp = min(npc.health.max_hp, npc.health.hp + ITEMS["potion"].heal)
        level.log.append((level.tick, "drink", npc.id, None))


def remove(level, npc):
    level.npcs.remove(npc)
    del level.by_id[npc.id]
    squad = npc.squad
    squad.members.remove(npc)
    if squad.leader is npc:
        squad.leader = squad.members[0] if squad.members else None
    # Other NPCs may still target the dead one until they next think: it stays reachable.


# -- comparing two levels --------------------------------------------------------------------


def fingerprint(level):
    """The full observable state as plain tuples: equal fingerprints mean equal levels.

    References are written as ids, and an id only counts if it is the *same* object the
    level's tables hold, so a load that duplicated a shared object would show up here.
    """
    squad_index = {id(s): i for i, s in enumerate(level.squads)}

    def ref(npc):
        if npc is None:
            return None
        return npc.id if level.by_id.get(npc.id) is npc else ("gone", npc.id, npc.health.hp)

    def squad_ref(squad):
        return None if squad is None else squad_index.get(id(squad), ("stray", squad.name))

    npcs = tuple(
        (n.id, n.name, n.sprite.name, n.pos.x, n.pos.y, n.health.hp, n.health.max_hp,
         n.brain.mode, tuple(n.brain.plan), ref(n.brain.target), n.weapon.name,
         tuple(item.name for item in n.bag), squad_ref(n.squad), n.kills)
        for n in level.npcs
    )
    squads = tuple(
        (s.name, s.banner.name, ref(s.leader), tuple(ref(m) for m in s.members))
        for s in level.squads
    )
    by_id = tuple((k, ref(v)) for k, v in level.by_id.items())
    return (level.tick, level.next_id, level.rng.getstate(), npcs, squads, by_id,
            tuple(level.log), level.log.maxlen)


def asset_references(level):
    """Every (asset table, name, object) the level points at."""
    for npc in level.npcs:
        yield SPRITES, npc.sprite.name, npc.sprite
        yield ITEMS, npc.weapon.name, npc.weapon
        for item in npc.bag:
            yield ITEMS, item.name, item
    for squad in level.squads:
        yield SPRITES, squad.banner.name, squad.banner
