"""What a crash may leave, and what the log and save() make of it (docs/durability.md,
docs/log-format.md, "Crashes").

The two states a crash was found to leave unusable or lost are built exactly: a log
whose creation was cut after the file system persisted its size and not its data (a
header block of zeros), and a directory fsync that really fails with EIO. Then a
property test over an fsync-ordered model of the disk (tests/crashmodel.py): the file
operations of real play sessions are recorded, crash states the model allows are drawn
(prefixes, reorderings between barriers, torn sectors, appends persisted as their size
only, directory entries missing), and in each every flush that returned must survive
and the log must open for writing; the recovery that open runs is recorded and crashed
again. CI runs a seeded few hundred states; AUTOSAVE_CRASH_STATES=N draws N, from the
seed AUTOSAVE_CRASH_SEED (30 by default).
"""

import copy
import errno
import os
import stat

import pytest

import autosave
import autosave.files
from autosave import CheckpointLog, CorruptLogError
from autosave.log import LogFile
from autosave.log.chain import is_delta
from autosave.log.records import header_block

from crashmodel import (RecordingOps, crash_state, marks_before, materialise, run_state,
                        seeded)

BLOCK = 256
STATES = int(os.environ.get("AUTOSAVE_CRASH_STATES", "0") or 0) or 300
SEED = int(os.environ.get("AUTOSAVE_CRASH_SEED", "30"))


# -- a creation cut after its size was persisted --------------------------------------------

@pytest.mark.parametrize("filled", ["zeros", "first sector", "slots only"])
def test_a_log_sized_file_no_commit_reached_is_created_again(tmp_path, filled):
    """The file is as long as the header block and holds the header's own sectors and
    zeros only: no commit was ever made durable in it (a commit's records lie past the
    header block), so a writer creates the log again instead of refusing it."""
    path = tmp_path / "new.log"
    header = header_block(4096)
    image = bytearray(4096)
    if filled == "first sector":
        image[:512] = header[:512]
    elif filled == "slots only":
        image[64:192] = header[64:192]
    path.write_bytes(bytes(image))
    with CheckpointLog.open(path) as log:
        log.enter("n")
        log.step({"hp": 1})
        log.bookmark("b")
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(log.bookmarks["b"].position) == {"hp": 1}


def test_a_block_sized_file_of_other_bytes_is_not_taken_for_a_new_log(tmp_path):
    """Precisely that state: a file of the same size holding anything else is not a log
    of ours and is never overwritten (a writer refuses it, naming it)."""
    path = tmp_path / "other.log"
    data = os.urandom(4096)
    path.write_bytes(data)
    with pytest.raises(CorruptLogError, match="not an autosave checkpoint log"):
        CheckpointLog.open(path)
    assert path.read_bytes() == data


def test_a_creation_crashed_at_any_instant_leaves_no_log_or_a_whole_one(tmp_path):
    """The log is created as a whole header block under a temporary name, made durable,
    then linked to its name: every crash state of the creation opens for writing."""
    work = tmp_path / "work"
    work.mkdir()
    ops = RecordingOps()
    LogFile(work / "c.log", block_size=BLOCK, ops=ops).close()
    assert [op[0] for op in ops.trace if op[0] != "mark"][-3:] == ["link", "unlink",
                                                                    "fsync_dir"]
    rng = seeded(1)
    for k in range(len(ops.trace) + 1):
        for _ in range(30):
            materialise(work, crash_state(ops.trace, k, rng))
            if (work / "c.log").exists():
                assert (work / "c.log").read_bytes()[:BLOCK] == header_block(BLOCK)
            LogFile(work / "c.log", block_size=BLOCK).close()


# -- a directory fsync that fails -----------------------------------------------------------

@pytest.fixture
def directory_fsync_fails(monkeypatch):
    """os.fsync of a directory fails with the errno set in ``fail["errno"]``."""
    fail = {"errno": errno.EIO}
    real = os.fsync

    def fsync(fd):
        if fail["errno"] and stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(fail["errno"], os.strerror(fail["errno"]))
        return real(fd)

    monkeypatch.setattr(autosave.files.os, "fsync", fsync)
    return fail


def test_a_directory_fsync_eio_fails_the_log_creation(tmp_path, directory_fsync_fails):
    with pytest.raises(OSError) as info:
        CheckpointLog.open(tmp_path / "a.log")
    assert info.value.errno == errno.EIO
    directory_fsync_fails["errno"] = None
    with CheckpointLog.open(tmp_path / "a.log") as log:    # the disk works again
        log.enter("n")
        log.step(1)


def test_a_directory_fsync_eio_fails_the_flush_and_keeps_its_events(
        tmp_path, directory_fsync_fails):
    directory_fsync_fails["errno"] = None
    path = tmp_path / "b.log"
    CheckpointLog.open(path).close()
    directory_fsync_fails["errno"] = errno.EIO
    log = CheckpointLog.open(path)
    log.enter("n")
    log.step({"x": 1})
    log.bookmark("b")
    with pytest.raises(OSError) as info:
        log.flush()                     # the entry is not known durable: not returned
    assert info.value.errno == errno.EIO
    directory_fsync_fails["errno"] = None
    log.flush()                         # retried, the same events go in
    log.close()
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(log.bookmarks["b"].position) == {"x": 1}


