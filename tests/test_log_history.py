"""CheckpointLog: the history tree, checkpoints, restore with replay, branches, bookmarks,
reached data and globals, across reopen and across crashes."""

import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from autosave import CheckpointLog, CorruptLogError, Position


def replay(state, steps):
    """The game's own replay for these tests: a step adds 1 to hp."""
    return {**state, "hp": state["hp"] + steps}


def play(log, node, start_hp, steps, key=None):
    log.enter(node, key)
    for i in range(steps):
        log.step({"node": node, "hp": start_hp + i})
    return log.position


@pytest.fixture
def path(tmp_path):
    return tmp_path / "profile.log"


def test_history_back_and_restore_within_a_node(path):
    with CheckpointLog.open(path, checkpoint_every=4) as log:
        play(log, "ch1", 0, 10)
        record = log.records[0]
        assert sorted(record.checkpoints) == [0, 4, 8]          # first step, then every 4
        assert log.history() == [("ch1", 0, 9)]
        target = log.back(3)
        assert target == Position("ch1", 6, 0)
        assert log.restore(target, replay=replay) == {"node": "ch1", "hp": 6}
        assert log.restore(Position("ch1", 4, 0)) == {"node": "ch1", "hp": 4}   # a checkpoint


def test_restore_that_needs_replay_says_so(path):
    with CheckpointLog.open(path, checkpoint_every=4) as log:
        play(log, "ch1", 0, 7)                          # checkpoints at steps 0 and 4
        with pytest.raises(ValueError, match="2 steps after the nearest checkpoint.*replay"):
            log.restore(Position("ch1", 6, 0))


def test_entering_nodes_builds_the_tree(path):
    with CheckpointLog.open(path) as log:
        play(log, "prologue", 0, 3)
        play(log, "ch1", 10, 2)
        play(log, "ch1-cave", 20, 4)
        assert log.history() == [("prologue", 0, 2), ("ch1", 0, 1), ("ch1-cave", 0, 3)]
        names = {r.id: r.name for r in log.records.values()}
        assert [names[c] for c in log.records[0].children] == ["ch1"]
        assert log.back(5) == Position("ch1", 0, 1)
        assert log.back(7) == Position("prologue", 1, 0)


def test_stepping_from_an_earlier_position_branches(path):
    with CheckpointLog.open(path, checkpoint_every=3) as log:
        play(log, "ch1", 0, 8)
        old_end = log.position
        log.restore(log.back(4), replay=replay)                     # back to step 3
        log.step({"node": "ch1", "hp": 100})                        # a different choice
        branch = log.position
        assert branch.step == 4 and branch.record != old_end.record
        assert log.history() == [("ch1", 0, 3), ("ch1", 4, 4)]
        assert 4 in log.records[branch.record].checkpoints          # forced at its start
        # The old branch is intact and still restorable.
        assert log.restore(old_end, replay=replay) == {"node": "ch1", "hp": 7}
        assert log.restore(branch) == {"node": "ch1", "hp": 100}


def test_reentering_a_node_with_the_same_key_finds_its_record(path):
    with CheckpointLog.open(path) as log:
        play(log, "hub", 0, 2)
        play(log, "shop", 5, 3, key="gold=10")
        log.restore(Position("hub", 1, 0), replay=replay)
        again = play(log, "shop", 5, 1, key="gold=10")
        assert again.record == 1                                    # the same record
        other = play(log, "shop", 5, 1, key="gold=99")                 # other variables
        assert other.record not in (0, 1)


def test_checkpoint_flag_forces_or_suppresses(path):
    with CheckpointLog.open(path, checkpoint_every=2) as log:
        log.enter("n")
        log.step({"hp": 0})                    # first step: always
        log.step({"hp": 1}, checkpoint=True)   # forced
        log.step({"hp": 2}, checkpoint=False)  # suppressed although due
        log.step({"hp": 3})                    # due: 2 steps since the last one
        assert sorted(log.records[0].checkpoints) == [0, 1, 3]


def test_everything_survives_reopen(path):
    with CheckpointLog.open(path, checkpoint_every=3) as log:
        play(log, "ch1", 0, 5)
        log.bookmark("slot1", description="Before the gate", screenshot=b"\x89PNG...")
        play(log, "ch2", 50, 2)
        log.bookmark("auto")
        log.reached.add("ch1/line4")
        log.globals["ngplus"] = 1
        history = log.history()
    with CheckpointLog.open(path, checkpoint_every=3) as log:
        assert log.history() == history
        slot1 = log.bookmarks["slot1"]
        assert slot1.position == Position("ch1", 4, 0)
        assert slot1.description == "Before the gate" and slot1.screenshot == b"\x89PNG..."
        assert slot1.created <= time.time()
        assert sorted(log.bookmarks) == ["auto", "slot1"]
        assert "ch1/line4" in log.reached and "ch2/line1" not in log.reached
        assert log.globals == {"ngplus": 1}
        assert log.restore(slot1.position, replay=replay) == {"node": "ch1", "hp": 4}
        log.delete_bookmark("auto")
    with CheckpointLog.open(path) as log:
        assert list(log.bookmarks) == ["slot1"]


