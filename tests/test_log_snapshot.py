"""A step's walk is a snapshot (docs/log-format.md, "Off the game's thread"): the log
encodes a checkpoint on its writer thread, after ``step()`` returned, so what the walk
hands it must hold nothing the game may change. Checked two ways: the walk's output
holds no object of the graph (only immutable values and lists the walk made), and a
game that changes every kind of state right after each step, before the thread may
encode (it is held back until then), still gets, from every checkpoint, the bytes
``autosave.dumps`` gave at the step."""

import array
import collections
import gc
import linecache
import random
import textwrap
import threading

import attrs
try:
    import numpy as np
except ImportError:        # the test extra alone: the states hold no array
    np = None
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave import CheckpointLog, Position
from autosave.files import _walker, dumps_later
from autosave.format import kernels
from autosave.format.wire import ABSENT, INLINE_TYPES
from autosave.log import writer
from autosave.log.chain import is_delta, read_checkpoint
from modtools import fresh_name, load_module, unload

autosave.allow(__name__)


@attrs.define(eq=False)
class Mob:                      # a dict layout, hashed by identity: batched
    x: float
    hp: int
    name: str
    bag: list
    notes: dict
    friend: "Mob | None" = None


class Cell:                     # slots, hashed by identity
    __slots__ = ("value", "label", "unset")

    def __init__(self, value, label):
        self.value, self.label = value, label


class Plain:                    # a plain class, with a set and a tuple
    def __init__(self, rng):
        self.tags = {f"t{rng.randrange(5)}" for _ in range(3)}
        self.frozen = frozenset(range(rng.randrange(4)))
        self.pair = (rng.random(), "p")


@attrs.frozen
class Key:                      # hashed by value
    a: int
    b: str


COROUTINE = "import autosave\n" + textwrap.dedent("""
    @autosave.coroutine
    def ticker(n, seen):
        total = 0
        for i in range(n):
            total += i
            seen.append(total)
            yield total
    """)


@pytest.fixture(scope="module")
def game():
    name = fresh_name("snapshot_game")
    autosave.allow(name)
    linecache.cache[f"<{name}>"] = (len(COROUTINE), None,
                                    COROUTINE.splitlines(keepends=True), f"<{name}>")
    module = load_module(name, COROUTINE)
    yield module
    unload(name)


def world(rng, game, n=40):
    mobs = [Mob(rng.random(), 100, f"m{i}", [rng.randrange(9) for _ in range(3)],
                {"seen": i, "mood": "calm"}) for i in range(n)]
    for mob in mobs:
        mob.friend = rng.choice(mobs)
    seen: list = []
    return {
        "mobs": mobs, "cells": [Cell(rng.random(), f"c{i}") for i in range(10)],
        "plain": [Plain(rng) for _ in range(5)],
        "keys": {Key(i, "k"): i for i in range(5)}, "by_name": {m.name: m for m in mobs},
        "set": set(range(8)), "deque": collections.deque([1, "two", 3.0]),
        "raw": bytearray(b"raw bytes"), "ints": array.array("i", range(20)),
        "grid": None if np is None else np.arange(64, dtype=np.float64).reshape(8, 8),
        "view": None,
        "tickers": [game.ticker(50, seen) for _ in range(4)], "seen": seen,
        "tick": 0, "big": 1 << 80,
    }


def mutate(rng, state):
    """Change every kind of thing a state holds, in place and by replacement."""
    state["tick"] += 1
    for mob in rng.sample(state["mobs"], 5):
        mob.x += 1.5                                   # attributes
        mob.hp -= 1
        mob.bag.append(rng.randrange(9))               # a list inside
        mob.bag[0] = -mob.bag[0]
        mob.notes["seen"] = state["tick"]              # a dict inside
        mob.notes.pop("mood", None)
        mob.friend = rng.choice(state["mobs"])         # a reference
    state["mobs"].append(Mob(0.0, 1, f"new{state['tick']}", [], {}))
    if len(state["mobs"]) > 30:
        gone = state["mobs"].pop(rng.randrange(len(state["mobs"])))
        state["by_name"].pop(gone.name, None)
    for cell in state["cells"][::3]:
        cell.value = rng.random()                      # slots
        cell.label += "!"
    state["cells"][1].unset = 1 if state["tick"] % 2 else ABSENT
    if state["cells"][1].unset is ABSENT:
        del state["cells"][1].unset
    for plain in state["plain"]:
        plain.tags.add(f"t{state['tick']}")            # sets
        plain.tags.discard("t0")
        plain.pair = (plain.pair[0] + 1, "q")
    state["keys"][Key(state["tick"], "n")] = state["tick"]
    state["set"].symmetric_difference_update({state["tick"] % 10, 99})
    state["deque"].rotate(1)
    state["deque"].append(state["tick"])
    state["raw"][0] = (state["raw"][0] + 1) % 256        # a bytearray
    state["raw"] += b"+"
    state["ints"][rng.randrange(20)] += 7              # an array.array
    if state["grid"] is not None:
        state["grid"] += 1.0                           # numpy, in place
        state["grid"][rng.randrange(8)] = -1.0
        state["view"] = state["grid"][::2] if state["tick"] % 2 else None
    for t in state["tickers"][state["tick"] % 2::2]:
        next(t)                                        # coroutine frames
    state["big"] += 1


