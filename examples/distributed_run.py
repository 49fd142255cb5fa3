"""A sharded run on Dask or Ray, checkpointed, killed, resumed, and compared.

    python examples/distributed_run.py                 # Dask (pip install 'autosave[dask]')
    python examples/distributed_run.py --engine ray    # Ray  (pip install 'autosave[ray]')

A mesa-like model (examples/shards/model.py: agents on a grid, each driven by a
suspended @autosave.coroutine, one RNG per shard) is split into shards, one per Dask
task chain or Ray actor. Every N ticks each shard saves itself into an
autosave.RunCheckpoint where it runs, and the driver commits the step. Part-way, the
workers or actors are killed (the run is lost, and so are the ticks since the last
commit); a new cluster loads the latest committed step and runs to the end. The result
must equal a run that was never interrupted, shard by shard.
"""

import argparse
import os
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import autosave                                               # noqa: E402
from shards.model import Shard, fingerprint, run_shard        # noqa: E402

SHARDS = ("north", "south", "east")
AGENTS = 60
EVERY = 10          # ticks between checkpoints
KILL_AT = 37        # the cluster dies here: 7 ticks after the last commit are lost
END = 60


def uninterrupted():
    return {s: fingerprint(run_shard(Shard(s, seed, AGENTS), END))
            for seed, s in enumerate(SHARDS)}


# -- Dask: a shard is a future, moved and advanced by tasks -----------------------------

def advance(shard, ticks):
    return run_shard(shard, ticks)


def start(shard_id, seed):
    return Shard(shard_id, seed, AGENTS)


def save(directory, shard):
    return autosave.RunCheckpoint(directory).save_shard(shard.shard_id, shard, shard.tick)


def restore(directory, shard_id):
    return autosave.RunCheckpoint(directory).load_shard(shard_id)


def dask_session(directory, until, resume):
    """One cluster's life: run the shards to ``until``, committing every EVERY ticks;
    returns the shards' fingerprints at the end."""
    import autosave.dask
    from distributed import Client, LocalCluster

    autosave.dask.install()
    ckpt = autosave.RunCheckpoint(directory)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                      preload=[autosave.dask.preload(["shards.model"])]) as cluster, \
            Client(cluster) as client:
        if resume:
            futures = [client.submit(restore, directory, s, pure=False) for s in SHARDS]
            tick = ckpt.latest_step()
        else:
            futures = [client.submit(start, s, seed, pure=False)
                       for seed, s in enumerate(SHARDS)]
            tick = 0
        print(f"  dask: {len(cluster.workers)} workers, shards at tick {tick}")
        while tick < until:
            ticks = min(EVERY - tick % EVERY, until - tick)
            futures = [client.submit(advance, f, ticks, pure=False) for f in futures]
            tick += ticks
            if tick % EVERY == 0:
                receipts = client.gather([client.submit(save, directory, f, pure=False)
                                          for f in futures])
                ckpt.commit(tick, receipts, meta={"engine": "dask"})
                ckpt.prune(keep=2)
        if not resume:                 # the crash: every worker killed outright
            client.gather(futures)
            for pid in client.run(os.getpid).values():
                os.kill(pid, signal.SIGKILL)
            print(f"  dask: the workers were killed (SIGKILL) at tick {tick}")
            return None
        return [fingerprint(s) for s in client.gather(futures)]


# -- Ray: a shard lives in an actor, which restores itself in __init__ ---------------------

def ray_session(directory, until, resume):
    import ray
    import autosave.ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"worker_process_setup_hook": autosave.ray.setup_hook(["shards.model"]),
                          "env_vars": {"PYTHONPATH": HERE}})
    try:
        from shards.actors import ShardActor

        ckpt = autosave.RunCheckpoint(directory)
        actors = [ShardActor.remote(directory, s, seed, AGENTS)
                  for seed, s in enumerate(SHARDS)]
        tick = ray.get(actors[0].tick.remote())
        print(f"  ray: {len(actors)} actors, shards at tick {tick}")
        assert resume == (tick > 0)
        while tick < until:
            ticks = min(EVERY - tick % EVERY, until - tick)
            ray.get([a.run.remote(ticks) for a in actors])
            tick += ticks
            if tick % EVERY == 0:
                receipts = ray.get([a.checkpoint.remote() for a in actors])
                ckpt.commit(tick, receipts, meta={"engine": "ray"})
                ckpt.prune(keep=2)
        if not resume:                 # the crash: every actor killed outright
            for a in actors:
                ray.kill(a)
            print(f"  ray: the actors were killed at tick {tick}")
            return None
        return ray.get([a.fingerprint.remote() for a in actors])
    finally:
        ray.shutdown()                 # every actor dies with the cluster


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("dask", "ray"), default="dask")
    args = parser.parse_args(argv)
    session = dask_session if args.engine == "dask" else ray_session
    with tempfile.TemporaryDirectory() as directory:
        print(f"Run 1: {len(SHARDS)} shards, a checkpoint every {EVERY} ticks; "
              f"every worker is\n  killed at tick {KILL_AT}.")
        session(directory, KILL_AT, resume=False)
        ckpt = autosave.RunCheckpoint(directory)
        print(f"  committed steps on disk: {ckpt.steps()} (ticks {ckpt.latest_step() + 1}"
              f"..{KILL_AT} are lost)")
        print(f"Run 2: a new cluster resumes from tick {ckpt.latest_step()} and runs to "
              f"{END}.")
        resumed = session(directory, END, resume=True)
    expected = uninterrupted()
    same = [fp == expected[s] for s, fp in zip(SHARDS, resumed)]
    for s, ok in zip(SHARDS, same):
        print(f"  shard {s}: {'identical to' if ok else 'DIFFERENT from'} the "
              f"uninterrupted run")
    if not all(same):
        print("FAILED: the resumed run differs from the uninterrupted one")
        return 1
    print(f"OK: killed at tick {KILL_AT}, resumed from the last commit, and at tick {END} "
          f"every shard equals the run that was never interrupted.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
