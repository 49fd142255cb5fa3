"""Delta checkpoints (docs/log-format.md, "Checkpoints"): a checkpoint's payload is a
whole save (a zstd frame, or a zlib stream as version 3 wrote) or a Zstandard frame of
the save compressed against the save of the checkpoint before it, the *base*. Restoring a delta rebuilds its chain back to a
whole checkpoint, charging every step to the log's budget, and checks the bytes it
rebuilt against the digest the writer took, so that a restored state's bytes are the
writer's ``autosave.dumps`` exactly.

The compression side (``make_delta``) runs on the log's background thread: it touches
no log state, only the bytes it is given. zstd and xxhash release the GIL.
"""

import struct
from collections.abc import Callable

import xxhash
import zstandard

from ..errors import CorruptLogError
from ..files import loads
from ..checks.limits import (DECODE_MEMORY_PER_BYTE, WORK_PER_BYTE, Budget, OverBudget,
                              file_budget)
from .file import PAYLOAD
from .rebuilt import Rebuilt
from .records import INFLATED_HELD, _inflate, checkpoint_limit, compress_checkpoint

DELTA_TAG = 0x44                                  # "D"; a zlib stream starts with 0x?8
DELTA_HEAD = struct.Struct("<BQQQ")               # tag, base offset, size, xxh64
WHOLE_TAG = 0x5A                                  # "Z": a whole save, one zstd frame
WHOLE_LEVEL = 1          # as small as zlib's level 1, some 5x faster both ways
DELTA_LEVEL = 1          # zstd's fast strategy: patch-from at a fraction of zlib's time
BYTES_PER_STEP = 16      # work charged per byte a delta produces (a step is ~30-50 ns)
MIN_WINDOW_LOG, MAX_WINDOW_LOG = 10, 31


def is_delta(payload: bytes) -> bool:
    return len(payload) > 0 and payload[0] == DELTA_TAG


def make_whole(data: bytes, end: int) -> bytes:
    """The payload of a whole checkpoint of save ``data`` appended at offset ``end`` or
    later: a zstd frame, unless the log would then be too small to inflate it
    (compress_checkpoint's stored zlib blocks, as version 3 wrote)."""
    frame = zstandard.ZstdCompressor(level=WHOLE_LEVEL, write_content_size=True,
                                     write_checksum=True).compress(data)
    if len(data) > checkpoint_limit(end + 1 + len(frame)):
        return compress_checkpoint(data, end)
    return bytes((WHOLE_TAG,)) + frame


def window_log(base_size: int, size: int) -> int:
    """The zstd window that reaches from the end of a save back to its base's start."""
    return min(MAX_WINDOW_LOG, max(MIN_WINDOW_LOG, (base_size + size).bit_length()))


def hash_log(base_size: int) -> int:
    """The match finder's table: an eighth of an entry per byte of base. A smaller one
    forgets most of a large base (measured: a 2.3 MB base needs 2**19 entries, below
    that a delta grows 4-70x); a larger one costs its filling and finds no more
    (measured on a 210 KB base: 2**15 entries make the same deltas as 2**17, in 0.5
    ms instead of 0.7 at 1% change, 0.9 instead of 1.2 at 100%)."""
    return min(24, max(12, base_size.bit_length() - 3))


# A save is compressed in pieces of PIECE bytes, each against the stretch of its base
# around the same place (REACH bytes either side, more when the save grew or shrank):
# zstd finds every match in a base of a few MB, and forgets most of a 25 MB one
# (measured on a 1M-object save: 1.84 MB for one piece, 84 KB in pieces of 4 MB).
PIECE = 4 << 20
REACH = 1 << 20
PIECES = struct.Struct("<I")                      # how many pieces
PIECE_HEAD = struct.Struct("<QQI")                # base start, base length, frame length


def pieces(size: int, base_size: int) -> list[tuple[int, int, int, int]]:
    """[(start, stop, base start, base stop)] of the pieces of a save of ``size``
    bytes against a base of ``base_size``."""
    reach = REACH + abs(base_size - size)
    out = []
    for start in range(0, max(size, 1), PIECE):
        stop = min(size, start + PIECE)
        lo = min(base_size, max(0, start - reach))
        hi = max(lo, min(base_size, stop + reach))
        out.append((start, stop, lo, hi if hi - lo >= MIN_DICT else lo))
    return out


