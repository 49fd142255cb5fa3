"""Delta checkpoints (docs/log-format.md, "Checkpoints"): every restored checkpoint's
bytes equal the ``autosave.dumps`` of the state it recorded, whatever changed between
checkpoints (fields, additions, deletions, shared references, cycles, coroutines, a
content upgrade); the writer thread's failures surface; forged chains are refused
within the log's budget."""

import linecache
import random
import struct
import textwrap

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave import CheckpointLog, CorruptLogError, Position
from autosave.checks import limits
from autosave.files import Walked
from autosave.log import chain, writer
from autosave.log.chain import DELTA_HEAD, DELTA_TAG, is_delta, read_checkpoint
from autosave.log.file import PAYLOAD
from modtools import fresh_name, load_module, unload

autosave.allow(__name__)


@attrs.define(eq=False)
class Agent:
    id: int
    x: float
    hp: int
    name: str
    friend: "Agent | None" = None
    items: list = attrs.Factory(list)


def world(rng, n):
    agents = [Agent(i, rng.random(), 100, f"a{i}", None, [rng.randrange(9)]) for i in range(n)]
    for agent in agents:
        agent.friend = rng.choice(agents)        # shared references and cycles
    return {"agents": agents, "by_name": {a.name: a for a in agents}, "tick": 0}


def mutate(rng, state, op):
    agents = state["agents"]
    state["tick"] += 1
    if op == "change" and agents:
        for agent in rng.sample(agents, max(1, len(agents) // 20)):
            agent.x += 1.0
            agent.hp -= 1
            agent.items.append(rng.randrange(9))
    elif op == "add":
        agent = Agent(len(agents) + state["tick"] * 1000, 0.5, 10, f"n{state['tick']}",
                      rng.choice(agents) if agents else None)
        agents.insert(rng.randrange(len(agents) + 1), agent)
        state["by_name"][agent.name] = agent
    elif op == "remove" and agents:
        gone = agents.pop(rng.randrange(len(agents)))
        del state["by_name"][gone.name]
        for agent in agents:
            if agent.friend is gone:
                agent.friend = agent                  # a self-cycle instead
    elif op == "share":
        state["shared"] = state.get("shared") or [agents[:3]] * 2
    elif op == "same":
        pass


def checkpoint_payloads(log):
    return {(r.id, s): log.file.read(o)[1]
            for r in log.records.values() for s, o in r.checkpoints.items()}


def check_bytes(path, expected, *, deltas=True):
    """Every checkpoint rebuilds the exact bytes recorded, and restores to a state whose
    save is those bytes again."""
    with CheckpointLog.open(path, writable=False) as log:
        payloads = checkpoint_payloads(log)
        assert set(payloads) == set(expected)
        for (rid, step), data in expected.items():
            offset = log.records[rid].checkpoints[step]
            assert read_checkpoint(log.file, offset) == data
            restored = log.restore(Position(log.records[rid].name, step, rid))
            assert autosave.dumps(restored) == data
    if deltas:
        assert sum(map(is_delta, payloads.values())) >= len(payloads) // 2
    return payloads


OPS = ["change", "change", "change", "add", "remove", "share", "same"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 32), ops=st.lists(st.sampled_from(OPS), min_size=1,
                                                  max_size=14),
       full_every=st.integers(1, 5), reopen=st.integers(0, 14))
def test_every_checkpoint_rebuilds_the_bytes_of_its_state(tmp_path_factory, seed, ops,
                                                           full_every, reopen):
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("d") / "game.log"
    state = world(rng, 60)
    expected = {}
    log = CheckpointLog.open(path, checkpoint_every=1, full_every=full_every)
    log.enter("play", state=state)
    expected[(0, 0)] = autosave.dumps(state)
    for k, op in enumerate(ops):
        mutate(rng, state, op)
        position = log.step(state)
        expected[(position.record, position.step)] = autosave.dumps(state)
        if k % 4 == 3:
            log.flush()
        if k == reopen:                       # a new writer: its first checkpoint is whole
            log.close()
            log = CheckpointLog.open(path, checkpoint_every=1, full_every=full_every)
    log.close()
    check_bytes(path, expected, deltas=False)


def test_chains_are_whole_every_full_every_deltas(tmp_path):
    rng = random.Random(1)
    state = world(rng, 300)
    expected = {}
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1, full_every=3) as log:
        log.enter("play", state=state)
        expected[(0, 0)] = autosave.dumps(state)
        for _ in range(12):
            mutate(rng, state, "change")
            position = log.step(state)
            expected[(0, position.step)] = autosave.dumps(state)
    payloads = check_bytes(tmp_path / "g.log", expected)
    kinds = "".join("d" if is_delta(payloads[(0, s)]) else "W" for s in range(13))
    assert kinds == "WdddWdddWdddW"
    # a delta is taken against the checkpoint before it
    with CheckpointLog.open(tmp_path / "g.log", writable=False) as log:
        offsets = log.records[0].checkpoints
        for s in range(1, 4):
            assert DELTA_HEAD.unpack_from(payloads[(0, s)])[1] == offsets[s - 1]


