"""Records <-> bytes. The layout is specified in docs/format.md."""

from collections.abc import Callable
from typing import Any

import struct
from itertools import islice

import msgpack
import xxhash

try:
    import msgspec
except ImportError:                # the fast extra is not installed
    msgspec = None                 # type: ignore[assignment]

from . import kernels
from .buffers import OUT_OF_BAND, Incoming, encoder_hook
from .forms import Record
from ..errors import ChecksumError, FormatError, TruncatedSaveError

MAGIC = b"\x89ASV"
VERSION = 8        # 8: batches of small numpy arrays; 7: batches of coroutines; 6: batches of namedtuples; 5: coded columns; 4: batches; 3: ints beyond 64 bits inline (extension 1);
                   # 2: checksummed frame
FRAMED = (2, 3, 4, 5, 6, 7, 8)   # the versions with a length and checksum in their header
# What a checkpoint log starts with (autosave.log.file.MAGIC; the log imports this
# package's files module, so importing it from here would be a cycle).
LOG_MAGIC = b"\x89ASVLOG\n"
HEAD = struct.Struct("<4sBQ")        # magic, version, body length: what the checksum covers
CHECKSUM = struct.Struct("<Q")       # xxh3_64 of HEAD's bytes, then of the body
FRAME_SIZE = HEAD.size + CHECKSUM.size


def checksum(head: bytes | memoryview, body: bytes | memoryview) -> int:
    h = xxhash.xxh3_64(head)
    h.update(body)
    return h.intdigest()


def framed(encode: Callable[[Any], bytes], value: Any) -> bytes:
    """A save's bytes: the header (magic, version, length, checksum), then the body
    ``encode(value)``, made around the encoder's result without copying it where the C
    loops run (a large save, arrays, is written once, by the encoder)."""
    return kernels.framed(encode, value, MAGIC + bytes((VERSION,)), checksum)


def frame(body: bytes) -> bytes:
    """A save's bytes around a body already encoded (``framed``, which copies it)."""
    return framed(bytes, body)


def unframe(data: bytes | bytearray | memoryview) -> tuple[int, bytes | memoryview]:
    """(format version, body) of a save, its frame checked: magic, version, and for
    framed versions the length and checksum, so no corrupt byte reaches the decoder."""
    if isinstance(data, memoryview):
        # read in place (a Dask frame, a Ray buffer): as bytes, one byte per item
        if data.format != "B" or data.ndim != 1:
            data = data.cast("B") if data.c_contiguous else memoryview(bytes(data))
    elif isinstance(data, (bytes, bytearray)):
        data = bytes(data)       # a bytearray copied: its owner could resize it meanwhile
    else:
        raise TypeError(f"autosave.loads() takes bytes, not {type(data).__name__}")
    if data[:len(LOG_MAGIC)] == LOG_MAGIC:
        raise FormatError("this is a checkpoint log, not a save: open it with "
                          "autosave.CheckpointLog.open(path), or look inside with "
                          "`autosave inspect`")
    if data[:len(MAGIC)] != MAGIC:
        raise FormatError("not an autosave file: the magic bytes \\x89ASV are missing"
                          if len(data) >= 4 else f"not an autosave file: only {len(data)} bytes")
    if len(data) == len(MAGIC):
        raise TruncatedSaveError("the save is truncated: it ends after its magic bytes")
    version = data[4]
    if version == 1:                  # no length, no checksum: the body follows
        return 1, memoryview(data)[5:]
    if version not in FRAMED:
        raise FormatError(f"autosave file format version {version} is not supported "
                          f"(this autosave reads versions 1 to {VERSION})")
    if len(data) < FRAME_SIZE:
        raise TruncatedSaveError(f"the save is truncated: {len(data)} bytes, less than "
                                 f"the {FRAME_SIZE}-byte header of format version {version}")
    _, _, length = HEAD.unpack_from(data)
    (stored,) = CHECKSUM.unpack_from(data, HEAD.size)
    body = memoryview(data)[FRAME_SIZE:]
    if len(body) == length:
        if checksum(memoryview(data)[:HEAD.size], body) == stored:
            return version, body
        raise ChecksumError(f"the save is corrupt: its {length:,}-byte body does not match "
                            f"the checksum in its header (the file changed after it was "
                            f"written: a disk, transfer or editing error)")
    # A length that disagrees with the file: say which byte range is to blame.
    if checksum(HEAD.pack(MAGIC, version, len(body)), body) == stored:
        raise ChecksumError(f"the save's header is corrupt: it gives the body length as "
                            f"{length:,} bytes, but the {len(body):,} bytes that follow "
                            f"match its checksum")
    if len(body) < length:
        raise TruncatedSaveError(f"the save is truncated: its header announces a "
                                 f"{length:,}-byte body, only {len(body):,} bytes follow")
    if checksum(memoryview(data)[:HEAD.size], body[:length]) == stored:
        raise FormatError(f"the save has {len(body) - length:,} trailing bytes after its body")
    raise ChecksumError(f"the save is corrupt: its header gives the body length as "
                        f"{length:,} bytes, {len(body):,} follow, and neither matches "
                        f"its checksum")


