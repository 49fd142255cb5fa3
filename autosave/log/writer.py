"""The log's checkpoint writer: everything after the walk off the game's thread, whole
checkpoints or deltas (docs/log-format.md, "Checkpoints" and "Off the game's thread").

``log.step()`` walks its state on the caller's thread (``files.dumps_later``) and hands
the walk here. One background thread takes the walks in order: it encodes each into
the save's bytes (what ``autosave.dumps`` gave at the step), chooses whole or delta,
and compresses (zstd against the previous save for a delta, xxh64 for its digest: both
release the GIL). The caller's thread appends each payload to the commit's pending data
in the same order, when a later call finds it done (``collect``) or must wait for it
(``settle``). A failure on the thread is raised by the call that collects it, after
its checkpoint was written whole on the caller's thread: the history it was recorded
in stays whole. With nothing queued, the caller's thread makes a checkpoint itself
when a whole one is due after a big delta: the same chooser, in the same order, so
the same file.
"""

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import attrs

from ..files import Walked
from .chain import DELTA_HEAD, DELTA_TAG, chain_charges, chain_fits, is_delta, \
    make_delta, make_whole
from .file import PAYLOAD, LogFile
from .records import compress_checkpoint
from .rebuilt import Rebuilt

IN_FLIGHT = 4            # checkpoints compressing at once; a fifth step waits
# A walk waiting for the thread holds some 5-9x its save's bytes (measured with
# tracemalloc: 4.8x for delta_log.py's agents, 9.0x for town_log.py's town, whose sets
# and small dicts are records one by one). Walks in flight are bounded by WALKS_HELD
# bytes, each reckoned WALK_PER_SAVE_BYTE times the newest save appended: a step that
# would pass it waits for the oldest checkpoints first, as a fifth one does.
WALKS_HELD = 256 << 20
WALK_PER_SAVE_BYTE = 10
# A delta at least this fraction of its save's size (some third of a whole checkpoint's)
# means most of the state changes between checkpoints: the next ones are whole (deltas
# would only lengthen restores), and a delta is tried again after WHOLE_AFTER_BIG.
BIG_DELTA = 1 / 8
WHOLE_AFTER_BIG = 8


class _Checkpoint:
    """One checkpoint on its way from the walk to its payload: the walk until the
    thread encodes it, then its save's bytes."""
    __slots__ = ("walked", "data")

    def __init__(self, walked: Walked) -> None:
        self.walked: Walked | None = walked
        self.data: bytes | None = None

    def encode(self) -> bytes:
        if self.data is None:
            walked = self.walked
            assert walked is not None
            self.data = walked.encode()
            self.walked = None            # the walk's tables are freed by its encoder
        return self.data


@attrs.define
class _Job:
    checkpoint: _Checkpoint
    future: Future
    done: Callable[[int], None]       # told the payload's offset once appended


def _whole(data: bytes, end: int) -> bytes:
    return make_whole(data, end)


def _delta(data: bytes, base: bytes) -> bytes:
    # The base's offset is known only once the base is appended: the caller's thread
    # writes it into the head (make_delta's, with offset 0 here).
    return make_delta(data, base, 0)


class _Chooser:
    """Whole or delta, decided on the writer's thread, in the order the checkpoints were
    taken, from what is fixed by then: the saves before (their sizes, whether a delta
    came out big) and the log's committed size when the step was taken. Never from
    how far the thread got, so that the same play writes the same file."""

    def __init__(self, full_every: int) -> None:
        self.full_every = full_every
        self.base: bytes | None = None    # the save the next delta is taken against
        self.chain: list[int] = []        # the sizes of its chain, the whole one first
        self.big: int | None = None       # the index of the newest big delta
        self.index = 0

    def build(self, checkpoint: _Checkpoint, end: int) -> bytes:
        index, self.index = self.index, self.index + 1
        base, self.base = self.base, None        # an encoding that fails: next is whole
        data = checkpoint.encode()
        self.base = data if self.full_every else None
        if base is None or not self._wants_delta(len(data), index, end):
            self.chain = [len(data)]
            return _whole(data, end)
        self.chain.append(len(data))
        payload = _delta(data, base)
        if len(payload) >= BIG_DELTA * len(data):
            self.big = index
        return payload

    def whole_after_big(self) -> bool:
        """Whether the next checkpoint is whole because a recent delta came out big:
        most of the state changes between checkpoints."""
        return self.big is not None and self.index - self.big <= WHOLE_AFTER_BIG

    def _wants_delta(self, size: int, index: int, end: int) -> bool:
        if len(self.chain) > self.full_every:
            return False
        if self.big is not None and index - self.big <= WHOLE_AFTER_BIG:
            return False
        # The log is at least as large as its committed part when the delta is
        # appended: what that allows, a reader allows later (docs/log-format.md,
        # "Budget of a chain").
        return chain_fits([*self.chain, size], end)


