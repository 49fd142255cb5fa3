"""The checkpoint log under injected faults (autosave/log/faults.py): every write,
fsync and truncate of a scripted play session fails in turn, in every way, and after
each the log must open, hold every bookmark whose flush returned, and the writer must
either go on correctly or refuse clearly (poisoned until reopened)."""

import errno

import pytest

from autosave import CheckpointLog
from autosave.errors import LogPoisonedError
from autosave.log import LogFile
from autosave.log.chain import is_delta
from autosave.log.faults import KINDS, FaultyOps, InjectedFault
from autosave.log.records import PAYLOAD

ROUNDS = 7


def open_log(path, ops):
    """Open for writing, retrying an open that an injected fault made fail (a fault
    is one call: the next attempt meets a working disk)."""
    for _ in range(3):
        try:
            # delta checkpoints, a whole one every 3: chains cross commits and reopens
            return CheckpointLog.open(path, checkpoint_every=1, block_size=256,
                                      deltas_per_snapshot=2, full_every=3, ops=ops)
        except InjectedFault:
            continue
    raise AssertionError("the log did not open three times in a row")


# What a delta need not repeat: a save of 1-2 KB, a delta of some 80 bytes.
NOISE = bytes((i * 97 + 13) * 31 % 251 for i in range(1000))


def session(path, ops):
    """A scripted play session that reopens when the writer is poisoned. Returns
    (bookmark slot -> state of every bookmark whose flush returned, poisonings,
    [(operation, poisoned?) of each flush that failed], whether the last close
    flushed)."""
    flushed, waiting, poisonings, failed = {}, {}, 0, []
    log = open_log(path, ops)
    for k in range(ROUNDS):
        if k % 3 == 0 or log.position is None:      # (a reopen may find no position)
            log.enter(f"chapter{k}")
        for i in range(2):
            state = {"k": k, "i": i, "text": "x" * (40 * k), "noise": NOISE}
            log.step(state)
        log.bookmark(f"m{k}", description=f"round {k}")
        waiting[f"m{k}"] = state
        log.globals["k"] = k
        log.reached.add(k)
        try:
            log.flush()
        except LogPoisonedError:
            raise AssertionError("a poisoned writer was used")
        except InjectedFault:
            failed.append((ops.faults[-1][1], bool(log.file.poisoned)))
            if log.file.poisoned:
                # Refuses clearly until reopened; what it had not flushed is lost.
                with pytest.raises(LogPoisonedError, match="close and reopen"):
                    log.step({"after": "poison"})
                with pytest.raises(LogPoisonedError):
                    log.flush()
                log.close()
                log.close()
                poisonings += 1
                waiting.clear()
                log = open_log(path, ops)
            # Otherwise the same writer goes on and its next flush carries these events.
        else:
            flushed.update(waiting)
            waiting.clear()
    closed = False
    try:
        log.close()
    except InjectedFault:
        assert log.file.fd is None             # released even so
        log.close()                            # and idempotent
    else:
        flushed.update(waiting)
        closed = True
    return flushed, poisonings, failed, closed


def check_log(path, flushed):
    with CheckpointLog.open(path, writable=False) as log:
        for slot, state in flushed.items():
            assert slot in log.bookmarks, (slot, sorted(log.bookmarks))
            assert log.restore(log.bookmarks[slot].position) == state


