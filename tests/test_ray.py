"""autosave.ray (docs/distributed.md) on a real local Ray (``ray.init(num_cpus=2)``):
raw put/get, shards holding suspended coroutines passed to tasks, and the actor
checkpoint recipe (examples/shards/actors.py): one and two shards killed and resumed
from the latest committed step, and an actor restarted by ``max_restarts``, each
compared with an uninterrupted run. Skipped without the extra; slow (Ray takes
seconds to start)."""

import os
import sys
import time

import pytest

ray = pytest.importorskip("ray")
np = pytest.importorskip("numpy")

import autosave.ray as ar                                     # noqa: E402
from autosave import FormatError, RunCheckpoint               # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples")
sys.path.insert(0, EXAMPLES)
from shards.model import Shard, fingerprint, run_shard        # noqa: E402

pytestmark = pytest.mark.slow
N_AGENTS = 30


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": ar.setup_hook(["shards.model"]),
                          "env_vars": {"PYTHONPATH": EXAMPLES}})
    ar.register()
    try:
        yield
    finally:
        ray.shutdown()


def played(shard_id, seed, ticks):
    return run_shard(Shard(shard_id, seed, N_AGENTS), ticks)


def uninterrupted(shard_id, seed, ticks):
    return fingerprint(played(shard_id, seed, ticks))


def test_put_stores_autosave_bytes_raw_and_get_loads_them(cluster):
    shard = played("p", 3, 12)
    shard.field = np.arange(512.0 * 512).reshape(512, 512)     # 2 MiB: beside the save
    ref = ar.put(shard)
    stored = ray.get(ref)                   # what Ray holds: bytes, as they are
    assert type(stored) is bytes and stored.startswith(ar.MAGIC)
    assert b"\x89ASV" in stored[:200]
    back = ar.get(ref)
    assert fingerprint(back) == fingerprint(shard)
    assert back.field.flags.writeable and np.array_equal(back.field, shard.field)
    assert fingerprint(run_shard(back, 5)) == fingerprint(run_shard(shard, 5))
    with pytest.raises(FormatError, match="not an object stored by autosave.ray.put"):
        ar.get(ray.put(b"other bytes"))
    with pytest.raises(FormatError, match="does not hold the sizes"):
        ar.unpack(stored[:-8])


def test_get_reads_a_raw_object_in_place_and_never_writes_the_store(cluster):
    """get reads the store's memory, not ray.get's bytes copy of it: a read-only array
    is built on that memory; a writeable one is copied once, so writing to it leaves
    the stored object (shared by every reader) as it was."""
    field = np.arange(1 << 16, dtype=np.float64)                # 512 KiB: out of band
    static = np.arange(1 << 15, dtype=np.int64)
    static.flags.writeable = False
    ref = ar.put({"field": field, "static": static})
    first = ar.get(ref)
    assert not first["static"].flags.writeable
    assert np.array_equal(first["static"], static)
    base = first["static"]
    while isinstance(getattr(base, "base", None), (np.ndarray, memoryview)):
        base = base.base
    assert isinstance(base, memoryview) and base.readonly    # the store's, read in place
    assert type(base.obj) is not bytes                       # not ray.get's copy of it
    assert first["field"].flags.writeable
    first["field"][:] = -1.0
    again = ar.get(ref)
    assert np.array_equal(again["field"], field)              # the store is untouched
    assert not np.shares_memory(first["field"], again["field"])


def test_get_of_what_put_did_not_store_raises_rays_error_or_says_so(cluster):
    with pytest.raises(FormatError, match="Ray returned a list"):
        ar.get(ray.put([1, 2]))

    @ray.remote
    def fails():
        raise KeyError("lost")

    with pytest.raises(ray.exceptions.RayTaskError, match="lost"):
        ar.get(fails.remote())

    @ray.remote
    def slow():
        time.sleep(30)

    waiting = slow.remote()
    try:
        with pytest.raises(ray.exceptions.GetTimeoutError):
            ar.get(waiting, timeout=0.2)
    finally:
        ray.cancel(waiting, force=True)               # its worker is not kept busy


