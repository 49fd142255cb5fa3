"""A small game written against autosave's public API with full type hints.

tests/test_typing.py runs mypy --strict on it: a missing hint on the API is an
"untyped call" error, a wrong one an error or an ``assert_type`` mismatch, and a
hint too loose to catch a misuse leaves a ``type: ignore`` below unused (an error
under --strict).
"""

import dataclasses
import io
import random
from collections.abc import Generator
from typing import Any, assert_type

import attrs

import autosave


@autosave.save_root
@attrs.define
class Level:
    npcs: list[str]
    rng: random.Random
    camera: float = attrs.field(default=1.0, metadata=autosave.transient)

    def __autosave_loaded__(self) -> None:
        self.camera = 1.0


@autosave.saveable(name="game.Guard", aliases=("game.old.Guard",), version=2)
@dataclasses.dataclass
class Guard:
    health: int


@autosave.saveable
@dataclasses.dataclass
class Coin:
    value: int = 1


@autosave.upgrade("game.Guard", from_version=1)
def hp_to_health(fields: dict[str, Any]) -> dict[str, Any]:
    fields["health"] = fields.pop("hp")
    return fields


@autosave.coroutine
def patrol(guard: Guard) -> Generator[int, bool | None, str]:
    while guard.health > 0:
        hit = yield guard.health
        if hit:
            guard.health -= 1
    return "down"


class Money:
    def __init__(self, currency: str, cents: int) -> None:
        self.currency, self.cents = currency, cents


def money_parts(m: Money) -> list[object]:
    return [m.currency, m.cents]


def play(state: dict[str, int], steps: int) -> dict[str, int]:
    return {"line": state["line"] + steps}


def main(path: str) -> None:
    # The decorators keep the class: constructors and attributes stay typed.
    level = Level(npcs=["guard"], rng=random.Random(7))
    assert_type(level, Level)
    assert_type(Guard(health=3).health, int)
    assert_type(Coin().value, int)
    assert_type(hp_to_health({"hp": 1}), dict[str, Any])
    autosave.allow("game", "simpy")
    sprite = autosave.asset(Coin(5), "coins/five")
    assert_type(sprite, Coin)
    autosave.assets({"coins/one": Coin()})

    data = autosave.dumps(level)
    assert_type(data, bytes)
    copy = autosave.copy(level)
    assert_type(copy, Level)
    loaded: Level = autosave.loads(data)
    written = autosave.save(path, loaded)
    assert_type(written, int)
    again: Level = autosave.load(path)
    f = io.BytesIO()
    assert_type(autosave.dump(again, f), int)
    f.seek(0)
    autosave.load(f)

    brain = patrol(Guard(2))
    assert_type(next(brain), int)
    brain.send(True)

    adapter = autosave.register(Money, save=money_parts, load=Money, args=(str, int))
    assert isinstance(adapter, autosave.Adapter)
    assert_type(adapter.name, str)

    with autosave.CheckpointLog.open(path + ".log", checkpoint_every=10,
                                     content={"chapter1": ["a", "b", 3]}) as log:
        assert_type(log, autosave.CheckpointLog)
        state = {"line": 0}
        position = log.enter("chapter1", key=None, state=state)
        assert_type(position, autosave.Position)
        log.step(play(state, 1), checkpoint=True)
        mark = log.bookmark("slot1", description="Before the gate", screenshot=b"PNG")
        assert_type(mark, autosave.Bookmark)
        assert_type(mark.screenshot, bytes | None)
        assert_type(mark.position.step, int)
        back = log.back(1)
        restored = log.restore(log.bookmarks["slot1"].position, replay=play)
        log.restore(back)
        assert_type(log.history(), list[tuple[str, int, int]])
        assert_type(log.position, autosave.Position | None)
        log.reached.add("ending/brave")
        assert "ending/brave" in log.reached
        log.globals["ngplus"] = 1
        log.delete_bookmark("slot1")
        log.flush()
        assert_type(log.recovered, int)
        assert restored is not None

    try:
        autosave.loads(b"")
    except autosave.LoadError as e:
        assert isinstance(e, Exception)
    err = autosave.SaveError("cannot", "root.x")
    assert_type(err.path, str | None)


def misuses() -> None:
    """Never run. Each ignore is needed: with a hint too loose to catch the misuse,
    mypy --strict reports the ignore as unused."""
    autosave.save_root(3)  # type: ignore[type-var]
    autosave.dumps(level=1)  # type: ignore[call-arg]
    autosave.loads("text")  # type: ignore[arg-type]
    autosave.allow(autosave)  # type: ignore[arg-type]
    autosave.save(3, None)  # type: ignore[arg-type]
    autosave.dump(None, "slot.sav")  # type: ignore[arg-type]
    autosave.upgrade("game.Guard", from_version="1")  # type: ignore[arg-type]
    autosave.register(Money, save=money_parts, load=str)  # type: ignore[arg-type]
    autosave.CheckpointLog.open("p.log", checkpoint_every="10")  # type: ignore[arg-type]


if __name__ == "__main__":
    import sys
    main(sys.argv[1])
