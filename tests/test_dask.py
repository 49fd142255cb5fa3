"""autosave.dask (docs/distributed.md): autosave as Dask's serializer. Unit checks of the
family (what it claims, what the safe deserializer list refuses, spill through Dask's
own SpillBuffer), then a real two-process LocalCluster: shards holding suspended
coroutines moved between workers come back identical to a one-process run, and a
worker missing the game's module fails when it starts. Skipped without the extra."""

import gc
import os
import pickle
import sys

import pytest

distributed = pytest.importorskip("distributed")
np = pytest.importorskip("numpy")

import autosave                                              # noqa: E402
import autosave.dask as ad                                   # noqa: E402
from distributed.protocol import (deserialize, deserialize_bytes, serialize,  # noqa: E402
                                  serialize_bytelist)

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples")
sys.path.insert(0, EXAMPLES)
from shards.model import Shard, fingerprint, run_shard       # noqa: E402

ad.install()


def played(shard_id, seed, ticks):
    return run_shard(Shard(shard_id, seed, n_agents=40), ticks)


# -- the family ----------------------------------------------------------------------

def test_the_family_claims_game_objects_and_containers_of_them_only():
    shard = played("a", 1, 3)
    assert ad.claims(shard) and ad.claims(shard.agents[0].routine)
    assert ad.claims([1, {"k": shard}]) and ad.claims((shard, shard))
    for other in (1, "x", [1, 2], {"a": [3]}, np.zeros(3), shard.agents[0], object()):
        assert not ad.claims(other)
        with pytest.raises(NotImplementedError):
            ad.serialize(other)


def test_a_shard_round_trips_through_each_family_with_its_array_out_of_band():
    shard = played("a", 1, 12)
    shard.field = np.arange(128.0 * 128).reshape(128, 128)   # 128 KiB: out of band
    for serializers in ([ad.FAMILY], ["dask"]):
        header, frames = serialize(shard, serializers=serializers, on_error="raise")
        assert header["serializer"] == serializers[0]
        assert len(frames) == 2
        assert np.shares_memory(np.frombuffer(frames[1], dtype=np.float64), shard.field)
        out = deserialize(header, frames, deserializers=ad.SAFE_DESERIALIZERS
                          if serializers == [ad.FAMILY] else None)
        assert fingerprint(out) == fingerprint(shard)
        assert np.array_equal(out.field, shard.field)
    twin = played("a", 1, 12)
    twin.field = shard.field.copy()
    header, frames = serialize(twin, serializers=[ad.FAMILY])
    # as another process receives them: its own (writeable) copy of the frames
    moved = deserialize(header, [bytearray(f) for f in frames])
    assert moved.field.flags.writeable and not np.shares_memory(moved.field, twin.field)
    assert fingerprint(run_shard(moved, 9)) == fingerprint(run_shard(twin, 9))


def test_a_container_handed_whole_is_saved_whole_keeping_what_its_items_share():
    a, b = played("a", 1, 2), played("b", 2, 2)
    b.agents[0].friends.append(a.agents[0])          # an agent known to both shards
    header, frames = serialize([a, b], serializers=[ad.FAMILY, "pickle"],
                               on_error="raise", iterate_collection=False)
    assert header["serializer"] == ad.FAMILY
    a2, b2 = deserialize(header, frames)
    assert b2.agents[0].friends[-1] is a2.agents[0]


def test_dask_splits_a_task_results_top_level_list_before_any_family_sees_it():
    """What docs/distributed.md says: a result is wrapped in Serialize, which Dask
    serializes item by item, so sharing *between* a list's items is lost (within each
    item it survives). A game object holding both keeps it."""
    from distributed.protocol import Serialize

    a, b = played("a", 1, 2), played("b", 2, 2)
    b.agents[0].friends.append(a.agents[0])
    header, frames = serialize(Serialize([a, b]), on_error="raise")
    assert header.get("is-collection")
    a2, b2 = deserialize(header, frames)
    assert b2.agents[0].friends[-1] is not a2.agents[0]
    assert b2.agents[0].friends[-1].uid == a2.agents[0].uid


def test_the_safe_deserializers_refuse_a_pickle_frame_and_forged_frames():
    header, frames = serialize({"plain": 1}, serializers=["pickle"])
    with pytest.raises(TypeError, match="Data serialized with pickle"):
        deserialize(header, frames, deserializers=ad.SAFE_DESERIALIZERS)

    class Gadget:
        def __reduce__(self):
            return (os.system, ("echo owned",))

    forged = pickle.dumps(Gadget())
    with pytest.raises(autosave.FormatError):
        deserialize({"serializer": ad.FAMILY}, [forged],
                    deserializers=ad.SAFE_DESERIALIZERS)
    # a well-formed save naming a function of an untrusted module
    from forge import Forge

    f = Forge()
    f.glob("posix.system")
    with pytest.raises(autosave.UntrustedTypeError, match="posix"):
        deserialize({"serializer": ad.FAMILY}, [f.bytes()],
                    deserializers=ad.SAFE_DESERIALIZERS)


