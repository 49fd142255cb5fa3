"""The log's size and shape over long play: metadata per flush is amortised O(1)
(deltas, and a snapshot only once the deltas since the last weigh half as much), and
a history nested 100,000 deep opens, walks and prints without recursion."""

import io

import pytest
from autosave import CheckpointLog
from autosave.log.inspect import inspect_log
from autosave.log.ops import SystemOps


class NoSync(SystemOps):
    """Sizes do not depend on fsync; skipping it keeps thousands of flushes quick."""

    def fsync(self, fd):
        pass


def metadata_bytes(path, flushes, deltas_per_snapshot=64):
    """File size after ``flushes`` one-bookmark flushes (no checkpoint among them)."""
    with CheckpointLog.open(path, checkpoint_every=1, deltas_per_snapshot=deltas_per_snapshot,
                            ops=NoSync()) as log:
        log.enter("town")
        log.step({"hp": 1})
        log.flush()
        start = log.file.end
        for i in range(flushes):
            log.bookmark(f"slot{i}", description="by the well")
            log.flush()
        return log.file.end - start


@pytest.mark.slow
def test_metadata_per_flush_is_amortised_constant(tmp_path):
    sizes = {n: metadata_bytes(tmp_path / f"{n}.log", n) for n in (1000, 2000, 4000)}
    # Each flush adds one bookmark to the state: with a snapshot every 64 flushes the
    # bytes per flush grew with the flushes (429 B after 2,000, 817 B after 4,000);
    # now they stay put, snapshots included (up to the sawtooth of their spacing).
    per_flush = {n: size / n for n, size in sizes.items()}
    assert max(per_flush.values()) < 1.3 * per_flush[1000], per_flush
    assert per_flush[4000] < 300, per_flush
    # And the history is all there.
    with CheckpointLog.open(tmp_path / "4000.log", writable=False) as log:
        assert len(log.bookmarks) == 4000


def test_snapshots_still_bound_what_opening_replays(tmp_path):
    path = tmp_path / "s.log"
    metadata_bytes(path, 3000, deltas_per_snapshot=8)
    with CheckpointLog.open(path, writable=False) as log:
        snapshot, deltas = log.file.metadata()
        assert snapshot is not None
        replayed = sum(len(events) for _, events in deltas)
        # What opening replays beyond the snapshot stays within the snapshot's weight.
        assert replayed <= len(snapshot[1]["bookmarks"]) // 2 + 8, replayed


@pytest.mark.slow
def test_a_history_nested_100000_deep(tmp_path):
    path = tmp_path / "deep.log"
    depth = 100_000
    with CheckpointLog.open(path, checkpoint_every=1, ops=NoSync()) as log:
        for i in range(depth):
            log.enter(f"n{i}")
        for hp in range(3):
            log.step({"hp": hp})
        log.bookmark("deepest")
    with CheckpointLog.open(path, writable=False) as log:
        assert len(log.records) == depth
        history = log.history()
        assert len(history) == depth and history[-1] == (f"n{depth - 1}", 0, 2)
        assert log.restore(log.back(1), replay=lambda s, n: s) == {"hp": 1}
        assert log.restore(log.bookmarks["deepest"].position) == {"hp": 2}
    out = io.StringIO()
    inspect_log(str(path), 5, out=out)
    lines = out.getvalue().splitlines()
    tree = [line for line in lines if "#" in line and "checkpoints" in line]
    assert len(tree) == depth
    assert tree[-1].endswith("steps 0-2  checkpoints 0,1,2  bookmarks deepest@2")
    assert f"[depth {depth}] #{depth - 1} n{depth - 1}" in tree[-1]
    assert max(map(len, tree)) < 200                # indentation does not grow forever