def test_deltas_are_small_when_little_changes(tmp_path):
    rng = random.Random(2)
    state = world(rng, 3000)
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1) as log:
        log.enter("play", state=state)
        for _ in range(3):
            changed = rng.sample(state["agents"], 30)             # 1%
            for agent in changed:
                agent.x += 1.0
                agent.hp -= 1
            log.step(state)
        payloads = checkpoint_payloads(log)
    whole = len(payloads[(0, 0)])
    alone = len(autosave.dumps([(a.x, a.hp) for a in changed]))
    for step in (1, 2, 3):
        assert is_delta(payloads[(0, step)])
        assert len(payloads[(0, step)]) < max(4 * alone + 4096, whole // 10)


def test_whole_only_when_full_every_is_0(tmp_path):
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1, full_every=0) as log:
        log.enter("n")
        for i in range(5):
            log.step({"i": i, "pad": "x" * 1000})
        assert not any(map(is_delta, checkpoint_payloads(log).values()))
    with pytest.raises(ValueError, match="full_every"):
        CheckpointLog.open(tmp_path / "h.log", full_every=-1)


def test_coroutines_and_a_content_upgrade_across_deltas(tmp_path):
    name = fresh_name("delta_game")
    autosave.allow(name)
    source = "import autosave\n" + textwrap.dedent("""
        @autosave.coroutine
        def walker(n):
            total = 0
            for i in range(n):
                total += i
                yield total
        """)
    # the coroutine transform reads the source, as from a .py file
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    module = load_module(name, source)
    try:
        path = tmp_path / "g.log"
        content = {"a": ["l0", "l1", "l2", "l3", "l4", "l5"]}
        expected = {}
        state = {"walkers": [module.walker(50) for _ in range(20)], "pad": list(range(500))}
        with CheckpointLog.open(path, checkpoint_every=1, content=content) as log:
            position = log.enter("a", state=state)
            expected[(position.record, 0)] = autosave.dumps(state)
            for line in range(6):
                for w in state["walkers"][line::3]:
                    next(w)
                position = log.step(state)
                expected[(position.record, position.step)] = autosave.dumps(state)
        # a patch inserts a line after l2: checkpoints past it are dropped, the rest kept
        patched = {"a": ["l0", "l1", "l2", "new", "l3", "l4", "l5"]}
        with CheckpointLog.open(path, checkpoint_every=1, content=patched) as log:
            kept = {(r.id, s) for r in log.records.values() for s in r.checkpoints}
            assert kept == {(0, s) for s in range(4)}
            expected = {k: v for k, v in expected.items() if k in kept}
            state = log.restore(Position("a", 3, 0))
            for w in state["walkers"]:
                next(w)
            position = log.step(state)                 # a branch: its first is whole
            expected[(position.record, position.step)] = autosave.dumps(state)
            for w in state["walkers"][::2]:
                next(w)
            position = log.step(state)                 # and a delta after it
            expected[(position.record, position.step)] = autosave.dumps(state)
        payloads = check_bytes(path, expected, deltas=False)
        assert is_delta(payloads[(position.record, position.step)])
    finally:
        unload(name)


