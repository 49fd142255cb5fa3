"""The checkpoint log's file: blocks, record framing, checksums, commits, recovery.

The format is specified in docs/log-format.md. This module knows bytes, records and
commits; what the metadata events mean is the history layer's business.
"""

import fcntl
import os
import struct
from collections import OrderedDict

import attrs
import msgpack
import xxhash

from ..errors import CorruptLogError
from ..files import fsync_directory

MAGIC = b"\x89ASVLOG\n"
VERSION = 1
BLOCK_SIZE = 4096
SLOT_OFFSETS = (64, 128)
SLOT_BODY = struct.Struct("<QQQI28x")        # seq, end, meta, deltas; 56 bytes
SLOT_SUM = struct.Struct("<Q")
CHUNK = struct.Struct("<IHB")                # checksum, length, type; 7 bytes
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
PAYLOAD, DELTA, SNAPSHOT = 1, 2, 3


class LogLockedError(Exception):
    """Another process has the log open for writing."""


@attrs.frozen
class Slot:
    seq: int
    end: int
    meta: int
    deltas: int

    def pack(self):
        body = SLOT_BODY.pack(self.seq, self.end, self.meta, self.deltas)
        return body + SLOT_SUM.pack(xxhash.xxh64_intdigest(body))

    @classmethod
    def unpack(cls, raw):
        """The slot stored in raw, or None if its checksum fails."""
        body = raw[:SLOT_BODY.size]
        (checksum,) = SLOT_SUM.unpack_from(raw, SLOT_BODY.size)
        if xxhash.xxh64_intdigest(body) != checksum:
            return None
        return cls(*SLOT_BODY.unpack(body))


def chunk_checksum(offset, kind, data):
    h = xxhash.xxh32()
    h.update(bytes((kind,)))
    h.update(data)
    h.update(offset.to_bytes(8, "little"))
    return h.intdigest()


def frame(record, start, block_size):
    """(offset of the record, the bytes to append at ``start``) for one record."""
    out = bytearray()
    pos = start
    offset = None
    rest = memoryview(record)
    first = True
    while True:
        left = block_size - pos % block_size
        if left < CHUNK.size:                  # too small for a chunk header: trailer
            out += bytes(left)
            pos += left
            left = block_size
        if offset is None:
            offset = pos
        n = min(len(rest), left - CHUNK.size)
        last = n == len(rest)
        kind = (FULL if last else FIRST) if first else (LAST if last else MIDDLE)
        data = bytes(rest[:n])
        out += CHUNK.pack(chunk_checksum(pos, kind, data), n, kind)
        out += data
        pos += CHUNK.size + n
        rest = rest[n:]
        first = False
        if last:
            return offset, bytes(out)


