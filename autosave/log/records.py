"""The checkpoint log's byte layout (docs/log-format.md): header, superblock slots,
record framing into chunks, and the metadata record's envelope."""

import gc
import struct
import sys
import zlib
from array import array
from collections.abc import MutableMapping
from itertools import accumulate, chain
from operator import sub

import attrs
import msgpack
import xxhash

from ..errors import CorruptLogError
from ..files import loads
from ..loading.limits import (DECODE_MEMORY_PER_BYTE, WORK_PER_BYTE, Budget, OverBudget, charge,
                      file_budget)

MAGIC = b"\x89ASVLOG\n"
VERSION = 4
READABLE_VERSIONS = (1, 2, 3, 4)  # version 1 metadata records carry no commit number;
                                  # versions 1 and 2 hold checkpoint tables unpacked
BLOCK_SIZE = 4096
MIN_BLOCK, MAX_BLOCK = 256, 65536  # a chunk's u16 length must cover a block
SLOT_OFFSETS = (64, 128)
# seq, end, meta, deltas, reserved, delta bytes since the snapshot, snapshot bytes, start
SLOT_BODY = struct.Struct("<QQQIIQQQ")    # 56 bytes; version 1 wrote zeros past deltas
SLOT_SUM = struct.Struct("<Q")
CHUNK = struct.Struct("<IHB")             # checksum, length, type; 7 bytes
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
PAYLOAD, DELTA, SNAPSHOT = 1, 2, 3


@attrs.frozen
class Slot:
    seq: int
    end: int
    meta: int
    deltas: int = 0
    delta_bytes: int = 0          # metadata bytes written as deltas since the snapshot
    snapshot_bytes: int = 0       # size of that snapshot
    start: int = 0                # where the commit's data begins (0: not recorded)

    def pack(self):
        body = SLOT_BODY.pack(self.seq, self.end, self.meta, self.deltas, 0,
                              self.delta_bytes, self.snapshot_bytes, self.start)
        return body + SLOT_SUM.pack(xxhash.xxh64_intdigest(body))

    @classmethod
    def unpack(cls, raw):
        """The slot stored in raw, or None if it is cut short or its checksum fails."""
        if len(raw) < SLOT_BODY.size + SLOT_SUM.size:
            return None
        body = raw[:SLOT_BODY.size]
        (checksum,) = SLOT_SUM.unpack_from(raw, SLOT_BODY.size)
        if xxhash.xxh64_intdigest(body) != checksum:
            return None
        seq, end, meta, deltas, _, delta_bytes, snapshot_bytes, start = SLOT_BODY.unpack(body)
        return cls(seq, end, meta, deltas, delta_bytes, snapshot_bytes, start)

    def after(self, kind, offset, end, body_size):
        """The slot of the commit after this one, whose metadata record (of ``kind``,
        ``body_size`` bytes) is at ``offset`` and ends it at ``end``."""
        if kind == SNAPSHOT:
            return Slot(self.seq + 1, end, offset, 0, 0, body_size, self.end)
        return Slot(self.seq + 1, end, offset, self.deltas + 1, self.delta_bytes + body_size,
                    self.snapshot_bytes, self.end)


def header_block(block_size):
    """The header block of a new log (its slot 0 holds commit 0: no data)."""
    header = bytearray(block_size)
    header[0:8] = MAGIC
    header[8] = VERSION
    struct.pack_into("<I", header, 12, block_size)
    genesis = Slot(0, block_size, 0)
    header[SLOT_OFFSETS[0]:SLOT_OFFSETS[0] + 64] = genesis.pack()
    return bytes(header)


def chunk_checksum(offset, kind, data):
    h = xxhash.xxh32()
    h.update(bytes((kind,)))
    h.update(data)
    h.update(offset.to_bytes(8, "little"))
    return h.intdigest()


def chunk_start(pos, block_size):
    """Where a chunk at or after ``pos`` starts: a block's last < 7 bytes are trailer."""
    left = block_size - pos % block_size
    return pos + left if left < CHUNK.size else pos


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


