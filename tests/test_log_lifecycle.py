"""A CheckpointLog object's life: read-only opens refuse every mutation at the call,
close() always releases the file and is idempotent, a writer used from a forked child
refuses and the parent's data is never lost, and what a game may pass in (names with
lone surrogates, 64-bit keys) never makes a flush fail."""

import os
import sys

import pytest

from autosave import CheckpointLog
from autosave.errors import (LogClosedError, LogForkedError, ReadOnlyLogError)
from autosave.log import LogFile


def open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "profile.log"
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("ch1")
        log.step({"hp": 1})
        log.bookmark("a")
        log.globals["g"] = 1
    return path


def mutations(log):
    return {
        "enter": lambda: log.enter("x"),
        "step": lambda: log.step({"hp": 2}),
        "bookmark": lambda: log.bookmark("b"),
        "delete_bookmark": lambda: log.delete_bookmark("a"),
        "reached.add": lambda: log.reached.add("k"),
        "flush": log.flush,
        "globals[]=": lambda: log.globals.__setitem__("g", 2),
        "globals.update": lambda: log.globals.update(g=2),
        "del globals[]": lambda: log.globals.__delitem__("g"),
        "globals.pop": lambda: log.globals.pop("g"),
        "globals.clear": log.globals.clear,
        "globals.setdefault": lambda: log.globals.setdefault("h", 1),
    }


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_read_only_refuses_every_mutation_and_close_releases(path):
    before = open_fds()
    image = path.read_bytes()
    for _ in range(3):
        log = CheckpointLog.open(path, writable=False)
        for name, mutation in mutations(log).items():
            with pytest.raises(ReadOnlyLogError, match="read-only"):
                mutation()
        assert isinstance(ReadOnlyLogError("x"), PermissionError)
        assert log.globals == {"g": 1} and sorted(log.bookmarks) == ["a"]
        assert log.restore(log.bookmarks["a"].position) == {"hp": 1}   # reading works
        log.close()
        log.close()
    assert open_fds() == before
    assert path.read_bytes() == image


def test_close_is_idempotent_and_a_closed_log_refuses(path):
    log = CheckpointLog.open(path)
    log.close()
    log.close()
    with pytest.raises(LogClosedError):
        log.step({"hp": 3})
    with pytest.raises(LogClosedError):
        log.file.read_committed(log.file.block_size)
    # The lock went with it: a new writer opens at once.
    CheckpointLog.open(path).close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_close_releases_the_file_when_its_flush_fails(path):
    before = open_fds()
    log = CheckpointLog.open(path)
    log.globals["bad"] = lambda: None          # cannot be saved: the flush raises
    with pytest.raises(Exception):
        log.close()
    assert log.file.fd is None and open_fds() == before
    log.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_cannot_write_and_the_parent_loses_nothing(path):
    log = CheckpointLog.open(path, checkpoint_every=1)
    log.enter("before")
    for hp in range(3):         # the writer's thread running, checkpoints maybe in flight
        log.step({"hp": hp, "pad": list(range(2000))})
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                # the child
        code = 0
        try:
            os.close(read_end)
            for name, mutation in mutations(log).items():
                if name.startswith(("globals", "del globals")):
                    continue                    # a writer's globals: an in-memory dict
                try:
                    mutation()
                except LogForkedError:
                    continue
                code |= 1                       # a mutation went through
            try:
                LogFile(path)                   # the lock is still the parent's
                code |= 2
            except Exception as e:
                if type(e).__name__ != "LogLockedError":
                    code |= 4
            log.close()                         # releases the child's descriptor only
            os.write(write_end, b"done")
        except BaseException:
            code |= 8
        finally:
            os._exit(code)
    os.close(write_end)
    assert os.read(read_end, 4) == b"done"
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for hp in range(2, 22):                    # the parent goes on flushing
        log.step({"hp": hp})
        log.bookmark(f"p{hp}")
        log.flush()
    log.close()
    with CheckpointLog.open(path, writable=False) as log:
        for hp in range(2, 22):
            assert log.restore(log.bookmarks[f"p{hp}"].position) == {"hp": hp}


def test_lone_surrogates_in_names_are_kept(tmp_path):
    path = tmp_path / "s.log"
    name = "cave\udc80\ud800"
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter(name, key="k\udcff")
        log.step({"hp": 1})
        log.bookmark("slot\udc80", description="d\ud800")
        log.reached.add("r\udc80")
    with CheckpointLog.open(path, writable=False) as log:
        assert log.records[0].name == name and log.records[0].key == "k\udcff"
        mark = log.bookmarks["slot\udc80"]
        assert mark.description == "d\ud800" and "r\udc80" in log.reached


def test_keys_that_msgpack_cannot_write_are_refused_at_the_call(tmp_path):
    with CheckpointLog.open(tmp_path / "k.log") as log:
        for bad in (2 ** 64, -2 ** 63 - 1):
            with pytest.raises(ValueError, match="64 bits"):
                log.enter("n", key=bad)
            with pytest.raises(ValueError, match="64 bits"):
                log.reached.add(bad)
        log.enter("n", key=2 ** 64 - 1)
        log.reached.add(-2 ** 63)
        log.step({})
        log.flush()


def test_a_state_that_cannot_be_saved_leaves_the_history_unchanged(tmp_path):
    path = tmp_path / "u.log"
    with CheckpointLog.open(path, checkpoint_every=1) as log:
        log.enter("n")
        with pytest.raises(Exception):
            log.step({"f": sys})                  # a module: not saveable
        assert log.records[0].last_step == -1 and log.position.step == -1
        log.step({"hp": 1})
    with CheckpointLog.open(path, writable=False) as log:
        assert log.restore(log.position) == {"hp": 1}