# -- the writer thread ---------------------------------------------------------------------

def test_a_failure_on_the_writer_thread_surfaces_at_the_next_call(tmp_path, monkeypatch):
    calls = []

    def broken(data, base):
        calls.append(len(data))
        raise MemoryError("no memory for the delta")

    path = tmp_path / "g.log"
    expected = {}
    log = CheckpointLog.open(path, checkpoint_every=1)
    log.enter("n")
    state = {"i": 0, "pad": list(range(300))}
    log.step(state)
    expected[(0, 0)] = autosave.dumps(state)
    monkeypatch.setattr(writer, "_delta", broken)
    state["i"] = 1
    log.step(state)
    expected[(0, 1)] = autosave.dumps(state)
    with pytest.raises(MemoryError) as raised:
        log.flush()                          # nothing committed: it raised
    assert calls and "written whole instead" in "".join(raised.value.__notes__)
    monkeypatch.undo()
    state["i"] = 2
    log.step(state)                          # a delta again, against the whole one
    expected[(0, 2)] = autosave.dumps(state)
    log.close()
    payloads = check_bytes(path, expected, deltas=False)
    assert not is_delta(payloads[(0, 1)]) and is_delta(payloads[(0, 2)])


def test_the_next_step_raises_a_failure_and_records_nothing(tmp_path, monkeypatch):
    def broken(data, base):
        raise RuntimeError("broken")

    monkeypatch.setattr(writer, "_delta", broken)
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1) as log:
        log.enter("n")
        log.step({"i": 0})
        log.step({"i": 1})
        log._writer._jobs[-1].future.exception()      # wait for the thread
        with pytest.raises(RuntimeError, match="broken"):
            log.step({"i": 2})
        assert log.position.step == 1 and sorted(log.records[0].checkpoints) == [0, 1]
        assert log.restore(log.position) == {"i": 1}


def test_steps_run_ahead_of_the_thread_by_a_few_checkpoints(tmp_path):
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1) as log:
        log.enter("n")
        for i in range(3 * writer.IN_FLIGHT):
            log.step({"i": i})
            assert len(log._writer._jobs) <= writer.IN_FLIGHT
        assert log.restore(Position("n", 5, 0)) == {"i": 5}     # waits for it
        assert not log._writer._jobs


@pytest.mark.parametrize("walks", [1, 2, 3])
def test_walks_in_flight_are_bounded_by_bytes(tmp_path, monkeypatch, walks):
    """With room for ``walks`` walks of the state's size, no more wait for the thread,
    and the file is the one the count alone would have written."""
    import threading
    rng = random.Random(4)
    first = [rng.random() for _ in range(500)]
    # a little changes each time: deltas, made on the thread (writer._Chooser)
    states = [first[:k] + [0.5] + first[k + 1:] for k in range(12)]
    size = len(autosave.dumps(states[0]))
    images, default = [], writer.WALKS_HELD
    for held in (default, walks * writer.WALK_PER_SAVE_BYTE * size):
        monkeypatch.setattr(writer, "WALKS_HELD", held)
        gate = threading.Event()      # the thread works only while the game waits for it
        build, collect_one = writer._Chooser.build, writer.CheckpointWriter._collect_one

        def held_back(self, *args, build=build, gate=gate):
            assert gate.wait(10)
            return build(self, *args)

        def waited_for(self, collect_one=collect_one, gate=gate):
            gate.set()
            collect_one(self)
        monkeypatch.setattr(writer._Chooser, "build", held_back)
        monkeypatch.setattr(writer.CheckpointWriter, "_collect_one", waited_for)
        monkeypatch.setattr(writer._Chooser, "whole_after_big", lambda self: False)
        path = tmp_path / f"g{held}.log"
        with CheckpointLog.open(path, checkpoint_every=1, full_every=3) as log:
            log.enter("n")
            log.step(states[0])
            log.flush()                   # the first save's size is known
            most = 0
            for state in states[1:]:
                gate.clear()
                log.step(state)
                most = max(most, len(log._writer._jobs))
        assert most == (writer.IN_FLIGHT if held == default else walks)
        monkeypatch.undo()
        images.append(path.read_bytes())
        with CheckpointLog.open(path, writable=False) as log:
            for k, state in enumerate(states):
                assert log.restore(Position("n", k, 0)) == state
    assert images[0] == images[1]