def clean_calls(tmp_path):
    ops = FaultyOps()
    flushed, _, _, _ = session(tmp_path / "clean.log", ops)
    assert sorted(flushed) == [f"m{k}" for k in range(ROUNDS)]
    with CheckpointLog.open(tmp_path / "clean.log", writable=False) as log:
        payloads = [log.file.read(o)[1] for r in log.records.values()
                    for o in r.checkpoints.values()]
    assert sum(map(is_delta, payloads)) >= len(payloads) // 3      # faults hit deltas too
    return ops.calls


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_at_every_call_loses_nothing_flushed(tmp_path, kind):
    calls = clean_calls(tmp_path)
    assert calls > 4 * ROUNDS            # two fsyncs and two writes per flush at least
    outcomes = set()
    for n in range(1, calls + 1):
        path = tmp_path / f"{kind}{n}.log"
        ops = FaultyOps(fail_at=n, kind=kind)
        flushed, poisonings, failed, closed = session(path, ops)
        assert ops.faults, n                        # the fault happened
        check_log(path, flushed)
        # What a power cut right now would leave: also everything flushed.
        image = tmp_path / "durable.log"
        image.write_bytes(ops.durable[str(path)])
        check_log(image, flushed)
        # A writer that was never poisoned and closed cleanly lost nothing.
        if not poisonings and closed:
            assert sorted(flushed) == [f"m{k}" for k in range(ROUNDS)], (n, ops.faults)
        outcomes.update(failed)
    # Flushes failed in their writes (the writer went on) and in their fsyncs (it was
    # poisoned); a failed fsync never let the writer go on.
    assert ("fsync", True) in outcomes and ("fsync", False) not in outcomes
    # A short write is continued: it never fails a flush.
    assert (("pwrite", False) in outcomes) == (kind != "short")


def test_a_short_write_is_continued(tmp_path):
    path = tmp_path / "p.log"
    ops = FaultyOps(kind="short")
    log = LogFile(path, block_size=256, ops=ops)
    log.commit(["first"], dict)
    payload = bytes(range(256)) * 3
    offset = log.append(PAYLOAD, payload)
    ops.fail_at = ops.calls + 1              # the data write, cut in half
    log.commit(["e"], dict)
    assert ops.faults == [(ops.fail_at, "pwrite")]
    log.close()
    with LogFile(path, writable=False) as log:
        assert log.read(offset) == (PAYLOAD, payload) and log.recovered == 0


def test_a_full_disk_rolls_the_commit_back_and_keeps_its_records(tmp_path):
    path = tmp_path / "p.log"
    ops = FaultyOps(kind="full", full_for=1)
    log = LogFile(path, block_size=256, ops=ops)
    log.commit(["first"], dict)
    before = path.stat().st_size
    offset = log.append(PAYLOAD, b"p" * 700)
    ops.fail_at = ops.calls + 1              # half written, then the disk is full
    with pytest.raises(OSError) as failed:
        log.commit(["e"], dict)
    assert failed.value.errno == errno.ENOSPC
    assert path.stat().st_size == before           # the half-written bytes were cut
    assert log.read(offset) == (PAYLOAD, b"p" * 700)       # still pending
    log.commit(["e"], dict)                        # space again: the same writer goes on
    log.close()
    with LogFile(path, writable=False) as log:
        assert log.read(offset) == (PAYLOAD, b"p" * 700)
        assert [c for _, c in log.metadata()[1]] == [["first"], ["e"]]


def test_a_failed_flush_keeps_every_event(tmp_path):
    path = tmp_path / "p.log"
    ops = FaultyOps()
    with CheckpointLog.open(path, checkpoint_every=1, ops=ops) as log:
        log.enter("a")
        log.step({"hp": 1})
        log.flush()
        log.enter("b")
        log.step({"hp": 2})
        log.bookmark("s")
        log.reached.add("seen")
        log.globals["g"] = 1
        ops.fail_at, ops.kind = ops.calls + 1, "enospc"
        with pytest.raises(InjectedFault):
            log.flush()
        log.step({"hp": 3})
    with CheckpointLog.open(path, writable=False) as log:
        assert [r.name for r in log.records.values()] == ["a", "b"]
        assert log.restore(log.position) == {"hp": 3}
        assert log.restore(log.bookmarks["s"].position) == {"hp": 2}
        assert "seen" in log.reached and log.globals == {"g": 1}


