"""A mesa-like model split into shards (examples/distributed_run.py)."""