@pytest.mark.parametrize("modes", ["thread inline", "inline alternate"])
def test_the_same_file_whether_checkpoints_are_made_here_or_on_the_thread(
        tmp_path, monkeypatch, modes):
    """The caller's thread makes a checkpoint itself when the thread is idle and the
    chooser says so (writer._Chooser.whole_after_big, forced here whatever changed):
    the chooser makes the same payloads in the same order, so the file is byte for
    byte the same."""
    images = []
    for mode in modes.split():
        turns = iter(range(1000))
        decide = {"thread": lambda self: False, "inline": lambda self: True,
                  "alternate": lambda self: next(turns) % 3 != 0}[mode]
        monkeypatch.setattr(writer._Chooser, "whole_after_big", decide)
        rng = random.Random(11)
        state = world(rng, 40)
        expected = {}
        path = tmp_path / f"{mode}.log"
        with CheckpointLog.open(path, checkpoint_every=1, full_every=4) as log:
            log.enter("n")
            for k in range(24):
                mutate(rng, state, ["change", "change", "add", "change", "remove"][k % 5])
                expected[(0, k)] = autosave.dumps(state)
                log.step(state)
                if k % 5 == 4:
                    log.flush()
        images.append(path.read_bytes())
        payloads = check_bytes(path, expected, deltas=False)
        assert sum(map(is_delta, payloads.values())) >= 6
    assert images[0] == images[1]


# -- forged chains -------------------------------------------------------------------------

def forge(path, states, payload_of):
    """A log of one record whose checkpoint k holds ``payload_of(k, offsets, data)``."""
    with CheckpointLog.open(path, checkpoint_every=1, full_every=0) as log:
        log.enter("n")
        record = log._records[0]
        for k, state in enumerate(states):
            log.step(state)
            log._writer.settle()
            data = autosave.dumps(state)
            payload = payload_of(k, record.checkpoints, data)
            if payload is not None:            # the checkpoint event points at it instead
                offset = log.file.append(PAYLOAD, payload)
                record.checkpoints[k] = offset
                log._events[-1][3] = offset


def delta_of(data, base, base_offset):
    return chain.make_delta(data, base, base_offset)


@pytest.mark.parametrize("flaw", ["forward", "itself", "digest", "size", "cut", "frame"])
def test_a_forged_delta_is_a_corrupt_log_error_naming_its_offset(tmp_path, flaw):
    path = tmp_path / "g.log"
    states = [{"i": 0, "pad": "a" * 500}, {"i": 1, "pad": "b" * 500}, {"i": 2}]

    def payload_of(k, offsets, data):
        if k != 1:
            return None
        base = autosave.dumps(states[0])
        good = delta_of(data, base, offsets[0])
        tag, at, size, digest = DELTA_HEAD.unpack_from(good)
        frame = good[DELTA_HEAD.size:]
        if flaw == "forward":
            return DELTA_HEAD.pack(tag, 1 << 40, size, digest) + frame
        if flaw == "itself":
            return DELTA_HEAD.pack(tag, 10 ** 9, size, digest) + frame
        if flaw == "digest":
            return DELTA_HEAD.pack(tag, at, size, digest ^ 1) + frame
        if flaw == "size":
            return DELTA_HEAD.pack(tag, at, size + 1, digest) + frame
        if flaw == "cut":
            return good[:DELTA_HEAD.size - 3]
        return good[:DELTA_HEAD.size] + b"\x00" * 20            # not a frame

    forge(path, states, payload_of)
    with CheckpointLog.open(path, writable=False) as log:
        offset = log.records[0].checkpoints[1]
        with pytest.raises(CorruptLogError, match=f"offset {offset}"):
            log.restore(Position("n", 1, 0))
        assert log.restore(Position("n", 2, 0)) == states[2]       # the others restore


