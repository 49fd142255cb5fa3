from __future__ import annotations

import enum
import random
from collections.abc import Generator
from typing import Any

import attrs

import autosave


class Terrain(enum.Enum):
    GRASS = 1
    WATER = 2


@attrs.frozen
class Item:
    name: str
    weight: int = 1


@attrs.define(eq=False)
class Npc:
    name: str
    x: int = 0
    brain: Any = None


@autosave.coroutine
def dialogue(npc: Npc, lines: list[str]) -> Generator[str, str | None, int]:
    said = 0
    for line in lines:
        answer = yield f"{npc.name}: {line}"
        if answer:
            said += 1
    return said


@autosave.coroutine
def wander(npc: Npc, rng: random.Random) -> Generator[str, str | None, None]:
    while True:
        npc.x += rng.choice((-1, 1))
        seen = yield "walking"
        if seen:
            yield from dialogue(npc, ["Hello", "Bye"])


@autosave.save_root
@attrs.define(eq=False)
class Level:
    tiles: list[Terrain]
    items: list[Item]
    npcs: list[Npc]
    rng: random.Random = attrs.Factory(lambda: random.Random(3))
