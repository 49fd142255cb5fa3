"""The Ray actor checkpoint recipe (docs/distributed.md, "Ray actors"): an actor owns
one shard, saves it into a RunCheckpoint when the driver asks, and restores the latest
committed step in ``__init__``, so a killed actor (``ray.kill``, a lost node, a
``max_restarts`` restart) comes back where the run last committed."""

import ray

import autosave
from shards.model import Shard, fingerprint, run_shard


@ray.remote
class ShardActor:
    def __init__(self, directory, shard_id, seed, n_agents=50):
        self.ckpt = autosave.RunCheckpoint(directory)
        self.shard_id = shard_id
        if self.ckpt.latest_step() is not None:
            self.shard = self.ckpt.load_shard(shard_id)      # the latest committed step
        else:
            self.shard = Shard(shard_id, seed, n_agents)

    def run(self, ticks):
        run_shard(self.shard, ticks)
        return self.shard.tick

    def checkpoint(self):
        """Save this shard at its tick; the driver commits the step with every
        shard's receipt."""
        return self.ckpt.save_shard(self.shard_id, self.shard, self.shard.tick)

    def tick(self):
        return self.shard.tick

    def fingerprint(self):
        return fingerprint(self.shard)