def copy_chain(tmp_path, monkeypatch, count, size):
    """A forged chain: ``count`` deltas, each copying the whole base of ``size`` random
    bytes again (a few bytes each), the writer's budget check switched off."""
    import os
    blob = {"blob": os.urandom(size)}
    data = autosave.dumps(blob)
    frame = delta_of(data, data, 0)[DELTA_HEAD.size:]

    def copy(data_, base):
        return DELTA_HEAD.pack(DELTA_TAG, 0, len(data_), chain.xxhash.xxh64_intdigest(data_)) \
            + frame
    monkeypatch.setattr(writer, "_delta", copy)
    monkeypatch.setattr(writer, "chain_fits", lambda sizes, log_size: True)
    path = tmp_path / "chain.log"
    with CheckpointLog.open(path, checkpoint_every=1, full_every=10 ** 9) as log:
        log.enter("n")
        for _ in range(count):
            log.step(blob)
    monkeypatch.undo()
    return path, blob, len(path.read_bytes())


def test_a_forged_chain_is_refused_within_the_logs_budget(tmp_path, monkeypatch):
    """Each delta rebuilds the whole base for a few bytes of file: without a budget a
    chain of them would make a restore quadratic in the log's size. The budget's fixed
    allowance is taken away so that a short run shows the refusal (the slow test runs
    it as shipped)."""
    path, blob, size = copy_chain(tmp_path, monkeypatch, 2500, 1 << 16)
    monkeypatch.setattr(limits, "WORK_BASE", 0)
    produced = []
    apply = chain._apply

    def counting(path_, offset, payload, base, cost):
        out = apply(path_, offset, payload, base, cost)
        produced.append(len(out))
        return out
    monkeypatch.setattr(chain, "_apply", counting)
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(Position("n", 20, 0)) == blob          # a short chain fits
        produced.clear()
        with pytest.raises(CorruptLogError, match="Budgets"):
            log.restore(Position("n", 2499, 0))
    # refused as it passed the budget: what it rebuilt is linear in the log's size
    assert 0 < sum(produced) <= chain.BYTES_PER_STEP * limits.Budget(size).work


@pytest.mark.slow
def test_a_forged_chain_is_refused_within_the_shipped_budget(tmp_path, monkeypatch):
    path, blob, size = copy_chain(tmp_path, monkeypatch, 3000, 1 << 18)
    with CheckpointLog.open(path, writable=False) as log:
        with pytest.raises(CorruptLogError, match="Budgets"):
            log.restore(Position("n", 2999, 0))


def test_the_writer_writes_only_chains_a_reader_restores(tmp_path):
    """A log smaller than what its chain would rebuild gets a whole checkpoint instead:
    chain_fits is the reader's own charge."""
    sizes = [1 << 20] * 40
    assert not chain.chain_fits(sizes, 0)
    assert chain.chain_fits(sizes[:2], 1 << 20)
    big = 200 << 20
    assert not chain.chain_fits([1 << 20, big], 1 << 20)


def test_the_delta_head_is_documented():
    assert DELTA_HEAD.size == struct.calcsize("<BQQQ") == 25 and DELTA_TAG == ord("D")


# -- checkpoint tables inflated when first used (open time bounded) ----------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 10 ** 6), max_size=40, unique=True).map(sorted),
       st.lists(st.tuples(st.sampled_from(["set", "get", "in", "iter", "newest", "len"]),
                          st.integers(0, 10 ** 6 + 50)), max_size=12),
       st.integers(0, 40), st.integers(0, 40))
