"""autosave.RunCheckpoint (docs/runs.md): a sharded run's steps appear all
or nothing. The API's refusals; every file operation of a sharded run failing in turn,
in every way (autosave.log.faults); and crash states drawn from the fsync-ordered disk
model of tests/crashmodel.py, in each of which the latest committed step must load
whole and the run must go on. AUTOSAVE_CRASH_STATES=N draws N states (seed
AUTOSAVE_CRASH_SEED)."""

import os

import pytest

import autosave
from autosave import CheckpointError, ChecksumError, RunCheckpoint, SaveError
from autosave.log.faults import KINDS, FaultyOps, InjectedFault

from crashmodel import RecordingOps, crash_state, marks_before, materialise, seeded

STATES = int(os.environ.get("AUTOSAVE_CRASH_STATES", "0") or 0) or 200
SEED = int(os.environ.get("AUTOSAVE_CRASH_SEED", "30"))
SHARDS = ("east", "west")
autosave.allow(__name__)


class Agent:
    def __init__(self, name, wealth):
        self.name, self.wealth, self.friends = name, wealth, []


def shard_state(shard, step):
    agents = [Agent(f"{shard}{i}", step * 10 + i) for i in range(3)]
    agents[0].friends.append(agents[1])
    agents[1].friends.append(agents[0])              # a cycle and shared references
    return {"step": step, "agents": agents, "pad": "x" * (40 * step)}


def summary(state):
    return (state["step"], [(a.name, a.wealth, [f.name for f in a.friends])
                            for a in state["agents"]], state["pad"])


# -- the API -------------------------------------------------------------------------