def test_a_failed_fsync_poisons_and_reopen_finds_the_last_durable_commit(tmp_path):
    path = tmp_path / "p.log"
    ops = FaultyOps()
    log = CheckpointLog.open(path, checkpoint_every=1, ops=ops)
    log.enter("a")
    log.step({"hp": 1})
    log.bookmark("kept")
    log.flush()
    log.step({"hp": 2})
    log.bookmark("lost")
    ops.fail_at = ops.calls + 2             # the data write succeeds, its fsync fails
    with pytest.raises(InjectedFault):
        log.flush()
    assert ops.faults[-1][1] == "fsync"
    for mutation in (lambda: log.step({}), log.flush, lambda: log.bookmark("x"),
                     lambda: log.reached.add(1), lambda: log.enter("c")):
        with pytest.raises(LogPoisonedError, match="close and reopen"):
            mutation()
    log.close()                             # releases without trying to flush again
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        assert sorted(log.bookmarks) == ["kept"]
        assert log.restore(log.bookmarks["kept"].position) == {"hp": 1}


# -- faults on the writer thread ------------------------------------------------------------

class ThreadFault(MemoryError):
    """A failure injected on the log's writer thread."""


def thread_session(path):
    """The session's play, retrying a round whose call raised a failure of the writer
    thread (the same writer goes on) or reopening a poisoned writer. Returns (slot ->
    position of every bookmark whose flush returned, position -> state stepped,
    poisonings)."""
    states, flushed, waiting, poisoned = {}, {}, {}, 0
    log = open_log(path, FaultyOps())
    for k in range(ROUNDS):
        for _ in range(3):
            try:
                if k % 3 == 0 or log.position is None:
                    log.enter(f"chapter{k}")
                for i in range(2):
                    state = {"k": k, "i": i, "text": "x" * (40 * k), "noise": NOISE}
                    states[log.step(state)] = state
                waiting[f"m{k}"] = log.bookmark(f"m{k}").position
                log.flush()
            except ThreadFault:
                if log.file.poisoned:
                    with pytest.raises(LogPoisonedError, match="close and reopen"):
                        log.flush()
                    log.close()
                    waiting.clear()
                    poisoned += 1
                    log = open_log(path, FaultyOps())
                continue
            flushed.update(waiting)
            waiting.clear()
            break
    log.close()
    flushed.update(waiting)
    return flushed, states, poisoned


@pytest.mark.parametrize("made", ["thread", "here"])
@pytest.mark.parametrize("where", ["compress", "encode", "encode twice"])
def test_a_failure_on_the_writer_thread_at_every_checkpoint_loses_nothing(
        tmp_path, monkeypatch, where, made):
    """A checkpoint the thread fails to compress, or to encode, is written whole on the
    game's thread (encoded there again): nothing is lost; one that cannot be encoded
    at all poisons the writer, which reopens at its last commit. The same when the
    checkpoints are made on the game's thread (as after a big delta: forced here)."""
    from autosave.files import Walked
    from autosave.log import writer

    monkeypatch.setattr(writer._Chooser, "whole_after_big", lambda self: made == "here")

    encode, whole, delta = Walked.encode, writer._whole, writer._delta
    clean, _, _ = thread_session(tmp_path / "clean.log")
    for n in range(1, 2 * ROUNDS + 1):            # a checkpoint per step
        seen, failed = [], []

        def failing_encode(self, n=n, seen=seen, failed=failed):
            if self not in seen:
                seen.append(self)
            if seen.index(self) == n - 1 and (where == "encode twice" or self not in failed):
                failed.append(self)
                raise ThreadFault(f"injected at checkpoint {n}")
            return encode(self)

        def failing(fn, n=n, seen=seen):
            def compress(*args):
                seen.append(1)
                if len(seen) == n:
                    raise ThreadFault(f"injected at checkpoint {n}")
                return fn(*args)
            return compress

        with monkeypatch.context() as patched:
            if where == "compress":
                patched.setattr(writer, "_whole", failing(whole))
                patched.setattr(writer, "_delta", failing(delta))
            else:
                patched.setattr(Walked, "encode", failing_encode)
            path = tmp_path / f"{where}{n}.log"
            flushed, states, poisoned = thread_session(path)
        assert len(seen) >= n                      # the fault happened
        assert poisoned == (where == "encode twice"), n
        if where != "encode twice":
            assert sorted(flushed) == sorted(clean), n        # nothing lost
        with CheckpointLog.open(path, writable=False) as log:
            for slot, position in flushed.items():
                assert log.bookmarks[slot].position == position
                assert log.restore(position) == states[position], (n, slot)
