"""Content upgrades under faults and forgery: a write, fsync or truncate failing at any
call of the upgrade, or the process killed during it, leaves a log that opens (upgraded
or not) with nothing lost; mutated content records give only LoadError kinds."""

import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autosave import CheckpointLog, LoadError
from autosave.log.faults import KINDS, FaultyOps, InjectedFault
from autosave.log.inspect import inspect_log
from test_log_safety import FUZZ, MutatingLogFile, mutator

OLD = {"intro": ["i0", "i1", "i2", "i3", "i4", "i5"], "cave": ["c0", "c1", "c2", "c3"],
       "cut": ["x0", "x1", "x2"]}
NEW = {"intro": ["i0", "NEW", "i1", "i2x", "i3", "i4", "i5"], "cave": ["c0", "c2", "c3"]}


def replay_under(story):
    def replay(state, steps):
        lines = list(state["lines"])
        for _ in range(steps):
            lines.append(story[state["node"]][len(lines)])
        return {**state, "lines": lines}
    return replay


def play(log, story):
    """A session with branches, an entry from mid-node and a bookmark in each node."""
    def walk(node, upto, mark=None):
        log.enter(node, state={"node": node, "lines": []})
        for i in range(upto):
            if i:
                log.step({"node": node, "lines": story[node][:i]})
            log.reached.add(story[node][i])
        if mark:
            log.bookmark(mark)
    walk("intro", 5, "intro4")
    log.bookmark("intro2", position=log.back(2))
    log.flush()
    log.restore(log.bookmarks["intro2"].position, replay=replay_under(story))
    log.step({"node": "intro", "lines": story["intro"][:3]})     # a branch
    log.step({"node": "intro", "lines": story["intro"][:4]})
    log.bookmark("branch4")
    walk("cave", 4, "cave3")
    log.flush()
    walk("cut", 2, "cut1")


def expected(path):
    """slot -> (node, step, state) after a clean upgrade of a copy of ``path``."""
    clean = path.with_name("clean-" + path.name)
    clean.write_bytes(path.read_bytes())
    with CheckpointLog.open(clean, checkpoint_every=2, content=NEW) as log:
        return {s: (m.position.node, m.position.step, log.restore(m.position, replay_under(NEW)))
                for s, m in log.bookmarks.items()}, log.upgrade_report.lost


def check(path, want, lost):
    with CheckpointLog.open(path, checkpoint_every=2, content=NEW, writable=False) as log:
        got = {s: (m.position.node, m.position.step, log.restore(m.position, replay_under(NEW)))
               for s, m in log.bookmarks.items()}
        assert got == want
        assert log.upgrade_report.lost in ([], lost)


@pytest.fixture
def profile(tmp_path):
    path = tmp_path / "old.log"
    with CheckpointLog.open(path, checkpoint_every=2, block_size=256,
                            deltas_per_snapshot=2, content=OLD) as log:
        play(log, OLD)
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_at_every_call_of_the_upgrade_loses_nothing(tmp_path, profile, kind):
    want, lost = expected(profile)
    assert lost == ["cut1"] and want["intro4"][:2] == ("intro", 5)
    for n in range(1, 40):
        path = tmp_path / f"{kind}{n}.log"
        path.write_bytes(profile.read_bytes())
        ops = FaultyOps(fail_at=n, kind=kind)
        try:
            CheckpointLog.open(path, checkpoint_every=2, content=NEW, ops=ops).close()
        except InjectedFault:
            pass
        check(path, want, lost)                     # as the process sees the file
        image = tmp_path / "durable.log"
        image.write_bytes(ops.durable[str(path)])
        check(image, want, lost)                    # as a power cut would leave it
        if not ops.faults:
            break
    else:
        raise AssertionError("the upgrade made more calls than the test covers")


KILLER = """
import sys
from autosave import CheckpointLog
sys.path.insert(0, {tests!r})
from test_log_content_safety import NEW
print("ready", flush=True)
while True:
    with CheckpointLog.open({path!r}, checkpoint_every=2, content=NEW) as log:
        pass
"""


@pytest.mark.slow
def test_kill_9_during_upgrades_leaves_a_log_that_opens(tmp_path, profile):
    """SIGKILL at arbitrary instants of a process upgrading the log over and over (each
    open after the first finds it upgraded; a killed first one leaves it old)."""
    want, lost = expected(profile)
    tests = os.path.dirname(__file__)
    for delay in (0.0, 0.002, 0.005, 0.01, 0.03):
        path = tmp_path / f"k{delay}.log"
        path.write_bytes(profile.read_bytes())
        child = subprocess.Popen([sys.executable, "-c", KILLER.format(tests=tests, path=str(path))],
                                 stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"ready\n"
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        check(path, want, lost)


# -- forged content records --------------------------------------------------------------------

def exercise(path, content):
    """Open with content (read-only and writing), restore every bookmark, inspect:
    only LoadError kinds may come out."""
    for writable in (False, True):
        try:
            with CheckpointLog.open(path, writable=writable, content=content) as log:
                for mark in log.bookmarks.values():
                    log.restore(mark.position, replay=lambda state, steps: state)
        except LoadError:
            pass
    try:
        inspect_log(str(path), 3, out=open(os.devnull, "w"), content=content)
    except LoadError:
        pass


@pytest.mark.slow
@FUZZ
@given(data=st.data(), snapshots=st.booleans(), patched=st.booleans())
def test_mutated_content_records_give_a_result_or_a_load_error(tmp_path_factory, data,
                                                               snapshots, patched):
    path = tmp_path_factory.mktemp("content-events") / "m.log"
    file = MutatingLogFile(path, mutator(data), deltas_per_snapshot=0 if snapshots else 64)
    log = CheckpointLog(file, checkpoint_every=2, content=OLD)
    try:
        play(log, OLD)
        log.flush()
    finally:
        log.file.close()
    # The upgrade's own records mutated too.
    try:
        upgrade = MutatingLogFile(path, mutator(data))
    except LoadError:
        pass
    else:
        try:
            CheckpointLog(upgrade, checkpoint_every=2, content=NEW).close()
        except LoadError:
            pass
        finally:
            upgrade.close()
    exercise(path, NEW if patched else OLD)


@pytest.mark.slow
@FUZZ
@given(data=st.data())
def test_mutated_bytes_of_an_upgraded_log(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("content-bytes") / "m.log"
    with CheckpointLog.open(path, checkpoint_every=2, block_size=256, content=OLD) as log:
        play(log, OLD)
    CheckpointLog.open(path, content=NEW).close()
    image = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        at = data.draw(st.integers(0, len(image) - 1), label="at")
        image[at] ^= 1 << data.draw(st.integers(0, 7))
    path.write_bytes(bytes(image))
    exercise(path, {**NEW, "intro": NEW["intro"][::-1]})