def test_a_lazy_table_behaves_as_its_dict(steps, ops, cut, cut2):
    """Segmented (its first ``cut`` checkpoints in two segments) or not."""
    from autosave.log.tables import (CheckpointTable, newest_step, pack_checkpoints,
                                     pack_row, pack_stream)
    plain = {s: 4096 + 10 * s for s in steps}
    items = list(plain.items())
    cut = min(cut, len(items))
    cut2 = min(cut2, cut)
    stored = {}
    segments = []
    for part in (items[:cut2], items[cut2:cut]) if cut else ():
        count, stream = pack_stream(part)
        stored[len(stored) + 4096] = stream
        segments.append([count, len(stored) + 4095])
    count, packed = pack_stream(items[cut:])
    table = CheckpointTable(count, packed, "p", 0, 0, segments, stored.__getitem__)
    if not segments:
        assert pack_checkpoints(table) == pack_checkpoints(plain)   # as read, not inflated
    assert pack_row(table, segments, None)[0] == table.row() and table._table is None
    top = max(steps, default=-1)
    for op, step in ops:
        if op == "set":
            top = max(top, step) + 1                # added in step order, as the log does
            table[top] = plain[top] = step
        elif op == "get":
            assert table.get(step) == plain.get(step)
        elif op == "in":
            assert (step in table) == (step in plain)
        elif op == "iter":
            assert list(table) == list(plain)
        elif op == "newest":
            assert newest_step(table) == newest_step(plain)
        else:
            assert len(table) == len(plain)
    assert dict(table.items()) == plain and pack_checkpoints(table) == pack_checkpoints(plain)
    if table._table is None:
        # sealing more: the segments kept, the rest packed after them
        more = {}
        row, sealed = pack_row(table, segments, lambda b: more.setdefault(len(more), b) and 0)
        assert sealed[:len(segments)] == segments


def test_opening_inflates_no_checkpoint_table(tmp_path):
    from autosave.log.records import CheckpointTable
    path = tmp_path / "g.log"
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=2) as log:
        log.enter("n")
        for i in range(300):
            log.step({"i": i})
            log.flush()
    # (a snapshot written after new checkpoints packs the table anew, inflating it)
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=1000) as log:
        table = log._records[0].checkpoints
        assert type(table) is CheckpointTable and table._table is None
        for i in range(300, 310):                   # steps and flushes leave it packed
            log.step({"i": i})
            log.flush()
        assert table._table is None and table.added
        assert log.restore(Position("n", 150, 0)) == {"i": 150}
        assert table._table is not None
    with CheckpointLog.open(path, writable=False) as log:
        assert all(log.restore(Position("n", i, 0)) == {"i": i} for i in range(0, 310, 7))


@pytest.mark.parametrize("flaw", ["bomb", "no size", "lying size", "not a frame"])
def test_a_forged_whole_checkpoint_is_refused_before_it_is_decompressed(tmp_path, flaw):
    import zstandard
    from autosave.log.chain import WHOLE_TAG
    path = tmp_path / "g.log"
    states = [{"i": 0}, {"i": 1, "pad": "x" * 300}]

    def payload_of(k, offsets, data):
        if k != 1:
            return None
        if flaw == "bomb":           # 1 GB of zeros in a few hundred bytes
            frame = zstandard.ZstdCompressor(level=19).compress(bytes(1 << 30))
        elif flaw == "no size":
            frame = zstandard.ZstdCompressor(write_content_size=False).compressobj().compress(
                data)
        elif flaw == "lying size":
            frame = zstandard.ZstdCompressor().compress(data + b"more")
        else:
            frame = b"\x28\xb5\x2f\xfd" + bytes(12)
        return bytes((WHOLE_TAG,)) + frame

    forge(path, states, payload_of)
    with CheckpointLog.open(path, writable=False) as log:
        offset = log.records[0].checkpoints[1]
        with pytest.raises((CorruptLogError, autosave.LoadError), match=f"offset {offset}"):
            log.restore(Position("n", 1, 0))
        assert log.restore(Position("n", 0, 0)) == states[0]


