"""The cache of rebuilt checkpoints (docs/log-format.md, "Rebuilt checkpoints"): a
restore rebuilds a chain from its newest link held, a writer holds what it wrote, the
cache stays within its bounds, and the budget is charged exactly as for a rebuild from
the whole checkpoint, so a refusal never depends on what is held. Also: a checkpoint
that cannot be encoded at all poisons the writer."""

import random

import pytest

import autosave
from autosave import CheckpointLog, LogPoisonedError, Position
from autosave.checks.limits import Budget
from autosave.files import Walked
from autosave.log import chain
from autosave.log.chain import checkpoint_bytes, is_delta, read_checkpoint
from autosave.log.rebuilt import Rebuilt


def play(path, steps=9, full_every=16, seed=3):
    """A log of one record, a checkpoint per step, and the bytes of each."""
    rng = random.Random(seed)
    state = {"xs": [rng.random() for _ in range(3000)], "names": [f"n{i}" for i in range(500)]}
    expected = []
    with CheckpointLog.open(path, checkpoint_every=1, full_every=full_every) as log:
        log.enter("n")
        for _ in range(steps):
            for i in rng.sample(range(3000), 30):
                state["xs"][i] = rng.random()
            log.step(state)
            expected.append(autosave.dumps(state))
    return expected


@pytest.fixture
def applied(monkeypatch):
    """The offsets of the deltas decompressed, in order."""
    out = []
    real = chain._apply

    def counting(path, offset, payload, base, cost):
        out.append(offset)
        return real(path, offset, payload, base, cost)
    monkeypatch.setattr(chain, "_apply", counting)
    return out


def test_a_restore_rebuilds_from_the_newest_link_held(tmp_path, applied):
    path = tmp_path / "g.log"
    expected = play(path)
    with CheckpointLog.open(path, writable=False) as log:
        offsets = log.records[0].checkpoints
        assert sum(is_delta(log.file.read(o)[1]) for o in offsets.values()) == 8
        assert autosave.dumps(log.restore(Position("n", 5, 0))) == expected[5]
        assert len(applied) == 5                      # the whole one, then 5 deltas
        applied.clear()
        assert autosave.dumps(log.restore(Position("n", 5, 0))) == expected[5]
        assert applied == []                          # held
        assert autosave.dumps(log.restore(Position("n", 8, 0))) == expected[8]
        assert applied == [offsets[6], offsets[7], offsets[8]]


def test_reading_every_checkpoint_in_order_applies_each_delta_once(tmp_path, applied):
    path = tmp_path / "g.log"
    expected = play(path, steps=12)
    with CheckpointLog.open(path, writable=False) as log:
        offsets = log.records[0].checkpoints
        for step in sorted(offsets):                  # as `autosave compat verify` does
            assert read_checkpoint(log.file, offsets[step]) == expected[step]
        assert applied == [offsets[s] for s in range(1, 12)]


def test_a_writer_restores_what_it_wrote_without_a_rebuild(tmp_path, applied):
    path = tmp_path / "g.log"
    state = {"xs": list(range(4000))}
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("n")
        for k in range(6):
            state["xs"][k] = -k
            log.step(state)
        data = autosave.dumps(state)
        assert autosave.dumps(log.restore(Position("n", 5, 0))) == data
        assert autosave.dumps(log.restore(Position("n", 3, 0))) != data
    assert applied == []                               # 2 to 5 are held


def charges(file, offset):
    budget = Budget(file.size)
    data = checkpoint_bytes(file, offset, budget)
    return data, budget.memory, budget.work


@pytest.mark.parametrize("held", [(), (0,), (4,), (7,), (8,), (2, 6)])
def test_a_restore_is_charged_alike_whatever_is_held(tmp_path, held):
    path = tmp_path / "g.log"
    play(path)
    with CheckpointLog.open(path, writable=False) as log:
        offsets = log.records[0].checkpoints
        log.file.rebuilt.clear()
        cold = charges(log.file, offsets[8])
        log.file.rebuilt.clear()
        for step in held:
            checkpoint_bytes(log.file, offsets[step], Budget(log.file.size))
        assert charges(log.file, offsets[8]) == cold


def test_what_a_writer_holds_is_charged_as_a_readers_rebuild(tmp_path):
    path = tmp_path / "g.log"
    state = {"xs": list(range(4000))}
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("n")
        for k in range(5):
            state["xs"][k] = -k
            log.step(state)
        log.flush()
        offsets = log.records[0].checkpoints
        warm = charges(log.file, offsets[4])
        log.file.rebuilt.clear()
        assert charges(log.file, offsets[4]) == warm


def test_an_entry_is_used_only_under_a_log_as_large():
    cache = Rebuilt()
    cache.put(100, b"x" * 10, 20, 1, 10, log_size=5000)
    assert cache.get(100, 4999) is None
    assert cache.get(100, 5000) == (b"x" * 10, 20, 1, 10)


def test_the_cache_keeps_within_its_bounds():
    cache = Rebuilt(entries=3, memory=100)
    for offset in range(10):
        cache.put(offset, bytes(30), 0, 0, 30, 0)
    assert [o for o in range(10) if cache.get(o, 0)] == [7, 8, 9]
    cache.get(7, 0)                                   # used: kept longer
    cache.put(10, bytes(40), 0, 0, 40, 0)             # 30 + 30 + 40 fits, 3 entries
    assert [o for o in range(11) if cache.get(o, 0)] == [7, 9, 10]
    cache.put(11, bytes(101), 0, 0, 101, 0)           # larger than all: not kept
    assert cache.get(11, 0) is None and cache._bytes <= 100


def test_a_checkpoint_that_cannot_be_encoded_poisons_the_writer(tmp_path, monkeypatch):
    path = tmp_path / "g.log"
    log = CheckpointLog.open(path, checkpoint_every=1)
    log.enter("n")
    log.step({"i": 0})
    log.flush()

    def broken(self):
        raise MemoryError("no memory to encode")
    monkeypatch.setattr(Walked, "encode", broken)
    log.step({"i": 1})
    with pytest.raises(MemoryError):
        log.flush()
    with pytest.raises(LogPoisonedError):
        log.step({"i": 2})
    log.close()
    monkeypatch.undo()
    with CheckpointLog.open(path, checkpoint_every=1) as log:      # its last commit
        assert sorted(log.records[0].checkpoints) == [0]
        assert log.restore(Position("n", 0, 0)) == {"i": 0}