def test_a_step_is_visible_only_once_committed(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    assert ckpt.latest_step() is None and ckpt.steps() == []
    receipts = [ckpt.save_shard(s, shard_state(s, 3), 3) for s in SHARDS]
    assert ckpt.latest_step() is None
    with pytest.raises(CheckpointError, match="no step is committed"):
        ckpt.load_shard("east")
    ckpt.commit(3, receipts, meta={"seed": 7, "ticks": (1, 2)})
    assert ckpt.latest_step() == 3 and ckpt.shards() == ["east", "west"]
    assert ckpt.meta() == {"seed": 7, "ticks": (1, 2)}
    loaded = ckpt.load_shard("west")
    assert summary(loaded) == summary(shard_state("west", 3))
    assert loaded["agents"][0].friends[0].friends[0] is loaded["agents"][0]


def test_int_shard_ids_and_their_decimal_are_one_shard(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.commit(0, [ckpt.save_shard(4, [1, 2], 0)])
    assert ckpt.shards(0) == ["4"] and ckpt.load_shard("4") == [1, 2]


@pytest.mark.parametrize("shard", ["", "a.b", "../x", "x" * 65, -1, 1.5, None, True])
def test_bad_shard_ids_are_refused_before_anything_is_written(tmp_path, shard):
    with pytest.raises(CheckpointError, match="shard id"):
        RunCheckpoint(tmp_path).save_shard(shard, 1, 0)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("step", [-1, 1 << 64, "3", 2.0])
def test_bad_steps_are_refused(tmp_path, step):
    with pytest.raises(CheckpointError, match="a step is an int"):
        RunCheckpoint(tmp_path).save_shard("a", 1, step)


def test_a_state_that_cannot_be_saved_writes_nothing(tmp_path):
    with pytest.raises(SaveError):
        RunCheckpoint(tmp_path).save_shard("a", {"gen": (x for x in ())}, 1)
    assert os.listdir(tmp_path) == []


def test_commit_refuses_a_missing_shard_with_the_call_that_fixes_it(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.save_shard("east", 1, 5)
    with pytest.raises(CheckpointError, match=r"save_shard\('west', state, 5\) first"):
        ckpt.commit(5, ["east", "west"])
    ckpt.save_shard("west", 2, 5)                  # the fix the message names
    ckpt.commit(5, ["east", "west"])
    assert ckpt.load_shard("west") == 2


def test_a_committed_step_never_changes(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.commit(1, [ckpt.save_shard("a", "first", 1)])
    with pytest.raises(CheckpointError, match="committed step never changes"):
        ckpt.save_shard("a", "second", 1)
    ckpt.commit(1, ["a"])                          # a retried commit: the same manifest
    ckpt.save_shard("b", 0, 2)
    with pytest.raises(CheckpointError, match="already committed"):
        ckpt.commit(1, ["a"], meta="other")
    assert ckpt.load_shard("a") == "first"


def test_a_shard_saved_again_before_the_commit_is_replaced(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    old = ckpt.save_shard("a", "crashed attempt", 2)
    new = ckpt.save_shard("a", "restarted", 2)
    with pytest.raises(CheckpointError, match="changed since save_shard"):
        ckpt.commit(2, [old])
    ckpt.commit(2, [new])
    assert ckpt.load_shard("a") == "restarted"


def test_a_receipt_of_another_step_is_refused(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    receipt = ckpt.save_shard("a", 1, 2)
    with pytest.raises(CheckpointError, match="for step 2, not 3"):
        ckpt.commit(3, [receipt])


def test_a_shard_file_changed_after_the_commit_is_a_checksum_error(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.commit(1, [ckpt.save_shard("a", [1, 2, 3], 1)])
    path = tmp_path / RunCheckpoint.shard_file("a", 1)
    path.write_bytes(autosave.dumps([1, 2, 4]))    # a whole save, of other values
    with pytest.raises(ChecksumError, match="not the file step 1 committed"):
        ckpt.load_shard("a")
    path.unlink()
    with pytest.raises(ChecksumError, match="missing"):
        ckpt.load_shard("a")


def test_a_damaged_manifest_is_an_error_naming_it(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.commit(1, [ckpt.save_shard("a", 1, 1)])
    path = tmp_path / RunCheckpoint.commit_file(1)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumError, match=str(path.name)):
        ckpt.latest_step()


def test_a_torn_shard_file_is_refused_by_commit(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    ckpt.save_shard("a", list(range(100)), 1)
    path = tmp_path / RunCheckpoint.shard_file("a", 1)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(autosave.TruncatedSaveError, match=str(path.name)):
        ckpt.commit(1, ["a"])
    assert ckpt.latest_step() is None


def test_prune_keeps_the_latest_and_spares_steps_in_flight(tmp_path):
    ckpt = RunCheckpoint(tmp_path)
    for step in range(5):
        ckpt.commit(step, [ckpt.save_shard(s, (s, step), step) for s in SHARDS])
    ckpt.save_shard("east", "in flight", 1_000)     # newer than any commit
    os.rename(tmp_path / RunCheckpoint.commit_file(3), tmp_path / "kept-aside")
    # step 3 is now a step never committed, older than the latest: abandoned
    assert ckpt.prune(keep=1) == [0, 1, 2]
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(["kept-aside", RunCheckpoint.commit_file(4),
                            *(RunCheckpoint.shard_file(s, 4) for s in SHARDS),
                            RunCheckpoint.shard_file("east", 1_000)])
    assert ckpt.load_shard("west") == ("west", 4)
    with pytest.raises(CheckpointError, match="keeps at least one"):
        ckpt.prune(keep=0)


# -- faults: every call that changes the disk fails in turn ----------------------------

def run(directory, ops, steps=4):
    """A sharded run: each step two shards and a commit, a prune every other step. A
    failed step is retried (a fault is one call): its shards saved again unless the
    step is committed, else the commit retried. Returns step -> shard states of every
    step whose commit returned."""
    ckpt = RunCheckpoint(directory, ops=ops)
    committed = {}
    for step in range(steps):
        states = {s: shard_state(s, step) for s in SHARDS}
        for _attempt in range(4):
            try:
                if step in ckpt.steps():     # the commit's link was made, then it failed
                    ckpt.commit(step, SHARDS, meta={"step": step})
                else:
                    receipts = [ckpt.save_shard(s, states[s], step) for s in SHARDS]
                    ckpt.commit(step, receipts, meta={"step": step})
                break
            except (InjectedFault, CheckpointError):
                continue        # CheckpointError: a shard whose fsync failed was removed
        else:
            raise AssertionError("a step failed four times in a row")
        committed[step] = states
        if step % 2:
            for _attempt in range(2):
                try:
                    ckpt.prune(keep=2)
                    break
                except InjectedFault:
                    continue
    return committed


def check_directory(directory, committed, ops):
    """The latest committed step loads whole, with its meta, and its files are what
    a power cut would leave (``ops.durable``: bytes a failed fsync lost are not)."""
    ckpt = RunCheckpoint(directory)
    latest = ckpt.latest_step()
    assert latest == max(committed)
    for shard, state in committed[latest].items():
        assert summary(ckpt.load_shard(shard)) == summary(state)
    assert ckpt.meta() == {"step": latest}
    names = [RunCheckpoint.commit_file(latest),
             *(RunCheckpoint.shard_file(s, latest) for s in SHARDS)]
    for name in names:
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            assert ops.durable[path] == f.read(), name


@pytest.mark.parametrize("kind", [pytest.param(k, marks=() if k == "lost" else pytest.mark.slow)
                                  for k in KINDS])
def test_every_call_fails_in_turn_and_every_returned_commit_holds(tmp_path, kind):
    calls = FaultyOps()
    run(str(tmp_path / "count"), calls)
    assert calls.calls > 40
    for n in range(1, calls.calls + 1):
        directory = str(tmp_path / f"{kind}-{n}")
        ops = FaultyOps(fail_at=n, kind=kind)
        committed = run(directory, ops)
        assert ops.faults, (kind, n)
        check_directory(directory, committed, ops)
        leftovers = [name for name in os.listdir(directory) if name.endswith(".tmp")]
        # a temporary file stays only where removing it is what failed
        assert not leftovers or ops.faults[0][1] == "unlink", (kind, n, leftovers)


# -- crash states ----------------------------------------------------------------------

def recorded_run(directory, ops, steps=5):
    ckpt = RunCheckpoint(directory, ops=ops)
    committed = {}
    for step in range(steps):
        states = {s: shard_state(s, step) for s in SHARDS}
        receipts = [ckpt.save_shard(s, states[s], step) for s in SHARDS]
        ckpt.commit(step, receipts)
        committed[step] = states
        ops.mark((step, states))
        if step % 2:
            ckpt.prune(keep=2)


def check_crashed(directory, mark):
    """The latest step is the last whose commit returned, or the one being committed;
    it loads whole; the run goes on from it (recorded, to crash it again)."""
    names = {name: i for i, name in enumerate(sorted(os.listdir(directory)), 1)}
    contents = {i: open(os.path.join(directory, n), "rb").read() for n, i in names.items()}
    ops = RecordingOps(names)
    ckpt = RunCheckpoint(directory, ops=ops)
    latest = ckpt.latest_step()
    if mark is None:
        assert latest in (None, 0)
    else:
        step, states = mark
        assert latest in (step, step + 1)
        if latest == step:
            for shard, state in states.items():
                assert summary(ckpt.load_shard(shard)) == summary(state)
    if latest is not None:
        for shard in SHARDS:
            assert summary(ckpt.load_shard(shard)) == summary(shard_state(shard, latest))
    nxt = (latest or 0) + 1
    ckpt.commit(nxt, [ckpt.save_shard(s, shard_state(s, nxt), nxt) for s in SHARDS])
    ckpt.prune(keep=1)
    assert ckpt.latest_step() == nxt
    return ops.trace, (names, contents), (nxt, {s: shard_state(s, nxt) for s in SHARDS})


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    ops = RecordingOps()
    recorded_run(str(tmp_path_factory.mktemp("recorded")), ops)
    return ops.trace


def test_every_crash_state_leaves_the_last_committed_step_whole(recorded, tmp_path):
    rng = seeded(SEED)
    work = tmp_path / "state"
    work.mkdir()
    seen = set()
    for n in range(STATES):
        k = rng.randrange(len(recorded) + 1)
        mark = marks_before(recorded, k)
        materialise(work, crash_state(recorded, k, rng))
        seen.add(RunCheckpoint(work).latest_step())
        recovery, start, after = check_crashed(str(work), mark)
        if n % 3 == 0:
            # the run going on after the crash, crashed in turn at any instant
            j = rng.randrange(len(recovery) + 1)
            materialise(work, crash_state(recovery, j, rng, start))
            ckpt = RunCheckpoint(work)
            latest = ckpt.latest_step()
            if latest == after[0]:
                for shard, state in after[1].items():
                    assert summary(ckpt.load_shard(shard)) == summary(state)
            elif latest is not None:
                for shard in SHARDS:
                    assert summary(ckpt.load_shard(shard)) == summary(
                        shard_state(shard, latest))
    assert len(recorded) > 50
    assert {None, 0, 4} <= seen              # states early, mid-run and complete drawn


def test_prune_removes_temporary_files_of_writers_gone_and_keeps_live_ones(tmp_path):
    import subprocess

    from autosave.files import temporary_name, this_process

    ckpt = RunCheckpoint(tmp_path)
    ckpt.commit(1, [ckpt.save_shard("a", 1, 1)])
    dead = subprocess.Popen(["true"])
    dead.wait()                                  # its pid names no running process
    host, start = this_process()
    stale = temporary_name(RunCheckpoint.shard_file("a", 2), dead.pid, host, start)
    live = temporary_name(RunCheckpoint.commit_file(2), os.getpid(), host, start)
    for name in (stale, live):
        (tmp_path / name).write_bytes(b"half a save")
    ckpt.prune(keep=1)
    names = os.listdir(tmp_path)
    assert stale not in names and live in names