def test_whole_checkpoints_are_zstd_unless_the_log_is_too_small(tmp_path):
    from autosave.log.chain import WHOLE_TAG
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1, full_every=0) as log:
        log.enter("n")
        log.step({"i": 0, "pad": "x" * 1000})
        log.step({"i": 1, "big": bytes(20 << 20)})      # 20 MB of zeros in a small log
        log.flush()               # (a checkpoint is judged by the log's size when taken)
        log.step({"i": 2, "big": bytes(20 << 20)})
        first, big, later = (log.file.read(log.records[0].checkpoints[s])[1] for s in range(3))
    assert first[0] == WHOLE_TAG
    assert big[0] != WHOLE_TAG and len(big) > 20 << 20     # stored zlib blocks, as before
    assert later[0] == WHOLE_TAG                            # the log now holds it


def test_segmented_tables_are_sealed_once_and_read_when_used(tmp_path, monkeypatch):
    """A snapshot names the table segments sealed before it instead of holding them:
    each segment is written once, and every checkpoint still restores."""
    from autosave.log import tables
    monkeypatch.setattr(tables, "SEGMENT", 8)
    path = tmp_path / "g.log"
    sealed = []
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=3) as log:
        log.enter("n")
        for i in range(100):
            log.step({"i": i})
            log.flush()
            sealed.append(list(log._records[0].segments))
    assert len(sealed[-1]) >= 10
    for before, after in zip(sealed, sealed[1:]):
        assert after[:len(before)] == before              # sealed once, never again
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=3) as log:
        table = log._records[0].checkpoints
        assert table.segments and table._table is None
        assert log.position.step == 99
        for i in range(100, 130):                          # snapshots name the segments
            log.step({"i": i})
            log.flush()
        assert table.segments == log._records[0].segments[:len(table.segments)]
    with CheckpointLog.open(path, writable=False) as log:
        assert [log.restore(Position("n", i, 0))["i"] for i in range(130)] == list(range(130))


def test_a_forged_segment_is_refused_at_first_use(tmp_path, monkeypatch):
    from autosave.log import tables
    from autosave.log.file import LogFile
    path = tmp_path / "t.log"
    with LogFile(path) as file:
        real = file.append(PAYLOAD, tables.pack_stream([(0, 4096), (1, 4200)])[1])
        row = [0, "n", None, None, None, 0, 3, ["zs", [[2, real], [2, real + 3]],
                                                 ["zd", *tables.pack_stream([(2, 1), (3, 2)])]]]
        state = {"records": [row], "bookmarks": [], "reached": [],
                 "globals": autosave.dumps({}), "at": None}
        file.deltas_per_snapshot = 0
        file.commit([["x"]], lambda: state)
    with CheckpointLog.open(path, writable=False) as log:      # the first segment reads
        with pytest.raises(CorruptLogError, match="checkpoints of record 0 are not a table: "
                                                  f"its segment at offset {real + 3}"):
            list(log.records[0].checkpoints)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 32), ops=st.lists(st.sampled_from(OPS), min_size=1,
                                                  max_size=8))
def test_a_save_in_many_pieces_rebuilds_its_bytes(tmp_path_factory, monkeypatch, seed, ops):
    """Pieces of 2 KiB against 512 bytes of base either side: additions and removals
    move content past a piece's reach, and every save still rebuilds exactly."""
    monkeypatch.setattr(chain, "PIECE", 2048)
    monkeypatch.setattr(chain, "REACH", 512)
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("p") / "game.log"
    state = world(rng, 200)
    expected = {}
    with CheckpointLog.open(path, checkpoint_every=1, full_every=8) as log:
        log.enter("play", state=state)
        expected[(0, 0)] = autosave.dumps(state)
        for op in ops:
            mutate(rng, state, op)
            position = log.step(state)
            expected[(position.record, position.step)] = autosave.dumps(state)
    payloads = check_bytes(path, expected, deltas=False)
    many = [p for p in payloads.values() if is_delta(p)]
    assert all(struct.unpack_from("<I", p, DELTA_HEAD.size)[0] > 1 for p in many)