class BlockCache:
    """Reads whole blocks, keeping the most recently used ones: memory stays bounded
    whatever the file size."""

    def __init__(self, fd, block_size, capacity):
        self.fd, self.block_size, self.capacity = fd, block_size, capacity
        self.blocks = OrderedDict()

    def block(self, index):
        data = self.blocks.get(index)
        if data is not None:
            self.blocks.move_to_end(index)
            return data
        data = os.pread(self.fd, self.block_size, index * self.block_size)
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

    def __init__(self, path, *, writable=True, block_size=BLOCK_SIZE, cache_blocks=256,
                 deltas_per_snapshot=64):
        self.path = os.fspath(path)
        self.writable = writable
        self.deltas_per_snapshot = deltas_per_snapshot
        self.recovered = 0             # bytes of torn tail cut when opening
        self.pending = bytearray()     # framed records not committed yet
        self.pending_records = {}      # offset -> (kind, body) of those records
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        self.fd = os.open(self.path, flags, 0o644)
        try:
            if writable:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise LogLockedError(
                        f"{self.path} is open for writing in another process") from None
            size = os.fstat(self.fd).st_size
            if size == 0 and writable:
                self.block_size = block_size
                self._create()
            else:
                self._read_header(size)
            self.cache = BlockCache(self.fd, self.block_size, cache_blocks)
        except BaseException:
            os.close(self.fd)
            raise

    # -- header and slots ----------------------------------------------------------------

    def _create(self):
        header = bytearray(self.block_size)
        header[0:8] = MAGIC
        header[8] = VERSION
        struct.pack_into("<I", header, 12, self.block_size)
        self.slot = Slot(seq=0, end=self.block_size, meta=0, deltas=0)
        header[SLOT_OFFSETS[0]:SLOT_OFFSETS[0] + 64] = self.slot.pack()
        os.pwrite(self.fd, bytes(header), 0)
        os.fsync(self.fd)
        fsync_directory(os.path.dirname(os.path.abspath(self.path)))

    def _read_header(self, size):
        head = os.pread(self.fd, 192, 0)
        if len(head) < 16 or head[0:8] != MAGIC:
            raise CorruptLogError(f"{self.path} is not an autosave checkpoint log "
                                  f"(magic bytes missing at offset 0)")
        if head[8] != VERSION:
            raise CorruptLogError(f"{self.path}: log format version {head[8]} is not "
                                  f"supported (this autosave reads version {VERSION})")
        (self.block_size,) = struct.unpack_from("<I", head, 12)
        if self.block_size < 256 or self.block_size & (self.block_size - 1):
            raise CorruptLogError(f"{self.path}: block size {self.block_size} at offset 12 "
                                  f"is not a power of two >= 256")
        slots = [Slot.unpack(head[o:o + 64]) if len(head) >= o + 64 else None
                 for o in SLOT_OFFSETS]
        valid = [s for s in slots if s is not None]
        if not valid:
            raise CorruptLogError(f"{self.path}: both superblock slots (offsets 64 and 128) "
                                  f"fail their checksums")
        self.slot = max(valid, key=lambda s: s.seq)
        if size < self.slot.end:
            raise CorruptLogError(
                f"{self.path}: committed data ends at offset {self.slot.end} but the file "
                f"has only {size} bytes")
        if size > self.slot.end:
            self.recovered = size - self.slot.end
            if self.writable:
                os.ftruncate(self.fd, self.slot.end)
                os.fsync(self.fd)

    # -- writing -------------------------------------------------------------------------

    @property
    def end(self):
        """The file length the last commit made durable."""
        return self.slot.end

    def append(self, kind, body):
        """Queue a record for the next commit; returns its offset."""
        if not self.writable:
            raise PermissionError(f"{self.path} is open read-only")
        offset, framed = frame(bytes((kind,)) + body, self.end + len(self.pending),
                               self.block_size)
        self.pending += framed
        self.pending_records[offset] = (kind, body)
        return offset

    def commit(self, events, state):
        """Make the pending records and ``events`` (one metadata record) durable.

        ``state`` is a function returning the whole metadata state; it is called when a
        snapshot is due instead of a delta."""
        if not events and not self.pending:
            return
        if self.slot.deltas >= self.deltas_per_snapshot:
            meta = self.append(SNAPSHOT, msgpack.packb([0, state()], use_bin_type=True))
            deltas = 0
        else:
            meta = self.append(DELTA, msgpack.packb([self.slot.meta, events], use_bin_type=True))
            deltas = self.slot.deltas + 1
        start = self.end
        os.pwrite(self.fd, bytes(self.pending), start)
        os.fsync(self.fd)
        slot = Slot(seq=self.slot.seq + 1, end=start + len(self.pending), meta=meta,
                    deltas=deltas)
        os.pwrite(self.fd, slot.pack(), SLOT_OFFSETS[slot.seq % 2])
        os.fsync(self.fd)
        self.slot = slot
        self.pending.clear()
        self.pending_records.clear()
        self.cache.forget_from(start // self.block_size)

    # -- reading -------------------------------------------------------------------------

    def read(self, offset):
        """(kind, body) of the record at ``offset``, committed or pending."""
        pending = self.pending_records.get(offset)
        if pending is not None:
            return pending
        record = self.read_committed(offset)
        return record[0], record[1:]

    def read_committed(self, offset):
        block_size, end, cache = self.block_size, self.end, self.cache
        if not block_size <= offset < end:
            raise CorruptLogError(f"{self.path}: record offset {offset} is outside the "
                                  f"committed data ({block_size}..{end})")
        parts = []
        pos = offset
        while True:
            in_block = pos % block_size
            if block_size - in_block < CHUNK.size or pos + CHUNK.size > end:
                raise CorruptLogError(f"{self.path}: no chunk can start at offset {pos}")
            block = cache.block(pos // block_size)
            checksum, length, kind = CHUNK.unpack_from(block, in_block)
            stop = in_block + CHUNK.size + length
            if stop > block_size or pos + CHUNK.size + length > end:
                raise CorruptLogError(f"{self.path}: chunk at offset {pos} claims {length} "
                                      f"bytes past its block or the committed data")
            data = block[in_block + CHUNK.size:stop]
            if chunk_checksum(pos, kind, data) != checksum:
                raise CorruptLogError(f"{self.path}: checksum mismatch in the chunk at "
                                      f"offset {pos} (record at offset {offset})")
            expected = (FULL, FIRST) if not parts else (MIDDLE, LAST)
            if kind not in expected:
                raise CorruptLogError(f"{self.path}: chunk at offset {pos} has type {kind} "
                                      f"where {expected} belongs")
            parts.append(data)
            pos += CHUNK.size + length
            if kind in (FULL, LAST):
                record = b"".join(parts)
                if not record:
                    raise CorruptLogError(f"{self.path}: empty record at offset {offset}")
                return record
            left = block_size - pos % block_size
            if left < CHUNK.size:
                pos += left

    def metadata(self):
        """(snapshot state or None, [events of each delta since, oldest first])."""
        deltas = []
        offset = self.slot.meta
        seen = set()
        while offset:
            if offset in seen:
                raise CorruptLogError(f"{self.path}: the metadata chain loops at offset {offset}")
            seen.add(offset)
            kind, body = self.read(offset)
            try:
                previous, content = msgpack.unpackb(body, raw=False, strict_map_key=False)
            except Exception as e:
                raise CorruptLogError(f"{self.path}: metadata record at offset {offset} does "
                                      f"not decode: {e}") from None
            if kind == SNAPSHOT:
                return content, deltas[::-1]
            if kind != DELTA:
                raise CorruptLogError(f"{self.path}: record at offset {offset} is not metadata")
            deltas.append(content)
            offset = previous
        return None, deltas[::-1]

    def close(self):
        if self.fd is not None:
            os.close(self.fd)      # releases the lock
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