def encode(types: list[Any], records: list[Record], root_value: Any, batches: Any = (),
           buffer_callback: Callable[[Any], Any] | None = None) -> bytes:
    """A save's bytes. ``buffer_callback``: the records may hold out-of-band markers
    (autosave.format.buffers), each handed to it as the body is written."""
    body = body_of(types, records, root_value, batches)
    if buffer_callback is None:
        return framed(pack, body)
    return framed(lambda value: pack_with_buffers(value, buffer_callback), body)


def body_of(types: list[Any], records: list[Record], root_value: Any,
            batches: Any = ()) -> list[Any]:
    """What a save's body holds for what a walk gives: the batches' mixed columns with
    their masks packed (the one place a mask is)."""
    return [types, records, root_value, [_packed(batch) for batch in batches]]


def pack_with_buffers(value, callback):
    """pack(), the out-of-band markers asked of ``callback`` as the encoder meets them."""
    decided = {}          # an encoding started over keeps the callback's first answers
    if _fast_encode is not None:
        hook = encoder_hook(callback, msgspec.msgpack.Ext, _msgspec_hook, decided)
        try:
            return msgspec.msgpack.Encoder(enc_hook=hook).encode(value)
        except (UnicodeEncodeError, OverflowError):
            pass          # as pack()
    hook = encoder_hook(callback, msgpack.ExtType, _msgpack_default, decided)
    return msgpack.packb(value, use_bin_type=True, unicode_errors="surrogatepass",
                         default=hook)


def pack(value: Any) -> bytes:
    """The msgpack bytes of a body or any part of one: the one place values are encoded.

    msgspec writes them when it is installed (the ``fast`` extra), msgpack otherwise and
    for the bodies msgspec will not write (one holding a str with a lone surrogate or an
    int beyond 64 bits): both write the same bytes, which the tests check."""
    if _fast_encode is not None:
        try:
            return _fast_encode(value)
        except (UnicodeEncodeError, OverflowError):
            pass    # a str with a lone surrogate, an int beyond 64 bits: msgpack writes them
    return msgpack_pack(value)


def msgpack_pack(value: Any) -> bytes:
    """pack() by msgpack alone: the reference encoding, and the one used without msgspec."""
    return msgpack.packb(value, use_bin_type=True, unicode_errors="surrogatepass",
                         default=_msgpack_default)


INT_MIN, INT_END = -(1 << 63), 1 << 64     # what msgpack writes as an int


def _msgpack_default(value):
    """msgpack's hook for what it cannot write itself: of what records hold, the unset-slot
    marker and an int beyond 64 bits, written inline as extension 1 (so a walk never has
    to be redone to box it)."""
    if value is ABSENT:
        return _ABSENT_EXT
    if value.__class__ is not int:
        raise TypeError(f"a record holds a {type(value).__name__}")
    return msgpack.ExtType(WIDE_INT, value.to_bytes((value.bit_length() + 8) // 8,
                                                    "little", signed=True))


def _msgspec_hook(value):
    """msgspec's hook for what it cannot write itself: of what records hold, only the
    unset-slot marker (it raises OverflowError for a wide int, without asking)."""
    if value is ABSENT:
        return _ABSENT_MSGSPEC_EXT
    raise TypeError(f"a record holds a {type(value).__name__}")


if msgspec is not None:           # one encoder for every thread: msgspec's are thread-safe
    _ABSENT_MSGSPEC_EXT = msgspec.msgpack.Ext(0, b"")
    _fast_encode = msgspec.msgpack.Encoder(enc_hook=_msgspec_hook).encode
else:
    _fast_encode = None


def _reject_map(pairs):
    raise FormatError("the save body holds a msgpack map; autosave files never do")


class _Absent:
    """The type of ABSENT, the unset-slot marker: one instance, written as ext 0, empty.
    Not a tuple (as msgpack's ExtType is), which an encoder would write as an array."""
    __slots__ = ()

    def __repr__(self):
        return "autosave.format.wire.ABSENT"

    def __reduce__(self):            # pickle and copy give back the one marker
        return "ABSENT"


