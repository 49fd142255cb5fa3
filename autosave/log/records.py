"""The checkpoint log's byte layout (docs/log-format.md): header, superblock slots,
record framing into chunks, and the metadata record's envelope."""

import gc
import struct
import zlib

import attrs
import msgpack
import xxhash

from ..errors import CorruptLogError
from ..files import loads
from ..checks.limits import (DECODE_MEMORY_PER_BYTE, WORK_PER_BYTE, Budget, OverBudget,
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


# Checkpoint tables live in tables.py; these names are read from here too.
from .tables import (TABLE, TABLE_MEMORY_PER_BYTE, CheckpointTable, charge_table,  # noqa: E402,F401
                     newest_step, pack_checkpoints, unpack_checkpoints)
