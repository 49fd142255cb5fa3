"""Checkpoint tables: a node record's checkpoints (step -> payload offset) as snapshots
hold them (docs/log-format.md, "Checkpoint tables").

Version 3: a table is [TABLE, count, zlib stream of little-endian int64: the count step
differences, then the count offset differences] (each from the one before, the first
from 0), in step order. Steps go up by one and offsets by a checkpoint's size, so the
stream is a fraction of the 16 bytes per checkpoint of version 2's int64 pairs.

Version 4: a table of many checkpoints is *segmented*: [SEGMENTED, [[count, offset],
...], tail], each segment a payload record holding the stream of SEGMENT checkpoints
(written once, when a snapshot first holds them, and named by every snapshot after),
``tail`` a version 3 table of the rest. A snapshot so holds a few bytes per 4,096
checkpoints, and opening a log reads a bounded amount whatever its history.

Tables are inflated when first used (``CheckpointTable``), never at open.
"""

import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, MutableMapping
from itertools import accumulate, chain, islice
from operator import sub

from ..errors import CorruptLogError
from ..checks.limits import charge

TABLE = "zd"
SEGMENTED = "zs"
SEGMENT = 4096                   # checkpoints per sealed segment
TABLE_MEMORY_PER_BYTE = 12       # a dict entry and two ints per 16 bytes of table


def pack_stream(pairs: Iterable[tuple[int, int]]) -> tuple[int, bytes]:
    """(count, stream) of (step, offset) pairs, in their order (step order, normally:
    differences may be negative)."""
    pairs = list(pairs)
    steps = [s for s, _ in pairs]
    offsets = [o for _, o in pairs]
    diffs = array("q", map(sub, steps, chain((0,), steps)))
    diffs.extend(map(sub, offsets, chain((0,), offsets)))
    if sys.byteorder == "big":
        diffs.byteswap()
    return len(steps), zlib.compress(diffs.tobytes(), 1)


def pack_checkpoints(checkpoints):
    """step -> offset as a version 3 table: read back (and checked) at C speed. A table
    read from a snapshot as one, and not changed since, is given back as it was read."""
    if type(checkpoints) is CheckpointTable and checkpoints.unchanged() and (
            not checkpoints.segments):
        return [TABLE, checkpoints.count, checkpoints.packed]
    return [TABLE, *pack_stream(sorted(checkpoints.items()))]


def pack_row(checkpoints, segments: list, append: Callable[[bytes], int]):
    """A snapshot row's table: the segments already sealed (``segments``, [count,
    offset] each, holding the first checkpoints added), new ones sealed by
    ``append(stream) -> offset`` for every SEGMENT checkpoints past them, and the rest
    as a tail. Returns (the row's table, the segments now sealed)."""
    if type(checkpoints) is CheckpointTable and checkpoints.segments == segments and (
            checkpoints.unchanged()):
        return checkpoints.row(), segments
    # In the order checkpoints were added, which is step order (the log adds them as
    # play goes); a table read back holds its segments first, then its tail. Only the
    # checkpoints past the sealed ones are visited (a snapshot costs no sort of them all).
    sealed = sum(count for count, _ in segments)
    if type(checkpoints) is CheckpointTable and checkpoints.segments == segments and (
            checkpoints._table is None):
        rest = [*checkpoints.tail_items(), *checkpoints.added.items()]
    else:
        rest = list(islice(checkpoints.items(), sealed, None))
    segments = list(segments)
    while len(rest) >= SEGMENT:
        count, stream = pack_stream(rest[:SEGMENT])
        segments.append([count, append(stream)])
        rest = rest[SEGMENT:]
    if not segments:
        return [TABLE, *pack_stream(rest)], segments
    return [SEGMENTED, segments, [TABLE, *pack_stream(rest)]], segments


def charge_table(count, packed):
    """Charge a version 3 table's memory to the log's budget (a small stream may claim
    millions of checkpoints); ValueError if it is not [count, bytes]."""
    if type(count) is not int or count < 0 or type(packed) is not bytes:
        raise ValueError("not [count, bytes]")
    charge(TABLE_MEMORY_PER_BYTE * 16 * count, count, f"a table of {count:,} checkpoints")


def unpack_checkpoints(count, packed):
    """(steps, offsets) of a version 3 table, as iterables; ValueError if it is not one.
    The table's memory is charged to the log's budget before it is inflated (a small
    stream may claim millions of checkpoints)."""
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


def _first(count, packed):
    if not count:
        return None
    try:
        head = zlib.decompressobj().decompress(packed, 8)
    except zlib.error:
        return None
    return int.from_bytes(head, "little", signed=True) if len(head) == 8 else None


def newest_step(checkpoints):
    """The step of a record's newest checkpoint (they are added in step order), or None;
    a table read from a snapshot is not made a dict for it."""
    if type(checkpoints) is CheckpointTable:
        return checkpoints.newest()
    return next(reversed(checkpoints), None)


class CheckpointTable(MutableMapping):
    """A record's checkpoints as a snapshot holds them: the packed table (its segments,
    read from their records, and its tail) is inflated when first needed, not at open,
    so opening a log costs the same whatever its number of checkpoints. Checkpoints
    added meanwhile (the deltas replayed, new steps) are kept beside it, and a table
    not added to is written back into the next snapshot as it was read."""

    __slots__ = ("count", "packed", "segments", "added", "_table", "_read", "_path",
                 "_where", "_rid")

    def __init__(self, count, packed, path, where, rid, segments=(), read=None):
        self.count, self.packed = count, packed      # the tail (version 3: the table)
        self.segments = list(segments)               # [[count, offset], ...]
        self.added = {}
        self._table = None
        self._read = read                            # offset -> a segment's stream
        # for the error, if it is forged: the file, the metadata record, the node record
        self._path, self._where, self._rid = path, where, rid

    def unchanged(self):
        return self._table is None and not self.added

    def row(self):
        tail = [TABLE, self.count, self.packed]
        return [SEGMENTED, self.segments, tail] if self.segments else tail

    def _refuse(self, e):
        raise CorruptLogError(f"{self._path}: metadata record at offset {self._where}: the "
                              f"checkpoints of record {self._rid} are not a table: "
                              f"{e}") from None

    def _segment(self, offset):
        try:
            return self._read(offset)
        except CorruptLogError as e:
            self._refuse(f"its segment at offset {offset}: {e}")

    def _parts(self):
        for count, offset in self.segments:
            yield count, self._segment(offset)
        yield self.count, self.packed

    def tail_items(self):
        try:
            return list(zip(*_unpack(self.count, self.packed)))
        except ValueError as e:
            self._refuse(e)

    def _whole(self):
        if self._table is None:
            table = {}
            try:
                for count, packed in self._parts():
                    table.update(zip(*_unpack(count, packed)))
            except ValueError as e:
                self._refuse(e)
            table.update(self.added)
            self._table, self.added = table, {}
        return self._table

    def first(self):
        """The table's first step (its smallest), read without inflating the rest."""
        if self._table is not None:
            return None
        for count, offset in self.segments[:1]:
            return _first(count, self._segment(offset))
        return _first(self.count, self.packed)

    def newest(self):
        """The newest checkpoint's step (the last added), or None, without a dict made
        of the table."""
        if self._table is not None:
            return next(reversed(self._table), None)
        if self.added:
            return next(reversed(self.added))
        count, packed = self.count, self.packed
        if not count:                           # the last segment holding any
            count, offset = next(((c, o) for c, o in reversed(self.segments) if c), (0, 0))
            if not count:
                return None
            packed = self._segment(offset)
        try:
            return sum(_differences(count, packed)[:count])
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