ABSENT = _Absent()                 # an unset slot
_ABSENT_EXT = msgpack.ExtType(0, b"")
# The exact types a value position holds as themselves; anything else is a record.
INLINE_TYPES = frozenset((type(None), bool, int, float, str, bytes))
WIDE_INT = 1                       # extension code of an int beyond 64 bits
STATE_FIELDS = ("__getstate__",)   # the type-table fields of a class saved by __getstate__
# How a batch's column holds its values (docs/format.md, "Batches").
COLUMN_INLINE, COLUMN_REFS, COLUMN_MIXED, COLUMN_CODED = 0, 1, 2, 3
COLUMN_KINDS = (COLUMN_INLINE, COLUMN_REFS, COLUMN_MIXED)    # what a reader hands on
CODED_MIN = 32     # a column of strings is coded from this many values (docs/format.md)
_TO_DIGITS = bytes.maketrans(b"\x00\x01", b"01")
_FROM_DIGITS = bytes.maketrans(b"01", b"\x00\x01")


def packed_mask(mask: bytes) -> bytes:
    """A mixed column's mask as a file holds it (version 6): bit i (of byte i // 8,
    least significant first) for value i, 1 for a reference. Binary digits to an int
    and back are linear in CPython: no loop per value."""
    if not mask:
        return b""
    return int(mask.translate(_TO_DIGITS)[::-1], 2).to_bytes((len(mask) + 7) // 8, "little")


def _packed(batch: list[Any]) -> list[Any]:
    """The batch as a file holds it: its mixed columns' masks packed (a new list: the
    caller's batch is left as it was)."""
    if not any(column[0] == COLUMN_MIXED for column in islice(batch, 2, None)):
        return batch
    return [*batch[:2], *(column if column[0] != COLUMN_MIXED else
                          [COLUMN_MIXED, packed_mask(column[1]), *column[2:]]
                          for column in islice(batch, 2, None))]


def unpacked_mask(packed: bytes, n: int) -> bytes:
    """The mask, a byte per value, of a mixed column of n values whose file holds it
    packed; a FormatError unless it has exactly the bytes n values need and no bit set
    past them (one encoding per mask)."""
    if len(packed) != (n + 7) // 8:
        raise FormatError(f"a mixed column's mask has {len(packed)} bytes for {n} values")
    bits = int.from_bytes(packed, "little")
    if bits >> n:
        raise FormatError("a mixed column's mask has bits set past its values")
    if not n:
        return b""
    return format(bits, "b").zfill(n)[::-1].encode("ascii").translate(_FROM_DIGITS)


def inline_column(values: list[Any]) -> Any:
    """The column of inline values as a body holds it: coded (each distinct string
    once, then an int per value) when every value is a str, there are at least
    CODED_MIN, at most half as many distinct ones and at most three quarters of
    CODED_MIN among CODED_MIN of them spread evenly
    (``values[::len // CODED_MIN][:CODED_MIN]``); else as they are."""
    # CODED_MIN values spread evenly over the column tell a column of names (all
    # distinct: not worth a pass) from one of keys, so a column that will not be coded
    # costs next to nothing
    if len(values) >= CODED_MIN and values[0].__class__ is str and 4 * len(
            set(values[::len(values) // CODED_MIN][:CODED_MIN])) <= 3 * CODED_MIN:
        try:
            coded = kernels.code_strings(values, len(values) // 2)
        except TypeError:                  # not only strs
            return [COLUMN_INLINE, values]
        if coded is not None:
            return [COLUMN_CODED, *coded]
    return [COLUMN_INLINE, values]


def decoded_column(column: Any) -> Any:
    """A coded column as the inline column it stands for; a FormatError unless its
    strings are strs and its codes ints inside them. (A file's are decoded by
    ``check_batches``; ``autosave.copy`` hands the walk's columns to the loader as they
    are, coded ones included.)"""
    strings, codes = column[1], column[2]
    try:
        return [COLUMN_INLINE, kernels.decode_codes(strings, codes)]
    except TypeError:
        raise FormatError("a coded column's strings are not all str") from None
    except ValueError:
        raise FormatError(f"a coded column's codes are not ints from 0 to "
                          f"{len(strings) - 1}") from None


def _decoded(b, column):
    try:
        return decoded_column(column)
    except FormatError as e:
        raise FormatError(f"batch {b} has {str(e)[0].lower()}{str(e)[1:]}") from None


class _ExtHook:
    """Decodes the two extensions autosave writes: the unset-slot marker, counted so the
    loader can check each one stood in a slot field, and (format 3) wide ints, each in
    its one canonical form so that a save re-saved gives the same bytes."""

    def __init__(self, version, buffers=None):
        self.unset = 0
        self.wide_ints = version >= 3
        self.buffers = Incoming(buffers)

    def __call__(self, code, data):
        if code == 0 and data == b"":
            self.unset += 1
            return ABSENT
        if code == OUT_OF_BAND:
            return self.buffers.take(data)
        if code == WIDE_INT and self.wide_ints:
            value = int.from_bytes(data, "little", signed=True)
            if INT_MIN <= value < INT_END or len(data) != (value.bit_length() + 8) // 8:
                raise FormatError(f"the save body holds a wide int of {len(data)} bytes "
                                  f"not in its canonical form")
            return value
        raise FormatError(f"the save body holds msgpack extension type {code}")


def decode(data: bytes | bytearray | memoryview, buffers: Any = None) -> tuple:
    """bytes -> (types, records, root value, unset-slot markers, cycle marks), checked.

    Type indices come back normalised; ``closes_cycle[i]`` is 1 for records the writer
    marked as referring to a later record. ``buffers``: the out-of-band buffers given
    (flat byte views), which ext 2 values become (``buffers.BufferRef``)."""
    version, body = unframe(data)
    ext_hook = _ExtHook(version, buffers)
    try:
        # msgpack bounds every length by the input size before allocating it.
        body = msgpack.unpackb(body, raw=False, use_list=True,
                               unicode_errors="surrogatepass", strict_map_key=True,
                               object_pairs_hook=_reject_map, ext_hook=ext_hook)
    except FormatError:
        raise
    except msgpack.ExtraData:
        raise FormatError("the save has trailing bytes after its body") from None
    except (ValueError, msgpack.UnpackException, TypeError, OverflowError) as e:
        raise FormatError(f"the save body is not valid msgpack (truncated or corrupt): {e}") from None
    if version < 4:
        if type(body) is not list or len(body) != 3:
            raise FormatError("the save body must be [types, records, root]")
        types, records, root = body
        batches = []
    else:
        if type(body) is not list or len(body) != 4:
            raise FormatError("the save body must be [types, records, root, batches]")
        types, records, root, batches = body
        if type(batches) is not list:
            raise FormatError("the save's batches must be an array")
    if type(types) is not list or type(records) is not list:
        raise FormatError("the save's type table and records must be arrays")
    ntypes = len(types)
    closes_cycle = bytearray(len(records))
    for i, rec in enumerate(records):
        if type(rec) is not list or not rec or type(rec[0]) is not int:
            raise FormatError(f"record {i} is malformed: a record is an array starting "
                              f"with its type index")
        t = rec[0]
        if t < 0:                    # ~t: the record refers to a later record
            t = rec[0] = ~t
            closes_cycle[i] = 1
        if t >= ntypes:
            raise FormatError(f"record {i} names type {t}, the type table has {ntypes}")
    check_batches(batches, ntypes, data.nbytes if isinstance(data, memoryview) else len(data),
                  coded=version >= 5, packed=version >= 6)
    if version < 8 and batches:
        for b, batch in enumerate(batches):
            entry = types[batch[0]]
            if array_entry(entry) or (version < 7 and (coroutine_entry(entry)
                                                       or iterator_entry(entry))):
                raise FormatError(f"batch {b} holds {entry[0]} objects, which format "
                                  f"version {version} writes as records (batches of "
                                  f"coroutines and loop iterators are version 7's, of "
                                  f"numpy arrays version 8's)")
    ext_hook.buffers.check(types, records, batches)
    return types, records, root, ext_hook.unset, closes_cycle, batches


def check_batches(batches: Any, ntypes: int, size: int, coded: bool = True,
                  packed: bool = True) -> None:
    """The shape of every batch: [type index, count, [kind, values]...] (what each
    column must hold is the loader's to check, with the type's fields), and its count
    bounded by what the bytes hold, before anything is allocated for it: the first
    column holds one value per object, and batches with no column (classes with no
    saved field) hold no more objects, together, than the save has bytes. Coded columns
    (``coded``: the version has them) are turned into the inline columns they stand
    for, and packed masks (``packed``) into a byte per value, here, so no other reader
    meets either."""
    empty = 0
    for b, batch in enumerate(batches):
        if (type(batch) is not list or len(batch) < 2 or type(batch[0]) is not int
                or type(batch[1]) is not int):
            raise FormatError(f"batch {b} is malformed: a batch is an array [type index, "
                              f"count, columns...]")
        if not 0 <= batch[0] < ntypes:
            raise FormatError(f"batch {b} names type {batch[0]}, the type table has {ntypes}")
        if batch[1] < 1:
            raise FormatError(f"batch {b} holds {batch[1]} objects; a batch holds at least one")
        for c, column in enumerate(islice(batch, 2, None), 2):
            if (column.__class__ is list and len(column) == 2
                    and column[0].__class__ is int and column[1].__class__ is list
                    and (column[0] == COLUMN_INLINE or column[0] == COLUMN_REFS)):
                continue             # the common columns, well formed: nothing to turn
            if coded and type(column) is list and len(column) == 3 \
                    and type(column[0]) is int and column[0] == COLUMN_CODED \
                    and type(column[1]) is list \
                    and type(column[2]) is list:
                column = batch[c] = _decoded(b, column)
            if type(column) is not list or not column or type(column[0]) is not int or not (
                    len(column) == 2 and column[0] in (COLUMN_INLINE, COLUMN_REFS)
                    and type(column[1]) is list
                    or len(column) == 4 and column[0] == COLUMN_MIXED
                    and type(column[1]) is bytes and type(column[2]) is list
                    and type(column[3]) is list):
                raise FormatError(f"batch {b} has a malformed column: a column is an "
                                  f"array [0 or 1, [values]], [2, mask, [values], "
                                  f"[index differences]]"
                                  + (" or [3, [strings], [codes]]" if coded else ""))
            if packed and column[0] == COLUMN_MIXED:
                mask: Any = column[1]       # a bytes, checked above
                try:
                    column[1] = unpacked_mask(mask, len(column[2]) + len(column[3]))
                except FormatError as e:
                    raise FormatError(f"batch {b}: {e}") from None
        if len(batch) > 2:
            if len(batch[2][1]) != batch[1]:
                raise FormatError(f"batch {b} declares {batch[1]} objects, its first column "
                                  f"holds {len(batch[2][1])}")
        else:
            empty += batch[1]
            if empty > size:
                raise FormatError(f"batch {b}: its batches without columns declare more "
                                  f"objects than the save has bytes")


# Adapter types whose objects version 7 writes in batches, a row being the record's
# payload (autosave/model/adapters/iterators.py)
ITERATOR_BATCHES = ("builtins.list_iterator", "builtins.list_reverseiterator",
                    "builtins.range_iterator")


def iterator_entry(entry: Any) -> bool:
    return type(entry) is list and len(entry) == 3 and entry[0] in ITERATOR_BATCHES


def array_entry(entry: Any) -> bool:
    """Whether a type entry is a batch of small numpy arrays' or scalars'
    (``numpy.ndarray`` with fields ``[descr, ndim]``, ``numpy.scalar`` with fields
    ``[descr]``; version 8)."""
    return type(entry) is list and len(entry) == 3 and entry[0] in NUMPY_BATCHES \
        and type(entry[2]) is list and len(entry[2]) > 0


NUMPY_BATCHES = ("numpy.ndarray", "numpy.scalar")


def coroutine_entry(entry: Any) -> bool:
    """Whether a type entry is a batch of coroutines' (``autosave.coroutine`` with
    names; one without names may be either, and its batches are coroutines too)."""
    return type(entry) is list and len(entry) == 3 and entry[0] == "autosave.coroutine"


def merge_mixed(mask: Any, inline: list[Any], refs: list[Any]) -> list[Any]:
    """A mixed column's values in order: for each mask byte, the next inline value (0)
    or the next reference (1); a mask that does not match them is a FormatError."""
    try:
        return kernels.merge_mixed(mask, inline, refs)
    except ValueError:
        raise FormatError("a mixed column's mask does not match its values") from None


def check_lengths(lengths: Any, count: int, what: str) -> None:
    """The lengths column of a batch of lists, tuples or dicts: non-negative ints that
    add up to ``count``, the entries the next column holds."""
    if not kernels.kinds(lengths) <= {int} or (lengths and min(lengths) < 0):
        raise FormatError(f"the {what}' lengths must be non-negative ints")
    if sum(lengths) != count:
        raise FormatError(f"the {what}' lengths add up to {sum(lengths)}, the column "
                          f"holds {count}")


def type_entry(index: int, entry: Any) -> list[Any]:
    """(name, version, fields) of a type-table entry, or a FormatError naming it."""
    if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str
            or type(entry[1]) is not int or type(entry[2]) is not list
            or not all(type(f) is str for f in entry[2])):
        raise FormatError(f"type entry {index} is malformed: it must be [name, version, "
                          f"[field names]]")
    return entry