@pytest.mark.parametrize("flaw", ["outside the base", "past the payload", "count"])
def test_a_forged_piece_table_is_refused(tmp_path, flaw):
    path = tmp_path / "g.log"
    states = [{"i": 0, "pad": "a" * 500}, {"i": 1, "pad": "b" * 500}, {"i": 2}]

    def payload_of(k, offsets, data):
        if k != 1:
            return None
        good = delta_of(data, autosave.dumps(states[0]), offsets[0])
        at = DELTA_HEAD.size + chain.PIECES.size
        lo, length, size = chain.PIECE_HEAD.unpack_from(good, at)
        if flaw == "count":
            return good[:DELTA_HEAD.size] + chain.PIECES.pack(10 ** 6) + good[at:]
        piece = (chain.PIECE_HEAD.pack(lo, length + 10 ** 6, size) if flaw == "outside the base"
                 else chain.PIECE_HEAD.pack(lo, length, size + 1))
        return good[:at] + piece + good[at + chain.PIECE_HEAD.size:]

    forge(path, states, payload_of)
    with CheckpointLog.open(path, writable=False) as log:
        offset = log.records[0].checkpoints[1]
        with pytest.raises(CorruptLogError, match=f"offset {offset}"):
            log.restore(Position("n", 1, 0))


def test_when_most_of_the_state_changes_checkpoints_go_whole(tmp_path):
    """A delta an eighth of its save or more: the next 8 are whole, then a delta is
    tried again."""
    rng = random.Random(3)
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1) as log:
        log.enter("n")
        for _ in range(12):
            log.step([rng.random() for _ in range(2000)])       # all of it changes
            log.flush()                   # (the writer learns a delta's size when done)
        kinds = "".join("d" if is_delta(p) else "W" for p in checkpoint_payloads(log).values())
    assert kinds == "Wd" + "W" * 8 + "dW"


def test_whole_checkpoints_after_a_big_delta_are_made_on_the_games_thread(
        tmp_path, monkeypatch):
    """When most of the state changes, the thread would only take turns with the game
    over the same work: those checkpoints are made and appended in step() itself.
    A small change goes to the thread."""
    import threading
    made, build = [], writer.CheckpointWriter._build

    def spied(self, *args):
        made.append(threading.current_thread() is threading.main_thread())
        return build(self, *args)
    monkeypatch.setattr(writer.CheckpointWriter, "_build", spied)
    rng = random.Random(3)
    state = [rng.random() for _ in range(2000)]
    with CheckpointLog.open(tmp_path / "g.log", checkpoint_every=1) as log:
        log.enter("n")
        for k in range(22):
            if k < 12:
                state = [rng.random() for _ in range(2000)]      # all of it changes
            else:
                state = state[:-1] + [rng.random()]              # hardly anything
            before = len(made)
            position = log.step(state)
            if len(made) > before and made[-1]:
                assert not log._writer._jobs       # appended before step() returned
                assert position.step in log._records[0].checkpoints
            log.flush()
        kinds = "".join("d" if is_delta(p) else "W" for p in checkpoint_payloads(log).values())
    assert kinds == "Wd" + "W" * 8 + "d" + "W" * 8 + "ddd"
    # here: the eight whole ones after each big delta; the deltas, on the thread
    assert made == [False, False] + [True] * 8 + [False] + [True] * 8 + [False] * 3


def test_the_same_play_writes_the_same_file_however_the_thread_runs(tmp_path, monkeypatch):
    """Events, offsets and whole-or-delta choices depend on the game's calls only."""
    import time
    images = []
    for delay in (0.0, 0.004):
        whole, delta, encode = writer._whole, writer._delta, Walked.encode

        def slow(fn, delay=delay):
            def run(*args):
                time.sleep(delay)
                return fn(*args)
            return run
        monkeypatch.setattr(writer, "_whole", slow(whole))
        monkeypatch.setattr(writer, "_delta", slow(delta))
        monkeypatch.setattr(Walked, "encode", slow(encode))     # the encoding too
        rng = random.Random(9)
        path = tmp_path / f"g{delay}.log"
        with CheckpointLog.open(path, checkpoint_every=1, full_every=4) as log:
            log.enter("n")
            for k in range(30):
                log.step([rng.random() for _ in range(300 if k % 7 else 3000)])
                if k % 5 == 4:
                    log.flush()
        monkeypatch.undo()
        images.append(path.read_bytes())
    assert images[0] == images[1]
