"""The log's checkpoint writer: compression off the game's thread, whole checkpoints or
deltas (docs/log-format.md, "Checkpoints").

``log.step()`` serialises its state on the caller's thread and hands the bytes here. One
background thread compresses them in order (zlib for a whole checkpoint, zstd against
the previous save for a delta, xxh64 for its digest: all release the GIL); the caller's
thread appends each payload to the commit's pending data in the same order, when a later
call finds it done (``collect``) or must wait for it (``settle``). A failure on the
thread is raised by the call that collects it, after its checkpoint was written whole
on the caller's thread: the history it was recorded in stays whole.
"""

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import attrs

from .chain import DELTA_HEAD, DELTA_TAG, chain_fits, make_delta, make_whole
from .file import PAYLOAD, LogFile
from .records import compress_checkpoint

IN_FLIGHT = 4            # checkpoints compressing at once; a fifth step waits
# A delta at least this fraction of its save's size (some third of a whole checkpoint's)
# means most of the state changes between checkpoints: the next ones are whole (deltas
# would only lengthen restores), and a delta is tried again after WHOLE_AFTER_BIG.
BIG_DELTA = 1 / 8
WHOLE_AFTER_BIG = 8


@attrs.define
class _Job:
    data: bytes
    delta: bool
    future: Future
    done: Callable[[int], None]       # told the payload's offset once appended
    index: int                        # its place in the order checkpoints were taken


def _whole(data: bytes, end: int) -> bytes:
    return make_whole(data, end)


def _delta(data: bytes, base: bytes) -> bytes:
    # The base's offset is known only once the base is appended: the caller's thread
    # writes it into the head (make_delta's, with offset 0 here).
    return make_delta(data, base, 0)


class CheckpointWriter:
    """Checkpoints of one writer's log, in the order they were taken."""

    def __init__(self, file: LogFile, full_every: int) -> None:
        self.file = file
        self.full_every = full_every
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: deque[_Job] = deque()
        # The save the next delta is taken against (None: the next one is whole) and
        # the sizes of its chain (the whole one first).
        self._base: bytes | None = None
        self._chain: list[int] = []
        self._last_offset = 0             # the payload offset of the newest appended
        # Decisions depend only on what is known at points fixed by the game's calls,
        # never on how far the thread got, so that the same play writes the same file:
        # the outcomes of the checkpoints before ``_horizon`` (all, at a settle; all
        # but the IN_FLIGHT - 1 newest, when a step waits for the oldest).
        self._taken = 0                   # checkpoints submitted
        self._horizon = 0
        self._big: list[int] = []         # indices of the deltas that came out big

    def submit(self, data: bytes, done: Callable[[int], None]) -> None:
        """Queue the checkpoint of save ``data``; ``done(offset)`` is called on the
        caller's thread once its payload is appended (at a later collect or settle).
        Call make_room() first: this raises nothing of the thread's."""
        self.make_room()
        index = self._taken
        self._taken += 1
        self._horizon = max(self._horizon, index - IN_FLIGHT + 1)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="autosave-log")
        base = self._base
        delta = base is not None and self._wants_delta(len(data), index)
        if base is not None and delta:
            future = self._pool.submit(_delta, data, base)
            self._chain.append(len(data))
        else:
            future = self._pool.submit(_whole, data, self.file.end)
            self._chain = [len(data)]
        self._base = data if self.full_every else None
        self._jobs.append(_Job(data, delta, future, done, index))

    def _wants_delta(self, size: int, index: int) -> bool:
        if len(self._chain) > self.full_every:
            return False
        big = next((b for b in reversed(self._big) if b < self._horizon), None)
        if big is not None and index - big <= WHOLE_AFTER_BIG:
            return False
        # The log is at least as large as its committed part when the delta is
        # appended: what that allows, a reader allows later (docs/log-format.md,
        # "Budget of a chain").
        return chain_fits([*self._chain, size], self.file.end)

    def make_room(self) -> None:
        """Wait for the oldest checkpoints until a new one may be queued (raising a
        failure of the thread's, before the caller changes anything)."""
        while len(self._jobs) >= IN_FLIGHT:
            self._collect_one()

    def collect(self) -> None:
        """Append the payloads done so far, in order, without waiting."""
        while self._jobs and self._jobs[0].future.done():
            self._collect_one()

    def settle(self) -> None:
        """Append every queued payload, waiting for the thread."""
        while self._jobs:
            self._collect_one()
        self._horizon = self._taken

    def _collect_one(self) -> None:
        job = self._jobs[0]
        error = job.future.exception()
        if error is None:
            payload = job.future.result()
            if job.delta:
                # the head carries the base's offset, known now that it is appended
                tag, _, size, digest = DELTA_HEAD.unpack_from(payload)
                payload = DELTA_HEAD.pack(DELTA_TAG, self._last_offset, size,
                                          digest) + payload[DELTA_HEAD.size:]
        else:
            # Written whole on this thread, so the history keeps its checkpoint; the
            # deltas queued after it are taken against its bytes, which it still holds.
            payload = compress_checkpoint(job.data, self.file.end)
        offset = self.file.append(PAYLOAD, payload)
        self._jobs.popleft()
        self._last_offset = offset
        self._learn(job, len(payload), error is None)
        job.done(offset)
        if error is not None:
            error.add_note(f"on the log's writer thread, in the checkpoint now at offset "
                           f"{offset} of {self.file.path} (written whole instead)")
            raise error

    def _learn(self, job: _Job, size: int, ok: bool) -> None:
        """Whether a delta came out big (BIG_DELTA)."""
        if job.delta and ok and size >= BIG_DELTA * len(job.data):
            self._big.append(job.index)
            del self._big[:-IN_FLIGHT - 1]        # only the newest few can matter

    def close(self) -> None:
        """Stop the thread (what it has not done is dropped, as unflushed work is)."""
        self._jobs.clear()
        pool, self._pool = self._pool, None
        # A forked child has no thread of its parent's to wait for.
        if pool is not None and os.getpid() == self.file.pid:
            pool.shutdown(wait=True, cancel_futures=True)