def read_record(path, cache, block_size, offset, limit):
    """(record bytes, offset just past its last chunk) of the record at ``offset``,
    reading nothing at or past ``limit``. CorruptLogError names the offending offset."""
    if type(offset) is not int or not block_size <= offset < limit:
        raise CorruptLogError(f"{path}: record offset {offset!r:.40} is outside the data "
                              f"({block_size}..{limit})")
    parts = []
    pos = offset
    while True:
        in_block = pos % block_size
        if block_size - in_block < CHUNK.size or pos + CHUNK.size > limit:
            raise CorruptLogError(f"{path}: no chunk can start at offset {pos}")
        block = cache.block(pos // block_size)
        if len(block) < in_block + CHUNK.size:
            raise CorruptLogError(f"{path}: the file ends inside the chunk at offset {pos}")
        checksum, length, kind = CHUNK.unpack_from(block, in_block)
        stop = in_block + CHUNK.size + length
        if stop > block_size or pos + CHUNK.size + length > limit or stop > len(block):
            raise CorruptLogError(f"{path}: chunk at offset {pos} claims {length} bytes past "
                                  f"its block or the data")
        data = block[in_block + CHUNK.size:stop]
        if chunk_checksum(pos, kind, data) != checksum:
            raise CorruptLogError(f"{path}: checksum mismatch in the chunk at offset {pos} "
                                  f"(record at offset {offset})")
        expected = (FULL, FIRST) if not parts else (MIDDLE, LAST)
        if kind not in expected:
            raise CorruptLogError(f"{path}: chunk at offset {pos} has type {kind} where "
                                  f"{expected} belongs")
        parts.append(data)
        pos += CHUNK.size + length
        if kind in (FULL, LAST):
            record = b"".join(parts) if len(parts) > 1 else parts[0]
            if not record:
                raise CorruptLogError(f"{path}: empty record at offset {offset}")
            return record, pos
        pos = chunk_start(pos, block_size)


def pack_meta(previous, seq, content):
    """The body of a metadata record: the previous metadata record's offset, the commit
    number, and the events (delta) or the whole state (snapshot)."""
    return msgpack.packb([previous, seq, content], use_bin_type=True,
                         unicode_errors="surrogatepass")


def unpack_meta(path, offset, body):
    """(previous offset, commit number or None for version 1, content)."""
    collecting = gc.isenabled()
    gc.disable()                         # a snapshot is many small lists that all live on
    try:
        fields = msgpack.unpackb(body, raw=False, strict_map_key=False,
                                 unicode_errors="surrogatepass")
    except Exception as e:
        raise CorruptLogError(f"{path}: metadata record at offset {offset} does not decode: "
                              f"{type(e).__name__}") from None
    finally:
        if collecting:
            gc.enable()
    if type(fields) is list and len(fields) == 3:
        previous, seq, content = fields
    elif type(fields) is list and len(fields) == 2:
        (previous, content), seq = fields, None
    else:
        raise CorruptLogError(f"{path}: metadata record at offset {offset} is not "
                              f"[previous, commit, content]")
    if type(previous) is not int or not (seq is None or type(seq) is int):
        raise CorruptLogError(f"{path}: metadata record at offset {offset} has a previous "
                              f"offset or commit number that is not an int")
    return previous, seq, content


# -- checkpoint payloads ------------------------------------------------------------------

# A checkpoint is charged to the budget of the whole log (docs/security.md): its inflated
# bytes once held (a bytearray grown in place: charged twice over), then decoded and
# loaded as a file of that size is, out of the allowance of the log's own size. So a
# small log cannot inflate to a large state: the writer stores a checkpoint less
# compressed (zlib's stored blocks) when the log is not yet large enough to hold it.
INFLATED_HELD = 2


def checkpoint_limit(log_size):
    """The most bytes a checkpoint in a log of ``log_size`` bytes may inflate to."""
    fresh = Budget(log_size)
    by_memory = fresh.memory // (INFLATED_HELD + DECODE_MEMORY_PER_BYTE)
    by_work = fresh.work // WORK_PER_BYTE
    return min(by_memory, by_work)


def compress_checkpoint(data, end=0):
    """The payload of a checkpoint appended at offset ``end``: compressed, unless the
    log would then be too small to inflate it (stored blocks are no smaller than the
    data, and a log holding them is large enough to restore them)."""
    packed = zlib.compress(data, 1)
    if len(data) > checkpoint_limit(end + len(packed)):
        packed = zlib.compress(data, 0)
    return packed


INFLATE_IN = 1 << 16          # compressed bytes fed at a time (no tail re-sliced)
INFLATE_OUT = 1 << 20         # bytes inflated at a time, each charged before the next


def inflate_checkpoint(path, offset, packed, log_size):
    """The bytes of the checkpoint record at ``offset`` of a log of ``log_size`` bytes,
    charged to a budget of the log's size, or CorruptLogError.
    Inflated piece by piece in time linear in the stream, so that a stream refused for
    its size has taken no more memory than the bound itself."""
    try:
        with file_budget(log_size, decoded=False) as budget:
            return _inflate(path, offset, packed, budget)
    except OverBudget as e:
        raise CorruptLogError(f"{path}: {e}") from None


def _inflate(path, offset, packed, budget):
    limit = min(budget.memory // (INFLATED_HELD + DECODE_MEMORY_PER_BYTE),
                budget.work // WORK_PER_BYTE)
    inflater = zlib.decompressobj()
    out = bytearray()
    view = memoryview(packed)
    fed, rest = 0, b""
    try:
        while not inflater.eof:
            if not rest and fed < len(view):
                rest = view[fed:fed + INFLATE_IN]      # a view: nothing copied
                fed += len(rest)
            piece = inflater.decompress(rest, INFLATE_OUT)
            rest = inflater.unconsumed_tail             # at most INFLATE_IN bytes
            if not piece and not rest and fed == len(view):
                break                                   # the stream is cut short
            out += piece
            if len(out) > limit:
                raise CorruptLogError(
                    f"{path}: the checkpoint at offset {offset} inflates past {limit:,} "
                    f"bytes, more than a {budget.size:,}-byte log may hold "
                    f"(docs/security.md, Budgets)")
    except zlib.error as e:
        raise CorruptLogError(f"{path}: the checkpoint at offset {offset} is not a compressed "
                              f"save ({e})") from None
    if not inflater.eof or inflater.unused_data or rest or fed < len(view):
        raise CorruptLogError(f"{path}: the checkpoint at offset {offset} is a cut or padded "
                              f"zlib stream")
    budget.charge(INFLATED_HELD * len(out), 0, f"the checkpoint at offset {offset}")
    return out


def load_checkpoint(path, offset, packed, log_size):
    """The state saved in the checkpoint record at ``offset``: inflated and loaded
    under one budget, the log's (docs/security.md, Budgets)."""
    with file_budget(log_size, decoded=False, shared=True) as budget:
        try:
            data = _inflate(path, offset, packed, budget)
        except OverBudget as e:
            raise CorruptLogError(f"{path}: {e}") from None
        try:
            return loads(data)
        except Exception as e:
            e.add_note(f"in the checkpoint at offset {offset} of {path}")
            raise


# Version 3: a checkpoint table as [TABLE, count, zlib stream of little-endian int64:
# the count step differences, then the count offset differences] (each from the one
# before, the first from 0), in step order. Steps go up by one and offsets by a
# checkpoint's size, so the stream is a fraction of the 16 bytes per checkpoint of
# version 2's int64 pairs: snapshots shrink as much, and with them the deltas an open
# may replay after one (docs/log-format.md).
TABLE = "zd"
TABLE_MEMORY_PER_BYTE = 12       # a dict entry and two ints per 16 bytes of table


def pack_checkpoints(checkpoints):
    """step -> offset as a version 3 table: a snapshot's bulk, read back (and checked)
    at C speed. A table read from a snapshot and not changed since is written back as
    it was read, without inflating it."""
    if type(checkpoints) is CheckpointTable and checkpoints.packed is not None and (
            not checkpoints.added):
        return [TABLE, checkpoints.count, checkpoints.packed]
    steps = sorted(checkpoints)
    offsets = [checkpoints[step] for step in steps]
    diffs = array("q", map(sub, steps, chain((0,), steps)))
    diffs.extend(map(sub, offsets, chain((0,), offsets)))
    if sys.byteorder == "big":
        diffs.byteswap()
    return [TABLE, len(steps), zlib.compress(diffs.tobytes(), 1)]


def charge_table(count, packed):
    """Charge a version 3 table's memory to the log's budget (a small stream may claim
    millions of checkpoints); ValueError if it is not [count, bytes]."""
    if type(count) is not int or count < 0 or type(packed) is not bytes:
        raise ValueError("not [count, bytes]")
    charge(TABLE_MEMORY_PER_BYTE * 16 * count, count, f"a table of {count:,} checkpoints")


def unpack_checkpoints(count, packed):
    """(steps, offsets) of a version 3 table, as iterables; ValueError if it is not one. The table's
    memory is charged to the log's budget before it is inflated (a small stream may
    claim millions of checkpoints)."""
    charge_table(count, packed)
    return _unpack(count, packed)


def _unpack(count, packed):
    diffs = _differences(count, packed)
    # a record's steps are mostly consecutive: a range, no list of ints to build
    if count and diffs[1:count].count(1) == count - 1:
        steps = range(diffs[0], diffs[0] + count)
    else:
        steps = accumulate(diffs[:count])
    return steps, accumulate(diffs[count:])


def _differences(count, packed):
    size = 16 * count
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, size + 1)
    except zlib.error:
        raise ValueError("not a zlib stream") from None
    if len(raw) != size or not inflater.eof or inflater.unused_data:
        raise ValueError(f"not {count} int64 step and offset differences")
    diffs = array("q", raw)
    if sys.byteorder == "big":
        diffs.byteswap()
    return diffs


def newest_step(checkpoints):
    """The step of a record's newest checkpoint (they are added in step order), or None;
    a table read from a snapshot is not made a dict for it."""
    if type(checkpoints) is CheckpointTable:
        return checkpoints.newest()
    return next(reversed(checkpoints), None)


class CheckpointTable(MutableMapping):
    """A record's checkpoints (step -> payload offset) as a snapshot holds them: the
    packed table is inflated when first needed, not at open, so opening a log costs
    the same whatever its number of checkpoints (docs/log-format.md, "Opening").
    Checkpoints added meanwhile (the deltas replayed, new steps) are kept beside it, and
    a table not added to is written back into the next snapshot as it was read."""

    __slots__ = ("count", "packed", "added", "_table", "_path", "_where", "_rid")

    def __init__(self, count, packed, path, where, rid):
        self.count, self.packed = count, packed
        self.added = {}
        self._table = None
        # for the error, if it is forged: the file, the metadata record, the node record
        self._path, self._where, self._rid = path, where, rid

    def _whole(self):
        if self._table is None:
            try:
                steps, offsets = _unpack(self.count, self.packed)
                table = dict(zip(steps, offsets))
            except ValueError as e:
                self._refuse(e)
            table.update(self.added)
            self._table, self.added = table, {}
            self.packed = None
        return self._table

    def first(self):
        """The table's first step (its smallest), read without inflating the rest; None
        for an empty one."""
        if self._table is not None or not self.count:
            return None
        try:
            head = zlib.decompressobj().decompress(self.packed, 8)
        except zlib.error:
            return None
        if len(head) < 8:
            return None
        return int.from_bytes(head, "little", signed=True)

    def _refuse(self, e):
        raise CorruptLogError(f"{self._path}: metadata record at offset {self._where}: the "
                              f"checkpoints of record {self._rid} are not a table: "
                              f"{e}") from None

    def newest(self):
        """The newest checkpoint's step (the last added), or None: the table's steps
        summed, without a dict made of them."""
        if self._table is not None:
            return next(reversed(self._table), None)
        if self.added:
            return next(reversed(self.added))
        if not self.count:
            return None
        try:
            return sum(_differences(self.count, self.packed)[:self.count])
        except ValueError as e:
            self._refuse(e)

    def __contains__(self, step):
        if self._table is None and (step in self.added or step == self.first()):
            return True
        return step in self._whole()

    def __getitem__(self, step):
        return self._whole()[step]

    def __setitem__(self, step, offset):
        if self._table is None:
            self.added[step] = offset
        else:
            self._table[step] = offset

    def __delitem__(self, step):
        del self._whole()[step]

    def __iter__(self):
        return iter(self._whole())

    def __reversed__(self):
        return reversed(self._whole())

    def __len__(self):
        return len(self._whole())

    def __repr__(self):
        return f"CheckpointTable({self._whole()!r})"