def test_spill_to_disk_goes_through_autosave(tmp_path):
    """Dask's SpillBuffer (worker memory -> disk) serializes through the dask family,
    which the per-type registration routes to autosave."""
    from distributed.spill import SpillBuffer

    shard = played("s", 3, 15)
    header, frames = serialize(shard, serializers=("dask", "pickle"), on_error="raise")
    assert header["sub-header"] == {"autosave": 1}
    buffer = SpillBuffer(str(tmp_path), target=1)            # any byte over spills
    buffer["shard"] = shard
    assert "shard" in buffer.slow and not buffer.fast         # on disk
    spilled = b"".join(open(e.path, "rb").read() for e in os.scandir(tmp_path)
                       if e.is_file())
    assert b"\x89ASV" in spilled                              # an autosave save
    expected = fingerprint(shard)
    del shard                          # else the buffer hands back the live object
    gc.collect()
    back = buffer["shard"]
    assert fingerprint(back) == expected
    shard = back
    packed = b"".join(map(bytes, serialize_bytelist(shard)))
    assert fingerprint(deserialize_bytes(packed)) == expected


def test_a_worker_setup_missing_a_module_raises():
    with pytest.raises(ModuleNotFoundError, match="no_such_game_module"):
        ad.AutosavePlugin(["no_such_game_module"]).setup(worker=None)
    context = ad.dask_setup.make_context(
        "dask_setup", ["--autosave-import", "shards.model", "--autosave-allow", "simpy"])
    ad.dask_setup.callback(None, **context.params)
    assert autosave.model.registry.REGISTRY.is_allowed_module("simpy.core")
    context = ad.dask_setup.make_context("dask_setup",
                                         ["--autosave-import", "no_such_game_module"])
    with pytest.raises(SystemExit, match="no_such_game_module"):
        ad.dask_setup.callback(None, **context.params)


# -- a real cluster ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None,
                      preload=[ad.preload(["shards.model"])]) as lc, \
            Client(lc) as client:
        yield client


@pytest.mark.slow
def test_shards_moved_between_workers_resume_as_one_process_would(cluster):
    a, b = list(cluster.scheduler_info()["workers"])
    first = cluster.submit(played, "w", 5, 20, workers=[a], pure=False)
    moved = cluster.submit(run_shard, first, 25, workers=[b], pure=False)  # a -> b
    back = cluster.submit(run_shard, moved, 5, workers=[a], pure=False)    # b -> a
    result = back.result(timeout=60)
    local = run_shard(played("w", 5, 20), 30)
    assert fingerprint(result) == fingerprint(local)
    assert result.agents[0].friends[0].friends is not None
    # aliasing within one root survived every hop: friends are the shard's own agents
    ids = {id(x) for x in result.agents}
    assert all(id(f) in ids for x in result.agents for f in x.friends)


@pytest.mark.slow
def test_the_safe_deserializer_list_on_a_client(cluster):
    from distributed import Client

    with Client(cluster.scheduler.address, deserializers=list(ad.SAFE_DESERIALIZERS),
                serializers=[ad.FAMILY, "dask", "pickle"]) as safe:
        shard = safe.submit(played, "v", 9, 8, pure=False).result(timeout=60)
        assert fingerprint(shard) == fingerprint(played("v", 9, 8))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["preload text", "preload module with argv"])
def test_a_worker_missing_the_game_module_fails_at_startup(how):
    """The same cluster as the fixture's, but for the module's name: the worker's
    setup fails, and the cluster does not start."""
    from distributed import LocalCluster

    if how == "preload text":
        options = {"preload": [ad.preload(["no_such_game_module"])]}
    else:
        options = {"preload": ["autosave.dask"],
                   "preload_argv": ["--autosave-import", "no_such_game_module"]}
    with pytest.raises(RuntimeError, match="failed to start"):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                          dashboard_address=None, **options):
            pass
    with pytest.raises(ValueError, match="a module or package name"):
        ad.preload(["game; import os"])


@pytest.mark.slow
def test_registering_the_plugin_with_a_missing_module_raises_on_the_client(cluster):
    with pytest.raises(Exception, match="no_such_game_module"):
        cluster.register_plugin(ad.AutosavePlugin(["no_such_game_module"]))