def test_a_directory_fsync_eio_fails_save(tmp_path, directory_fsync_fails):
    """save() on the same principle: a returned save that a crash can lose would be a
    broken promise, so the error is raised (the new file is in place)."""
    path = tmp_path / "slot.sav"
    with pytest.raises(OSError) as info:
        autosave.save(path, {"a": 1})
    assert info.value.errno == errno.EIO
    assert autosave.load(path) == {"a": 1}


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP])
def test_a_file_system_without_directory_fsync_is_not_an_error(tmp_path,
                                                               directory_fsync_fails, code):
    directory_fsync_fails["errno"] = code
    assert autosave.save(tmp_path / "s.sav", [1]) > 0
    with CheckpointLog.open(tmp_path / "c.log") as log:
        log.enter("n")
        log.step(1)


# -- the property test ------------------------------------------------------------------------

# What a delta need not repeat: a save of 1-2 KB, a delta of some 80 bytes.
NOISE = bytes((i * 97 + 13) * 31 % 251 for i in range(1000))


def play(directory, ops, rounds=10):
    """A play session: chapters, steps, bookmarks, flushes, a reopen half-way. Marks
    each flush that returned with every bookmark flushed so far."""
    path = os.path.join(directory, "game.log")
    flushed = {}

    def open_log():
        # delta checkpoints, a whole one every 3: chains cross commits and the reopen
        return CheckpointLog.open(path, checkpoint_every=1, block_size=BLOCK,
                                  deltas_per_snapshot=2, full_every=3, ops=ops)

    log = open_log()
    for k in range(rounds):
        if k % 3 == 0:
            log.enter(f"chapter{k}")
        state = {"k": k, "i": 0, "text": "x" * (90 * k), "noise": NOISE, "trail": []}
        for i in range(2):
            state["i"] = i
            log.step(state)
            stepped = copy.deepcopy(state)
            # changed at once, before the writer thread encodes: the walk is the snapshot
            state["trail"].append(i)
            state["i"] = -1
        log.bookmark(f"m{k}")
        log.globals["k"] = k
        log.flush()
        flushed[f"m{k}"] = stepped
        ops.mark(dict(flushed))
        if k == rounds // 2:
            log.close()
            log = open_log()
    log.close()
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    directory = tmp_path_factory.mktemp("recorded")
    ops = RecordingOps()
    path = play(str(directory), ops)
    with CheckpointLog.open(path, writable=False) as log:
        offsets = sorted(o for r in log.records.values() for o in r.checkpoints.values())
        deltas = [o for o in offsets if is_delta(log.file.read(o)[1])]
    assert len(deltas) >= len(offsets) // 3       # the crash states cover delta chains
    return ops.trace


def check(directory, expected):
    """Every flush that returned is there, and the log opens for writing (the open's
    recovery recorded, to crash it again)."""
    path = os.path.join(directory, "game.log")
    if expected:
        assert os.path.exists(path), "the log's directory entry was lost"
    names = {name: i for i, name in enumerate(sorted(os.listdir(directory)), 1)}
    contents = {i: open(os.path.join(directory, n), "rb").read() for n, i in names.items()}
    ops = RecordingOps(names)
    with CheckpointLog.open(path, checkpoint_every=1, block_size=BLOCK, ops=ops) as log:
        for slot, state in (expected or {}).items():
            assert slot in log.bookmarks, (slot, sorted(log.bookmarks))
            assert log.restore(log.bookmarks[slot].position) == state
    return ops.trace, (names, contents)


def test_every_returned_flush_survives_every_crash_state(recorded, tmp_path):
    rng = seeded(SEED)
    work = tmp_path / "state"
    work.mkdir()
    kinds = set()
    for n in range(STATES):
        k = rng.randrange(len(recorded) + 1)
        expected = marks_before(recorded, k)
        materialise(work, crash_state(recorded, k, rng))
        recovery, start = check(str(work), expected)
        kinds.update(op[0] for op in recovery)
        if n % 3 == 0 and recovery:
            # the recovery crashed in turn, at any instant of it
            j = rng.randrange(len(recovery) + 1)
            materialise(work, crash_state(recovery, j, rng, start))
            check(str(work), expected)
    assert len(recorded) > 60
    assert {"write", "fsync"} <= kinds       # recoveries that repaired something were drawn


def test_the_model_allows_what_it_says(recorded):
    """The model is not vacuous: between barriers it loses, tears and reorders."""
    rng = seeded(5)
    names, durable, pending, _ = run_state(recorded, len(recorded), ({}, {}))
    assert not any(pending.values())         # a closed log left nothing pending
    k = next(i for i, op in enumerate(recorded) if op[0] == "write" and op[2] > BLOCK) + 1
    states = {crash_state(recorded, k, rng)[1].get(1, b"") for _ in range(50)}
    assert len(states) > 2


def test_a_creation_cut_before_its_unlink_leaves_nothing_behind(tmp_path):
    """Linked, not yet unlinked: the log is whole, and its writer removes the
    temporary name."""
    path = tmp_path / "d.log"
    LogFile(path, block_size=BLOCK).close()
    os.link(path, str(path) + ".creating")
    with LogFile(path, block_size=BLOCK) as log:
        log.commit(["A"], dict)
    assert sorted(os.listdir(tmp_path)) == ["d.log"]
