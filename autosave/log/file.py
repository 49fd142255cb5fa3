"""The checkpoint log's file: opening and recovery, appending, commits, reading.

The format and the recovery algorithm are specified in docs/log-format.md (byte layout
in records.py). This module knows bytes, records and commits; what the metadata events
mean is the history layer's business. Every operating-system call goes through
``ops`` (ops.py), which faults.py replaces to inject failures.
"""

import errno
import os
from collections import OrderedDict

from ..errors import (CorruptLogError, LogClosedError, LogForkedError, LogPoisonedError,
                      ReadOnlyLogError)
from .ops import SYSTEM
from .rebuilt import Rebuilt
from .records import (BLOCK_SIZE, CHUNK, DELTA, MAGIC, MAX_BLOCK, MIN_BLOCK,
                      PAYLOAD, READABLE_VERSIONS, SLOT_OFFSETS, SNAPSHOT, VERSION, Slot,
                      chunk_start, frame, header_block, pack_meta, read_record, unpack_meta)

REWRITE_PIECE = 1 << 20
# errno values by which a file system says it has no hard links (FAT, some network ones)
NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}

__all__ = ["BLOCK_SIZE", "CHUNK", "DELTA", "PAYLOAD", "SLOT_OFFSETS", "SNAPSHOT",
           "LogFile", "LogLockedError", "frame"]


class LogLockedError(Exception):
    """Another process has the log open for writing."""


class BlockCache:
    """Reads whole blocks, keeping the most recently used ones: memory stays bounded
    whatever the file size."""

    def __init__(self, ops, fd, block_size, capacity):
        self.ops, self.fd, self.block_size, self.capacity = ops, fd, block_size, capacity
        self.blocks = OrderedDict()

    def block(self, index):
        data = self.blocks.get(index)
        if data is not None:
            self.blocks.move_to_end(index)
            return data
        data = self.ops.pread(self.fd, self.block_size, index * self.block_size)
        self.blocks[index] = data
        if len(self.blocks) > self.capacity:
            self.blocks.popitem(last=False)
        return data

    def forget_from(self, index):
        """Drop cached blocks from ``index`` on: they have grown."""
        for i in [i for i in self.blocks if i >= index]:
            del self.blocks[i]