MIN_DICT = 8             # zstd takes no shorter dictionary: such a piece has none


def _dictionary(base, lo: int, hi: int):
    if hi == lo:
        return None
    # a view: the dictionary copies what it needs, a slice would copy it once more
    return zstandard.ZstdCompressionDict(memoryview(base)[lo:hi],
                                         dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def make_delta(data: bytes, base: bytes, base_offset: int) -> bytes:
    """The payload of a delta checkpoint of save ``data`` against save ``base`` (the
    payload of the checkpoint at ``base_offset``)."""
    heads, frames = [], []
    for start, stop, lo, hi in pieces(len(data), len(base)):
        params = zstandard.ZstdCompressionParameters.from_level(
            DELTA_LEVEL, window_log=window_log(hi - lo, stop - start),
            hash_log=hash_log(hi - lo), write_content_size=True)
        frame = zstandard.ZstdCompressor(dict_data=_dictionary(base, lo, hi),
                                         compression_params=params).compress(data[start:stop])
        heads.append(PIECE_HEAD.pack(lo, hi - lo, len(frame)))
        frames.append(frame)
    head = DELTA_HEAD.pack(DELTA_TAG, base_offset, len(data), xxhash.xxh64_intdigest(data))
    return b"".join((head, PIECES.pack(len(heads)), *heads, *frames))


class ChainCost:
    """What restoring a chain takes from a log's budget, charged as it is rebuilt (by a
    reader) or reckoned beforehand (by the writer, on a fresh budget of the log's size
    at the delta's offset, so that whatever it writes a reader can restore)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.peak = 0            # the largest save held so far (the first: inflated)

    def whole(self, size: int) -> None:
        self.peak = size

    def delta(self, size: int, where: str, read: int = 0) -> None:
        """Charge a delta rebuilding ``size`` bytes out of ``read`` bytes of its base
        (its pieces' dictionaries, each copied once)."""
        budget = self.budget
        # Never rebuild bytes that could not be loaded (a delta's only use is the load
        # at the chain's end, or the next delta).
        limit = min(budget.memory // DECODE_MEMORY_PER_BYTE, budget.work // WORK_PER_BYTE)
        if size > limit:
            raise OverBudget(f"{where} rebuilds {size:,} bytes, more than a "
                             f"{budget.size:,}-byte log may hold (docs/security.md, Budgets)")
        grown = max(0, size - self.peak)
        budget.charge(INFLATED_HELD * grown, (size + read) // BYTES_PER_STEP + 1, where)
        self.peak = max(self.peak, size)


def chain_charges(sizes: list[int]) -> tuple[int, int, int]:
    """(memory, work, largest save) that rebuilding a chain of saves of ``sizes`` bytes
    (the whole one first, a zstd frame or zlib stream: charged alike) charges, as
    checkpoint_bytes charges it."""
    cost = ChainCost(Budget(1 << 62))
    memory, work = cost.budget.memory, cost.budget.work
    cost.budget.charge(INFLATED_HELD * sizes[0], 0, "the whole checkpoint")
    cost.whole(sizes[0])
    for base, size in zip(sizes, sizes[1:]):
        cost.delta(size, "a delta", sum(hi - lo for _, _, lo, hi in pieces(size, base)))
    return memory - cost.budget.memory, work - cost.budget.work, cost.peak


def chain_fits(sizes: list[int], log_size: int) -> bool:
    """Whether a chain of saves of ``sizes`` bytes (the whole one first) restores within
    the budget of a log of ``log_size`` bytes: charged as a reader charges it, then the
    last save loaded."""
    cost = ChainCost(Budget(log_size))
    try:
        cost.budget.charge(INFLATED_HELD * sizes[0], 0, "the whole checkpoint")
        cost.whole(sizes[0])
        for base, size in zip(sizes, sizes[1:]):
            read = sum(hi - lo for _, _, lo, hi in pieces(size, base))
            cost.delta(size, "a delta", read)
        cost.budget.decoding(sizes[-1])
    except OverBudget:
        return False
    return True


def _payload(file, offset: int) -> bytes:
    kind, payload = file.read(offset)
    if kind != PAYLOAD:
        raise CorruptLogError(f"{file.path}: the checkpoint at offset {offset} is a "
                              f"record of kind {kind}, not a payload")
    return payload


def _chain(file, offset: int, held: Callable[[int], bool] = lambda at: False
           ) -> list[tuple[int, bytes]]:
    """[(offset, payload)] from the whole checkpoint (or the newest one ``held``, whose
    payload is not read) to the one at ``offset``. Each base lies before its delta, so
    the walk ends; each record is read once."""
    chain = []
    while True:
        if held(offset):
            chain.append((offset, b""))
            return chain[::-1]
        payload = _payload(file, offset)
        chain.append((offset, payload))
        if not is_delta(payload):
            return chain[::-1]
        if len(payload) < DELTA_HEAD.size:
            raise CorruptLogError(f"{file.path}: the delta checkpoint at offset {offset} is "
                                  f"cut short")
        base = DELTA_HEAD.unpack_from(payload)[1]
        if not file.block_size <= base < offset:
            raise CorruptLogError(f"{file.path}: the delta checkpoint at offset {offset} is "
                                  f"taken against offset {base}, not an earlier record")
        offset = base


def _frame_size(path: str, frame, where: str):
    try:
        params = zstandard.get_frame_parameters(frame)
    except zstandard.ZstdError as e:
        raise CorruptLogError(f"{path}: {where} is not a zstd frame ({e})") from None
    return params


def _whole(path: str, offset: int, payload: bytes, budget: Budget) -> bytes:
    """A whole checkpoint's save: a zstd frame (charged as an inflated zlib stream is,
    before it is decompressed, by the size its frame declares) or a zlib stream."""
    if not payload or payload[0] != WHOLE_TAG:
        try:
            return _inflate(path, offset, payload, budget)
        except OverBudget as e:
            raise CorruptLogError(f"{path}: {e}") from None
    where = f"the checkpoint at offset {offset}"
    frame = memoryview(payload)[1:]
    params = _frame_size(path, frame, where)
    size = params.content_size
    limit = min(budget.memory // (INFLATED_HELD + DECODE_MEMORY_PER_BYTE),
                budget.work // WORK_PER_BYTE)
    if not 0 <= size <= limit:
        raise CorruptLogError(f"{path}: {where} inflates to {size:,} bytes; a "
                              f"{budget.size:,}-byte log may hold {limit:,} (docs/security.md, "
                              f"Budgets)")
    window = 1 << max(MIN_WINDOW_LOG, size.bit_length())
    if params.window_size > window:
        raise CorruptLogError(f"{path}: {where} asks a {params.window_size:,}-byte window "
                              f"for {size:,} bytes")
    try:
        budget.charge(INFLATED_HELD * size, 0, where)
    except OverBudget as e:
        raise CorruptLogError(f"{path}: {e}") from None
    try:
        data = zstandard.ZstdDecompressor(max_window_size=window).decompress(
            frame, max_output_size=size)
    except zstandard.ZstdError as e:
        raise CorruptLogError(f"{path}: {where} does not decompress ({e})") from None
    if len(data) != size:
        raise CorruptLogError(f"{path}: {where} decompresses to {len(data)} bytes, not the "
                              f"{size} its frame declares")
    return data


def _pieces_of(path: str, where: str, payload: bytes, base_size: int, size: int):
    """[(base start, base stop, frame, its frame parameters)] of a delta, every length
    checked against the payload, the base and ``size`` before anything is inflated."""
    try:
        (count,) = PIECES.unpack_from(payload, DELTA_HEAD.size)
    except struct.error:
        raise CorruptLogError(f"{path}: {where} is cut short") from None
    at = DELTA_HEAD.size + PIECES.size
    if count > (len(payload) - at) // PIECE_HEAD.size:
        raise CorruptLogError(f"{path}: {where} claims {count} pieces in "
                              f"{len(payload)} bytes")
    out, total = [], 0
    frames = at + count * PIECE_HEAD.size
    for i in range(count):
        lo, length, frame_size = PIECE_HEAD.unpack_from(payload, at + i * PIECE_HEAD.size)
        if lo + length > base_size or frames + frame_size > len(payload):
            raise CorruptLogError(f"{path}: {where}: piece {i} lies outside its base or "
                                  f"the payload")
        frame = memoryview(payload)[frames:frames + frame_size]
        frames += frame_size
        params = _frame_size(path, frame, where)
        if params.content_size < 0:
            raise CorruptLogError(f"{path}: {where}: piece {i} does not declare its size")
        total += params.content_size
        out.append((lo, lo + length, frame, params))
    if frames != len(payload) or total != size:
        raise CorruptLogError(f"{path}: {where} declares {size} bytes, its pieces {total} "
                              f"(in {frames} of its {len(payload)} bytes)")
    return out


def _apply(path: str, offset: int, payload: bytes, base, cost: ChainCost) -> bytes:
    _, _, size, digest = DELTA_HEAD.unpack_from(payload)
    where = f"the delta checkpoint at offset {offset}"
    parts = _pieces_of(path, where, payload, len(base), size)
    try:
        cost.delta(size, where, sum(hi - lo for lo, hi, _, _ in parts))
    except OverBudget as e:
        raise CorruptLogError(f"{path}: {e}") from None
    out = []
    for lo, hi, frame, params in parts:
        window = 1 << window_log(hi - lo, params.content_size)
        if params.window_size > window:
            raise CorruptLogError(f"{path}: {where} asks a {params.window_size:,}-byte "
                                  f"window for {params.content_size:,} bytes against "
                                  f"{hi - lo:,} bytes of its base")
        try:
            out.append(zstandard.ZstdDecompressor(
                dict_data=_dictionary(base, lo, hi), max_window_size=window
            ).decompress(frame, max_output_size=params.content_size))
        except zstandard.ZstdError as e:
            raise CorruptLogError(f"{path}: {where} does not decompress against its base "
                                  f"({e})") from None
    data = out[0] if len(out) == 1 else b"".join(out)     # one piece: no copy
    if len(data) != size or xxhash.xxh64_intdigest(data) != digest:
        raise CorruptLogError(f"{path}: {where} rebuilds bytes other than those it was "
                              f"taken from (its base or its frame is damaged)")
    return data


def checkpoint_bytes(file, offset: int, budget: Budget) -> bytes:
    """The save bytes of the checkpoint at ``offset`` (whole or delta), charged to
    ``budget``, the log's: rebuilt from the newest link of its chain the log's cache
    holds (``file.rebuilt``), charged as a rebuild from the whole checkpoint is."""
    cache: Rebuilt = file.rebuilt
    size = file.size
    chain = _chain(file, offset, lambda at: cache.get(at, size) is not None)
    memory, work = budget.memory, budget.work
    cost = ChainCost(budget)
    start = chain[0][0]
    held = cache.get(start, size)
    if held is not None:
        data, charged_memory, charged_work, cost.peak = held
        try:
            budget.charge(charged_memory, charged_work, f"the checkpoint at offset {start}")
        except OverBudget as e:
            raise CorruptLogError(f"{file.path}: {e}") from None
    else:
        data = _whole(file.path, *chain[0], budget)
        cost.whole(len(data))
        cache.put(start, data, memory - budget.memory, work - budget.work, cost.peak, size)
    for at, payload in chain[1:]:
        data = _apply(file.path, at, payload, data, cost)
        cache.put(at, data, memory - budget.memory, work - budget.work, cost.peak, size)
    return data


def read_checkpoint(file, offset: int) -> bytes:
    """The save bytes of the checkpoint at ``offset``, within the log's budget."""
    try:
        with file_budget(file.size, decoded=False) as budget:
            return checkpoint_bytes(file, offset, budget)
    except OverBudget as e:
        raise CorruptLogError(f"{file.path}: {e}") from None


def load_checkpoint_at(file, offset: int):
    """The state saved in the checkpoint at ``offset``: rebuilt and loaded under one
    budget, the log's (docs/security.md, Budgets)."""
    with file_budget(file.size, decoded=False, shared=True) as budget:
        data = checkpoint_bytes(file, offset, budget)
        try:
            return loads(data)
        except Exception as e:
            e.add_note(f"in the checkpoint at offset {offset} of {file.path}")
            raise