def test_put_sharing_arrays_builds_them_on_the_store(cluster):
    shard = played("q", 5, 6)
    shard.field = np.arange(256.0 * 256).reshape(256, 256)
    static = np.arange(1 << 15, dtype=np.int64)
    static.flags.writeable = False
    ref = ar.put({"shard": shard, "static": static}, share_arrays=True)
    back = ar.get(ref)
    assert fingerprint(back["shard"]) == fingerprint(shard)
    assert back["shard"].field.flags.writeable            # copied: it was writeable
    assert not back["static"].flags.writeable
    assert np.array_equal(back["static"], static)
    assert back["static"].base is not None                # on the store's memory


def test_shards_holding_coroutines_travel_to_tasks_and_back(cluster):
    @ray.remote
    def advance(shard, ticks):
        return run_shard(shard, ticks)

    shard = played("t", 4, 10)
    moved = ray.get(advance.remote(shard, 15), timeout=120)
    assert fingerprint(moved) == uninterrupted("t", 4, 25)


def checkpointed_run(directory, shard_ids, commit_at, run_to, kill_at):
    """Actors run to ``commit_at`` and commit; run on to ``kill_at`` (uncommitted), are
    killed; new actors restore in __init__ and run to ``run_to``."""
    from shards.actors import ShardActor

    ckpt = RunCheckpoint(directory)
    actors = [ShardActor.remote(directory, s, seed, N_AGENTS) for seed, s in enumerate(shard_ids)]
    assert ray.get([a.run.remote(commit_at) for a in actors]) == [commit_at] * len(actors)
    receipts = ray.get([a.checkpoint.remote() for a in actors])
    ckpt.commit(commit_at, receipts, meta={"shards": list(shard_ids)})
    ray.get([a.run.remote(kill_at - commit_at) for a in actors])
    for a in actors:
        ray.kill(a)
    actors = [ShardActor.remote(directory, s, seed, N_AGENTS) for seed, s in enumerate(shard_ids)]
    assert ray.get([a.tick.remote() for a in actors]) == [commit_at] * len(actors)
    ray.get([a.run.remote(run_to - commit_at) for a in actors])
    prints = ray.get([a.fingerprint.remote() for a in actors])
    for a in actors:
        ray.kill(a)
    return prints


@pytest.mark.parametrize("shard_ids", [["solo"], ["east", "west"]])
def test_actors_killed_resume_from_the_latest_commit_as_if_never_killed(cluster, tmp_path,
                                                                     shard_ids):
    prints = checkpointed_run(str(tmp_path), shard_ids, commit_at=10, run_to=30,
                              kill_at=17)
    for seed, (shard_id, fp) in enumerate(zip(shard_ids, prints)):
        assert fp == uninterrupted(shard_id, seed, 30)
    assert RunCheckpoint(tmp_path).meta() == {"shards": shard_ids}


def test_an_actor_restarted_by_max_restarts_restores_in_init(cluster, tmp_path):
    from shards.actors import ShardActor

    directory = str(tmp_path)
    actor = ShardActor.options(max_restarts=1).remote(directory, "r", 0, N_AGENTS)
    ray.get(actor.run.remote(8))
    RunCheckpoint(directory).commit(8, [ray.get(actor.checkpoint.remote())])
    ray.get(actor.run.remote(5))
    ray.kill(actor, no_restart=False)              # killed; Ray restarts it
    for _ in range(600):
        try:
            tick = ray.get(actor.tick.remote(), timeout=60)
        except ray.exceptions.RayActorError:
            continue                               # dead, not restarted yet
        if tick != 13:                             # else the kill has not landed yet
            break
        time.sleep(0.1)
    assert tick == 8
    ray.get(actor.run.remote(12))
    assert ray.get(actor.fingerprint.remote()) == uninterrupted("r", 0, 20)
    ray.kill(actor)


def test_a_worker_missing_the_game_module_fails_instead_of_hanging():
    """The setup hook's import fails as the worker starts: the task fails (the worker
    died) within its retries, it does not wait for ever."""
    was = ray.is_initialized()
    if was:
        ray.shutdown()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": ar.setup_hook(["no_such_game_module"])})
    try:
        @ray.remote(max_retries=0)
        def noop():
            return 1

        with pytest.raises(ray.exceptions.WorkerCrashedError):
            ray.get(noop.remote(), timeout=300)
    finally:
        ray.shutdown()