def graph_ids(root):
    """The ids of every object reachable from root (gc's view: what a game holds)."""
    seen, stack = {}, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        stack.extend(gc.get_referents(obj))
    return seen


def foreign(out, graph):
    """The objects in the walk's output that are the graph's own and not immutable."""
    found, stack = [], [out]
    while stack:
        value = stack.pop()
        if value.__class__ in INLINE_TYPES or value is ABSENT:
            continue
        if value.__class__ not in (list, tuple):
            found.append(value)                         # nothing else belongs here
        elif id(value) in graph:
            found.append(value)
        else:
            stack.extend(value)
    return found


@pytest.mark.parametrize("python_loops", [False, True])
def test_the_walk_holds_nothing_of_the_graph(game, python_loops):
    rng = random.Random(5)
    state = world(rng, game)
    for _ in range(3):
        mutate(rng, state)
    graph = graph_ids(state)
    if python_loops:
        with kernels.python_loops():
            types, records, root, finish = _walker().run_deferred(state)
    else:
        types, records, root, finish = _walker().run_deferred(state)
    assert foreign([[1, state["mobs"]]], graph) == [state["mobs"]]     # it can tell
    assert foreign([types, records, root], graph) == []
    assert foreign(finish(), graph) == []
    assert finish() is finish()                         # done once


def test_a_walk_encodes_to_the_bytes_dumps_gave_whatever_changed_after(game):
    rng = random.Random(11)
    state = world(rng, game)
    expected = autosave.dumps(state)
    walked = dumps_later(state)
    mutate(rng, state)
    assert autosave.dumps(state) != expected
    assert walked.encode() == expected
    with pytest.raises(RuntimeError):
        walked.encode()


def test_an_encoding_that_failed_is_done_again(game, monkeypatch):
    from autosave.saving import columns
    state = world(random.Random(2), game)
    expected = autosave.dumps(state)
    walked = dumps_later(state)
    real = columns.Batches.differences
    calls = []

    def broken(self, parts):
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("no memory for the columns")
        return real(self, parts)
    monkeypatch.setattr(columns.Batches, "differences", broken)
    with pytest.raises(MemoryError):
        walked.encode()
    assert walked.encode() == expected


BUILD = writer._Chooser.build


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 32), steps=st.integers(3, 12),
       full_every=st.integers(1, 6), flush_every=st.integers(1, 5))
def test_every_checkpoint_is_the_state_at_its_step_whatever_the_game_does_next(
        tmp_path_factory, monkeypatch, game, seed, steps, full_every, flush_every):
    rng = random.Random(seed)
    gates = collections.defaultdict(threading.Event)

    def held_back(self, checkpoint, end):
        # the thread may encode checkpoint i only once the game changed its state
        assert gates[self.index].wait(10)
        return BUILD(self, checkpoint, end)
    path = tmp_path_factory.mktemp("s") / "game.log"
    state = world(rng, game)
    expected = {}
    with monkeypatch.context() as patched, CheckpointLog.open(
            path, checkpoint_every=1, full_every=full_every) as log:
        patched.setattr(writer._Chooser, "build", held_back)
        # every checkpoint to the thread (after a big delta it makes them here)
        patched.setattr(writer._Chooser, "whole_after_big", lambda self: False)
        for k in range(steps):
            data = autosave.dumps(state)
            position = log.enter("play", state=state) if k == 0 else log.step(state)
            expected[position.step] = data
            mutate(rng, state)                  # at once, before the thread encodes
            gates[k].set()
            if k % flush_every == flush_every - 1:
                log.flush()
    with CheckpointLog.open(path, writable=False) as log:
        record = log.records[0]
        assert sorted(record.checkpoints) == sorted(expected)
        payloads = [log.file.read(o)[1] for o in record.checkpoints.values()]
        for step, data in expected.items():
            assert read_checkpoint(log.file, record.checkpoints[step]) == data
        restored = log.restore(Position("play", steps - 1, 0))
        assert autosave.dumps(restored) == expected[steps - 1]
    assert steps < 3 or any(map(is_delta, payloads))