class CheckpointWriter:
    """Checkpoints of one writer's log, in the order they were taken."""

    def __init__(self, file: LogFile, full_every: int) -> None:
        self.file = file
        self.full_every = full_every
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: deque[_Job] = deque()
        self._chooser = _Chooser(full_every)      # used on the thread only
        self._last_offset = 0             # the payload offset of the newest appended
        self._written: list[int] = []     # sizes of the chain appended so far
        self._walk_size = 0               # what a walk is reckoned to hold (WALKS_HELD)

    def submit(self, walked: Walked, done: Callable[[int], None]) -> None:
        """Queue the checkpoint of the walk ``walked``; ``done(offset)`` is called on
        the caller's thread once its payload is appended (at a later collect or
        settle). Call make_room() first: this raises nothing of the thread's."""
        self.make_room()
        checkpoint = _Checkpoint(walked)
        # the committed size: fixed by the game's calls (a flush), not by the thread
        end = self.file.end
        # With no job queued the thread is idle (a job leaves the queue once done), so
        # the chooser may run here, in its turn: when a whole save is due because most
        # of the state changes, the thread would only take turns with the game for the
        # GIL over the same work (measured: no faster per tick, and a flush that waits
        # for it slower than before delta checkpoints).
        if not self._jobs and self._chooser.whole_after_big():
            future: Future = Future()
            try:
                future.set_result(self._build(checkpoint, end))
            except Exception as error:   # raised by the next call, as the thread's are
                future.set_exception(error)
            self._jobs.append(_Job(checkpoint, future, done))
            if future.exception() is None:
                self._collect_one()       # appended now, as a step did before deltas
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="autosave-log")
        future = self._pool.submit(self._build, checkpoint, end)
        self._jobs.append(_Job(checkpoint, future, done))

    def _build(self, checkpoint: _Checkpoint, end: int) -> bytes:
        return self._chooser.build(checkpoint, end)

    def make_room(self) -> None:
        """Wait for the oldest checkpoints until a new one may be queued: fewer than
        IN_FLIGHT, and their walks with the new one within WALKS_HELD bytes (raising a
        failure of the thread's, before the caller changes anything)."""
        jobs = self._jobs
        while jobs and (len(jobs) >= IN_FLIGHT
                        or (len(jobs) + 1) * self._walk_size > WALKS_HELD):
            self._collect_one()

    def collect(self) -> None:
        """Append the payloads done so far, in order, without waiting."""
        while self._jobs and self._jobs[0].future.done():
            self._collect_one()

    def settle(self) -> None:
        """Append every queued payload, waiting for the thread."""
        while self._jobs:
            self._collect_one()

    def _collect_one(self) -> None:
        job = self._jobs[0]
        error = job.future.exception()
        if error is None:
            payload = job.future.result()
            if is_delta(payload):
                # the head carries the base's offset, known now that it is appended
                tag, _, size, digest = DELTA_HEAD.unpack_from(payload)
                payload = DELTA_HEAD.pack(DELTA_TAG, self._last_offset, size,
                                          digest) + payload[DELTA_HEAD.size:]
        else:
            # Written whole on this thread, so the history keeps its checkpoint; the
            # deltas queued after it are taken against its bytes, which the thread
            # still holds (or are whole, if it could not encode them).
            try:
                payload = compress_checkpoint(job.checkpoint.encode(), self.file.end)
            except BaseException as again:
                self._jobs.popleft()
                self.file.poisoned = (f"a checkpoint could not be encoded ({again!r}); "
                                      f"its step is lost")
                raise
        offset = self.file.append(PAYLOAD, payload)
        self._jobs.popleft()
        self._last_offset = offset
        self._remember(offset, job.checkpoint.encode(), is_delta(payload))
        job.done(offset)
        if error is not None:
            error.add_note(f"on the log's writer thread, in the checkpoint now at offset "
                           f"{offset} of {self.file.path} (written whole instead)")
            raise error

    def _remember(self, offset: int, data: bytes, delta: bool) -> None:
        """Keep the save just appended in the log's cache of rebuilt checkpoints,
        charged as a reader's rebuild of its chain would be (chain.Rebuilt)."""
        self._written = [*self._written, len(data)] if delta else [len(data)]
        self._walk_size = WALK_PER_SAVE_BYTE * len(data)
        cache: Rebuilt = self.file.rebuilt
        if cache.worth(len(data)):
            memory, work, peak = chain_charges(self._written)
            cache.put(offset, data, memory, work, peak, self.file.size)

    def close(self) -> None:
        """Stop the thread (what it has not done is dropped, as unflushed work is)."""
        self._jobs.clear()
        pool, self._pool = self._pool, None
        # A forked child has no thread of its parent's to wait for.
        if pool is not None and os.getpid() == self.file.pid:
            pool.shutdown(wait=True, cancel_futures=True)
