"""Format 6's packed masks (docs/format.md, "Batches"): a mixed column's mask holds a bit
per value. What a writer packs, that any mask round-trips, that version 5's byte masks
still load, and forged masks refused with a FormatError naming the batch."""

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.errors import FormatError
from autosave.format.wire import (CHECKSUM, COLUMN_MIXED, HEAD, MAGIC, checksum,
                                  msgpack_pack, packed_mask, unpacked_mask)

LIST = ["builtins.list", 1, []]


def forged(batches, version=6, types=(LIST,)):
    body = msgpack_pack([list(types), [], [0], batches])
    head = HEAD.pack(MAGIC, version, len(body))
    return b"".join((head, CHECKSUM.pack(checksum(head, body)), body))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200).map(lambda b: bytes(x & 1 for x in b)))
def test_any_mask_round_trips_in_the_bytes_it_needs(mask):
    packed = packed_mask(mask)
    assert len(packed) == (len(mask) + 7) // 8
    assert unpacked_mask(packed, len(mask)) == mask
    # bit i of byte i // 8, least significant first
    assert all((packed[i // 8] >> i % 8) & 1 == bit for i, bit in enumerate(mask))


def test_a_writer_packs_mixed_columns_and_a_load_reads_them():
    shared = [1]
    graph = [["a", shared, 2.5, shared, None, [3]] * 5 for _ in range(4)]
    data = autosave.dumps(graph)
    batches = msgpack.unpackb(data[21:], raw=False)[3]
    masks = [c[1] for b in batches for c in b[2:] if c[0] == COLUMN_MIXED]
    assert masks and all(len(m) < 30 for m in masks)      # 120 values: 15 bytes
    back = autosave.loads(data)
    assert back == graph and back[0][1] is back[3][3]


def test_version_5_byte_masks_still_load():
    # lists [1, <object 1>] and [2]: items 1, a reference to object 1, 2
    batches = [[0, 2, [0, [2, 1]], [2, b"\x00\x01\x00", [1, 2], [1]]]]
    assert autosave.loads(forged(batches, version=5)) == [1, [2]]


@pytest.mark.parametrize("mask, match", [
    (b"\x02\x00", "mask has 2 bytes for 3 values"),
    (b"", "mask has 0 bytes for 3 values"),
    (b"\x0a", "bits set past its values"),
    (b"\x03", "batch 0"),            # two references, one given
])
def test_forged_packed_masks_are_format_errors_naming_the_batch(mask, match):
    batches = [[0, 2, [0, [2, 1]], [2, mask, [1, 2], [1]]]]
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged(batches))
    assert autosave.loads(forged([[0, 2, [0, [2, 1]], [2, b"\x02", [1, 2], [1]]]])) \
        == [1, [2]]