class LogFile:
    """A checkpoint log file opened for reading or (one process at a time) writing."""

    fd = None

    def __init__(self, path, *, writable=True, block_size=BLOCK_SIZE, cache_blocks=256,
                 deltas_per_snapshot=64, ops=SYSTEM):
        if block_size < MIN_BLOCK or block_size > MAX_BLOCK or block_size & (block_size - 1):
            raise ValueError(f"block_size must be a power of two in {MIN_BLOCK}..{MAX_BLOCK}")
        self.path = os.fspath(path)
        self.writable = writable
        self.ops = ops
        self.deltas_per_snapshot = deltas_per_snapshot
        self.cache_blocks = cache_blocks
        self.recovered = 0             # bytes of torn tail past the commit opened
        self.recovery = []             # what opening had to work around, one line each
        self.pending = bytearray()     # framed records not committed yet
        self.pending_records = {}      # offset -> (kind, body) of those records
        self.poisoned = None           # why this writer refuses to write, once it does
        self.rebuilt = Rebuilt()       # saves of checkpoints rebuilt or written last
        self.pid = os.getpid()
        self._meta = {}                # offset -> decoded metadata record, read at open
        self._head = None              # a writer's header and slots, until its first commit
        if writable and not os.path.lexists(self.path):
            self._create_whole(block_size)
        fd = ops.open(self.path, os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY, 0o644)
        try:
            if writable:
                try:
                    ops.lock(fd)
                except BlockingIOError:
                    raise LogLockedError(
                        f"{self.path} is open for writing in another process") from None
            self.fd = fd
            self._open(block_size)
        except BaseException:
            self.fd = None
            ops.close(fd)
            raise

    # -- opening and recovery (docs/log-format.md, "Opening") -----------------------------

    def _open(self, block_size):
        size = self.ops.size(self.fd)
        head = self.ops.pread(self.fd, min(size, SLOT_OFFSETS[-1] + 64), 0)
        created = self._torn_creation(head, size, block_size) if self.writable else None
        if created:
            self.block_size = created
            self.cache = BlockCache(self.ops, self.fd, created, self.cache_blocks)
            self._create()
            return
        self._read_header(head, size)
        self.cache = BlockCache(self.ops, self.fd, self.block_size, self.cache_blocks)
        self.slot = self._recover(head, size)
        if self.writable:
            self._repair(head, size)
            self._remove_stale_creation()

    def _create_whole(self, block_size):
        """Create the log as a whole header block under a temporary name, made durable,
        then linked to the log's path (which fails if another process made one first):
        a crash leaves no log, or a whole one, never a log-sized file of zeros or of
        stale bytes (a file system may persist a new file's size before its data). A
        file system without hard links: the log is created in place, as below."""
        tmp = self.path + ".creating"
        try:
            fd = self.ops.open(tmp, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            try:
                self.ops.lock(fd)        # one creator at a time; the other opens its log
            except BlockingIOError:
                return
            self.ops.ftruncate(fd, 0)
            self.fd = fd
            self._write(header_block(block_size), 0)
            self.ops.fsync(fd)
            try:
                self.ops.link(tmp, self.path)
            except (FileExistsError, FileNotFoundError):
                pass                     # made meanwhile by another process: open that
            except OSError as e:
                if e.errno not in NO_LINKS:
                    raise
            try:
                self.ops.unlink(tmp)
            except FileNotFoundError:
                pass
            self.ops.fsync_directory(os.path.dirname(os.path.abspath(self.path)))
        finally:
            self.fd = None
            self.ops.close(fd)

    def _remove_stale_creation(self):
        """A writer of an existing log removes the temporary file a creation cut
        between its link and its unlink left (unless a creation holds it now)."""
        tmp = self.path + ".creating"
        if not os.path.exists(tmp):
            return
        try:
            fd = self.ops.open(tmp, os.O_RDWR, 0o644)
        except OSError:
            return
        try:
            mine, its = os.fstat(self.fd), os.fstat(fd)
            if (its.st_dev, its.st_ino) != (mine.st_dev, mine.st_ino):
                self.ops.lock(fd)    # another file: stale unless a creation holds it
            self.ops.unlink(tmp)     # this log's own second name: the link was made
        except OSError:              # held by a creation (BlockingIOError), or gone
            pass
        finally:
            self.ops.close(fd)

    def _torn_creation(self, head, size, block_size):
        """The block size to create the log with if no commit was ever made durable in
        the file, as a creation in place that never completed leaves it: empty, a
        prefix of a new log's header, or the header block's length of the header's own
        bytes and zeros in any mix (written or not when the size was); else None.
        Anything else is not taken for a new log, nor changed."""
        if len(head) >= 16 and head[0:8] == MAGIC:
            declared = int.from_bytes(head[12:16], "little")
            if MIN_BLOCK <= declared <= MAX_BLOCK and not declared & (declared - 1):
                block_size = declared
        if size > block_size:
            return None                  # a commit's records lie past the header block
        whole = self.ops.pread(self.fd, size, 0) if size > len(head) else head
        header = header_block(block_size)
        if size < block_size:
            return block_size if whole == header[:size] else None
        if whole == header or head[:16] == header[:16] and Slot.unpack(
                head[SLOT_OFFSETS[0]:SLOT_OFFSETS[0] + 64]) == Slot(0, block_size, 0):
            return None                  # a whole new log: opened as one
        # Byte by byte (a torn sector may hold part of its new bytes): each the header's
        # or a zero. The header is zeros past its slots, so a file of other bytes
        # (a file of someone else's, of this size) is not taken for one.
        if any(b and b != h for b, h in zip(whole, header)):
            return None
        return block_size

    def _create(self):
        self.slot, self.version = Slot(0, self.block_size, 0), VERSION
        self._head = bytearray(header_block(self.block_size)[:SLOT_OFFSETS[-1] + 64])
        self._write(header_block(self.block_size), 0)      # covers any torn prefix
        self.ops.fsync(self.fd)
        self.ops.fsync_directory(os.path.dirname(os.path.abspath(self.path)))

    def _read_header(self, head, size):
        if head[0:8] != MAGIC[:len(head)] or not head:
            raise CorruptLogError(f"{self.path} is not an autosave checkpoint log "
                                  f"(magic bytes missing at offset 0)")
        if len(head) < 16:
            raise CorruptLogError(f"{self.path}: the header is cut short at offset "
                                  f"{len(head)}")
        if head[8] not in READABLE_VERSIONS:
            raise CorruptLogError(f"{self.path}: log format version {head[8]} at offset 8 is "
                                  f"not supported (this autosave reads versions "
                                  f"{', '.join(map(str, READABLE_VERSIONS))})")
        self.version = head[8]
        self.block_size = int.from_bytes(head[12:16], "little")
        if (self.block_size < MIN_BLOCK or self.block_size > MAX_BLOCK
                or self.block_size & (self.block_size - 1)):
            raise CorruptLogError(f"{self.path}: block size {self.block_size} at offset 12 "
                                  f"is not a power of two in {MIN_BLOCK}..{MAX_BLOCK}")
        if size < self.block_size:
            raise CorruptLogError(f"{self.path}: the file has only {size} bytes, less than "
                                  f"its header block ({self.block_size} bytes at offset 0)")

    def _recover(self, head, size):
        """The newest commit whose data is whole: the newest usable slot, then every
        commit found whole past it by scanning forward."""
        slots = []
        for offset in SLOT_OFFSETS:
            slot = Slot.unpack(head[offset:offset + 64])
            if slot is None and any(head[offset:offset + 64]):   # zeros: never written
                self.recovery.append(f"the superblock slot at offset {offset} fails its "
                                     f"checksum")
            elif slot is not None:
                slots.append(slot)
        base = None
        for slot in sorted(slots, key=lambda s: s.seq, reverse=True):
            why = self._unusable(slot, size)
            if why is None:
                base = slot
                break
            self.recovery.append(f"commit {slot.seq} (a superblock slot) is unusable: {why}")
        if base is None:
            base = Slot(0, self.block_size, 0)
            self.recovery.append("no usable superblock slot: scanning the whole file")
        self._scanned_from = base.end
        slot = self._scan(base, size)
        if slot.seq != base.seq:
            self.recovery.append(f"commits {base.seq + 1}..{slot.seq} found whole past the "
                                 f"superblock by scanning forward from offset {base.end}")
        self.recovered = size - slot.end
        return slot

    def _unusable(self, slot, size):
        """Why ``slot`` cannot be the commit opened, or None if it can. Every record of
        the commit is read: without ordered writes a crash may leave its superblock slot
        durable and some of its data not."""
        if not self.block_size <= slot.end <= size:
            return f"its data ends at offset {slot.end} but the file has {size} bytes"
        if slot.meta == 0:
            return None if slot.seq == 0 and slot.end == self.block_size else (
                f"commit {slot.seq} names no metadata record")
        pos = slot.start if self.block_size <= slot.start < slot.meta else slot.meta
        try:
            while True:
                pos = chunk_start(pos, self.block_size)
                if pos > slot.meta:
                    return (f"the records of commit {slot.seq} do not lead to its metadata "
                            f"record at offset {slot.meta}")
                record, end = read_record(self.path, self.cache, self.block_size, pos,
                                          slot.end)
                if pos == slot.meta:
                    break
                pos = end
            if record[0] not in (DELTA, SNAPSHOT):
                return f"the record at offset {slot.meta} is not metadata"
            decoded = unpack_meta(self.path, slot.meta, record[1:])
        except CorruptLogError as e:
            return str(e).removeprefix(f"{self.path}: ")
        if decoded[1] not in (None, slot.seq) or end != slot.end:
            return f"the metadata record at offset {slot.meta} belongs to another commit"
        self._meta[slot.meta] = (record[0], decoded)
        return None

    def _scan(self, slot, size):
        """The last commit whole in the bytes past ``slot``: each is payload records,
        then a metadata record carrying the next commit number and pointing back at the
        previous commit's metadata record."""
        pos = slot.end
        while True:
            pos = chunk_start(pos, self.block_size)
            if pos + CHUNK.size > size:
                return slot
            try:
                record, end = read_record(self.path, self.cache, self.block_size, pos, size)
                kind = record[0]
                if kind in (DELTA, SNAPSHOT):
                    decoded = unpack_meta(self.path, pos, record[1:])
                elif kind != PAYLOAD:
                    return slot
            except CorruptLogError:
                return slot
            if kind != PAYLOAD:
                previous, seq, _ = decoded
                if seq != slot.seq + 1 or previous != slot.meta:
                    return slot
                self._meta[pos] = (kind, decoded)
                slot = slot.after(kind, pos, end, len(record) - 1)
            pos = end

    def _repair(self, head, size):
        """For a writer: make the superblock name the commit opened and cut the tail.

        Commits found by scanning are written again first: their bytes may be readable
        only from the page cache (an fsync failed after they were written, and the
        kernel then marks them clean without their reaching the disk), and the slots
        about to name them must not reach the disk before they do."""
        self._head = bytearray(head[:SLOT_OFFSETS[-1] + 64])
        if self.version != VERSION:
            self._head[8] = VERSION
            self.version = VERSION
        if self._scanned_from < self.slot.end:
            for start in range(self._scanned_from, self.slot.end, REWRITE_PIECE):
                piece = self.ops.pread(self.fd, min(REWRITE_PIECE, self.slot.end - start),
                                       start)
                self._write(piece, start)
        stored = [Slot.unpack(head[o:o + 64]) for o in SLOT_OFFSETS]
        if self.slot not in stored or self.recovery:
            # Both slots: a stale slot (newer than what was found usable) must not
            # come back once the file grows past its end again.
            for offset in SLOT_OFFSETS:
                self._head[offset:offset + 64] = self.slot.pack()
        if self._head != head[:len(self._head)]:
            self._write(bytes(self._head), 0)
        if self.recovered:
            self.ops.ftruncate(self.fd, self.slot.end)
        if self.recovered or self.recovery or head[8] != VERSION:
            self.ops.fsync(self.fd)

    # -- writing -------------------------------------------------------------------------

    @property
    def end(self):
        """The file length the last commit made durable."""
        return self.slot.end

    @property
    def size(self):
        """The log's length with the records queued for the next commit: the size a
        checkpoint's budget is reckoned from (docs/security.md, Budgets)."""
        return self.slot.end + len(self.pending)

    def check_writable(self):
        """Raise the LogUnusableError kind saying why this object may not write, if so."""
        if self.fd is None:
            raise LogClosedError(f"{self.path}: the log is closed")
        if os.getpid() != self.pid:
            raise LogForkedError(f"{self.path}: this log was opened by process {self.pid}; "
                                 f"process {os.getpid()} (a fork) must open it itself")
        if not self.writable:
            raise ReadOnlyLogError(f"{self.path} is open read-only")
        if self.poisoned:
            raise LogPoisonedError(f"{self.path}: {self.poisoned}; close and reopen the log "
                                   f"(it opens at its last durable commit)")

    def append(self, kind, body):
        """Queue a record for the next commit; returns its offset."""
        self.check_writable()
        offset, framed = frame(bytes((kind,)) + body, self.end + len(self.pending),
                               self.block_size)
        self.pending += framed
        self.pending_records[offset] = (kind, body)
        return offset

    def commit(self, events, state):
        """Make the pending records and ``events`` (one metadata record) durable.

        ``state`` is a function returning the whole metadata state; it is called when a
        snapshot is due instead of a delta. If this raises, nothing is committed: a
        failure before the data reached the kernel leaves the pending records queued
        for the next commit; a failure after (fsync, superblock) poisons the writer."""
        self.check_writable()
        if not events and not self.pending:
            return
        slot = self.slot
        # Snapshots cost the whole state: writing one only once the deltas since the
        # last one weigh half as much keeps the metadata per commit amortised O(1).
        if slot.deltas >= self.deltas_per_snapshot and (
                2 * slot.delta_bytes >= slot.snapshot_bytes):
            kind, content = SNAPSHOT, state()
        else:
            kind, content = DELTA, events
        body = pack_meta(slot.meta, slot.seq + 1, content)
        start = slot.end
        meta, framed = frame(bytes((kind,)) + body, start + len(self.pending), self.block_size)
        new = slot.after(kind, meta, start + len(self.pending) + len(framed), len(body))
        try:
            if self._head is not None:
                # The first commit of a writer writes the header and slots it read
                # again, so its fsync makes them durable: an fsync that failed before
                # this writer opened (in a creation, in a commit) may have left them
                # readable from the page cache only. Likewise the file's directory
                # entry, if the creation's directory fsync failed.
                self.ops.fsync_directory(os.path.dirname(os.path.abspath(self.path)))
                self._write(bytes(self._head), 0)
            # bytes, not a view of the bytearray: a view kept alive by a traceback
            # would stop the pending buffer from ever growing again.
            self._write(b"".join((self.pending, framed)), start)
        except BaseException:
            self._cut(start)
            raise
        try:
            self.ops.fsync(self.fd)
            self._write(new.pack(), SLOT_OFFSETS[new.seq % 2])
            self.ops.fsync(self.fd)
        except BaseException as e:
            # After a failed fsync the kernel may have dropped the dirty pages and a
            # later fsync that succeeds proves nothing; the superblock write may be torn.
            self.poisoned = f"commit {new.seq} failed after its data was written ({e!r})"
            raise
        self.slot, self._head = new, None
        self.pending.clear()
        self.pending_records.clear()
        self.cache.forget_from(start // self.block_size)

    def _write(self, data, offset):
        """pwrite all of ``data``: a short write continues where it stopped."""
        view = memoryview(data)
        done = 0
        while done < len(view):
            n = self.ops.pwrite(self.fd, view[done:], offset + done)
            if n <= 0:
                raise OSError(errno.ENOSPC, f"{self.path}: a write at offset {offset + done} "
                                            f"made no progress")
            done += n

    def _cut(self, end):
        """Give back the space of a failed write (best effort: the bytes past the
        commit are a torn tail to the next open anyway)."""
        try:
            self.ops.ftruncate(self.fd, end)
        except OSError:
            pass

    # -- reading -------------------------------------------------------------------------

    def read(self, offset):
        """(kind, body) of the record at ``offset``, committed or pending."""
        pending = self.pending_records.get(offset)
        if pending is not None:
            return pending
        record = self.read_committed(offset)
        return record[0], record[1:]

    def read_committed(self, offset):
        if self.fd is None:
            raise LogClosedError(f"{self.path}: the log is closed")
        return read_record(self.path, self.cache, self.block_size, offset, self.end)[0]

    def metadata(self):
        """((snapshot offset, state) or None, [(offset, events) of each delta since,
        oldest first])."""
        try:
            return self._metadata()
        finally:
            self._meta.clear()

    def _metadata(self):
        deltas = []
        offset, seq = self.slot.meta, self.slot.seq
        seen = set()
        while offset:
            if offset in seen:
                raise CorruptLogError(f"{self.path}: the metadata chain loops at offset {offset}")
            seen.add(offset)
            known = self._meta.pop(offset, None)
            if known is None:
                kind, body = self.read(offset)
                known = kind, unpack_meta(self.path, offset, body)
            kind, (previous, record_seq, content) = known
            if record_seq is not None and record_seq != seq:
                raise CorruptLogError(f"{self.path}: metadata record at offset {offset} is of "
                                      f"commit {record_seq} where commit {seq} belongs")
            if kind == SNAPSHOT:
                return (offset, content), deltas[::-1]
            if kind != DELTA:
                raise CorruptLogError(f"{self.path}: record at offset {offset} is not metadata")
            if previous >= offset:
                raise CorruptLogError(f"{self.path}: metadata record at offset {offset} points "
                                      f"forward to offset {previous}")
            deltas.append((offset, content))
            offset, seq = previous, seq - 1
        return None, deltas[::-1]

    def close(self):
        """Release the file and its lock (unflushed records are lost, as in a crash).
        Idempotent; in a forked child it releases only the child's descriptor."""
        fd, self.fd = self.fd, None
        if fd is not None:
            self.ops.close(fd)

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