def test_unflushed_work_is_lost_like_after_a_crash(path):
    with CheckpointLog.open(path) as log:
        play(log, "ch1", 0, 3)
        log.flush()
        with pytest.raises(RuntimeError):
            with log:
                play(log, "ch2", 0, 3)
                raise RuntimeError("the game crashed")
    with CheckpointLog.open(path) as log:
        assert log.history() == [("ch1", 0, 2)]


def test_snapshots_keep_reopen_equal(path):
    with CheckpointLog.open(path, checkpoint_every=2, deltas_per_snapshot=3) as log:
        for chapter in range(12):
            play(log, f"ch{chapter}", chapter * 100, 3)
            log.bookmark(f"b{chapter % 4}")
            log.flush()
        expected = (log.history(), {k: v.position for k, v in log.bookmarks.items()})
    with CheckpointLog.open(path) as log:
        assert (log.history(), {k: v.position for k, v in log.bookmarks.items()}) == expected


@pytest.mark.slow
def test_truncation_at_every_offset_of_the_last_commit(path, tmp_path):
    with CheckpointLog.open(path, checkpoint_every=2, block_size=256) as log:
        play(log, "ch1", 0, 3)
        log.bookmark("a")
        log.flush()
        after_a = path.read_bytes()
        play(log, "ch2", 10, 3)
        log.bookmark("b")
    after_b = path.read_bytes()
    for cut in range(len(after_a), len(after_b)):
        crashed = tmp_path / "cut.log"
        crashed.write_bytes(after_a + after_b[len(after_a):cut])
        with CheckpointLog.open(crashed) as log:
            assert log.recovered == cut - len(after_a)
            assert sorted(log.bookmarks) == ["a"]
            assert log.history() == [("ch1", 0, 2)]
            assert log.restore(log.bookmarks["a"].position) == {"node": "ch1", "hp": 2}
    # All of commit B's data but not its superblock slot: found by scanning forward.
    crashed.write_bytes(after_a + after_b[len(after_a):])
    with CheckpointLog.open(crashed) as log:
        assert log.recovered == 0 and sorted(log.bookmarks) == ["a", "b"]
        assert log.restore(log.bookmarks["b"].position) == {"node": "ch2", "hp": 12}


def test_flipped_bytes_in_committed_data_are_reported(path, tmp_path):
    """A flip in an older commit is a CorruptLogError naming its offset (at open, or at
    the restore that reads it); in the last commit, whose data a crash on a filesystem
    without ordered writes may leave damaged, the log opens at the commit before."""
    with CheckpointLog.open(path, checkpoint_every=2, block_size=256) as log:
        play(log, "ch1", 0, 4)
        log.bookmark("a")
        log.flush()
        first_end = log.file.end
        play(log, "ch2", 10, 2)
        log.bookmark("b")
    clean = path.read_bytes()
    rng = random.Random(3)
    for at in rng.sample(range(256, len(clean)), 120):
        image = bytearray(clean)
        image[at] ^= 1 << rng.randrange(8)
        damaged = tmp_path / "flip.log"
        damaged.write_bytes(bytes(image))
        try:
            with CheckpointLog.open(damaged) as log:
                states = [log.restore(Position("ch1", step, 0), replay=replay)
                          for step in range(4)]
                marks = {k: v.position for k, v in log.bookmarks.items()}
                if "b" in marks:
                    states.append(log.restore(marks["b"], replay=replay))
        except CorruptLogError as e:
            assert "offset" in str(e) and at < first_end
        else:
            # Unread block padding, or the last commit dropped: nothing read changed.
            assert states[:4] == [{"node": "ch1", "hp": step} for step in range(4)]
            assert marks in ({"a": Position("ch1", 3, 0)},
                             {"a": Position("ch1", 3, 0), "b": Position("ch2", 1, 1)})
            if "b" in marks:
                assert states[4] == {"node": "ch2", "hp": 11}
            else:
                assert at >= first_end


WRITER = textwrap.dedent("""
    import sys
    from autosave import CheckpointLog
    path, first = sys.argv[1], int(sys.argv[2])
    with CheckpointLog.open(path, checkpoint_every=3, block_size=512,
                            deltas_per_snapshot=8) as log:
        n = first
        while True:
            log.enter(f"node{n}")
            for i in range(n % 5 + 1):
                log.step({"n": n, "i": i, "pad": "x" * (n % 300)})
            log.bookmark(f"slot{n % 7}", description=str(n))
            log.flush()
            print(n, flush=True)             # reported only once flush() returned
            n += 1
""")


@pytest.mark.slow
def test_sigkill_keeps_every_flushed_bookmark(path):
    rng = random.Random(8)
    reported = {}                                  # slot -> n, as reported flushed
    start = 0
    for round_ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(0.3 + rng.random() * 0.4)
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        for n in map(int, out.split()):
            reported[f"slot{n % 7}"] = n
        with CheckpointLog.open(path) as log:
            for slot, n in reported.items():
                mark = log.bookmarks[slot]
                # A later flush may have moved the slot on; never back.
                held = int(mark.description)
                assert held >= n, (round_, slot, held, n)
                last = n % 5 if held == n else held % 5
                state = log.restore(mark.position, replay=lambda s, k: {**s, "i": s["i"] + k})
                assert state == {"n": held, "i": last, "pad": "x" * (held % 300)}
            start = max(reported.values(), default=-1) + 1
            start = max([start] + [int(b.description) + 1 for b in log.bookmarks.values()])
