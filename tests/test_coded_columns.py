"""Coded columns (docs/format.md, "Batches", form 3): a column of repeated strings is
written as each distinct string once and an int per value. What the writer codes, that
it loads back the same with either loop implementation, and forged coded columns, each
refused with a FormatError naming the batch; a version 4 file may not hold one."""

import attrs
import msgpack
import pytest

import autosave
from autosave.errors import FormatError
from autosave.format.wire import (CHECKSUM, CODED_MIN, COLUMN_CODED, COLUMN_INLINE, HEAD, MAGIC,
                             VERSION, checksum, decode, frame, msgpack_pack)
from autosave.format.kernels import python_loops

autosave.allow(__name__)


@attrs.define(eq=False)
class Unit:
    name: str
    hp: int


UNIT = [f"{__name__}.Unit", 1, ["name", "hp"]]
DICT = ["builtins.dict", 1, []]


def forged(types, batches, version=VERSION, root=(0,)):
    body = msgpack_pack([types, [], list(root), batches])
    if version == VERSION:
        return frame(body)
    head = HEAD.pack(MAGIC, version, len(body))
    return b"".join((head, CHECKSUM.pack(checksum(head, body)), body))


def raw_batches(data):
    """The batches of a save as written (decode turns coded columns into inline ones)."""
    return msgpack.unpackb(data[21:], raw=False)[3]


def unit_columns(data):
    types = msgpack.unpackb(data[21:], raw=False)[0]
    (batch,) = [b for b in raw_batches(data) if types[b[0]][0] == UNIT[0]]
    return batch[2:]


def both_loops(fn, *args):
    first = fn(*args)
    with python_loops():
        assert fn(*args) == first
    return first


def test_repeated_keys_are_coded_and_load_back():
    docs = [{"item": f"i{i % 7}", "count": i, "tags": ["a", "b"][: i % 3]} for i in range(200)]
    data = both_loops(autosave.dumps, docs)
    assert data[4] == VERSION == 8
    kinds = [column[0] for batch in raw_batches(data) for column in batch[2:]]
    assert COLUMN_CODED in kinds
    for loads in (autosave.loads, lambda d: both_loops(autosave.loads, d)):
        back = loads(data)
        assert back == docs and autosave.dumps(back) == data
    _, _, _, _, _, batches = decode(data)
    assert all(column[0] != COLUMN_CODED for batch in batches for column in batch[2:])


@pytest.mark.parametrize("values, coded", [
    (["a", "b"] * (CODED_MIN // 2), True),
    (["a", "b"] * (CODED_MIN // 2 - 1), False),                 # too few values
    ([f"s{i}" for i in range(CODED_MIN)], False),                 # no repeats
    ([f"s{i % (CODED_MIN // 2)}" for i in range(CODED_MIN)], True),   # exactly half
    ([f"s{i % (CODED_MIN // 2 + 1)}" for i in range(CODED_MIN)], False),
    (["a", "b"] * (CODED_MIN // 2) + [None], False),             # not only strs
    (["a", 1] * CODED_MIN, False),
])
def test_a_column_is_coded_only_when_it_pays(values, coded):
    units = [Unit(v, 1) for v in values]
    data = both_loops(autosave.dumps, units)
    names, hp = unit_columns(data)
    assert hp[0] == COLUMN_INLINE            # ints are never coded
    assert (names[0] == COLUMN_CODED) is coded
    if coded:
        assert names[1] == list(dict.fromkeys(values))
    back = both_loops(lambda d: [(u.name, u.hp) for u in autosave.loads(d)], data)
    assert back == [(v, 1) for v in values]


def test_strings_with_lone_surrogates_and_empty_ones_are_coded_too():
    values = ["", "\ud800x", "é"] * CODED_MIN
    units = [Unit(v, 0) for v in values]
    data = both_loops(autosave.dumps, units)
    assert [u.name for u in autosave.loads(data)] == values


def test_a_forged_coded_column_loads():
    data = forged([UNIT, ["builtins.list", 1, []]],
                  [[0, 3, [3, ["a", "b"], [1, 0, 1]], [0, [1, 2, 3]]],
                   [1, 1, [0, [3]], [1, [0, 1, 1]]]], root=[3])
    units = both_loops(lambda d: [(u.name, u.hp) for u in autosave.loads(d)], data)
    assert units == [("b", 1), ("a", 2), ("b", 3)]


@pytest.mark.parametrize("column, match", [
    ([3, ["a"], [1]], "codes are not ints from 0 to 0"),
    ([3, ["a"], [-1]], "codes are not ints"),
    ([3, ["a"], [True]], "codes are not ints"),
    ([3, ["a"], [0.0]], "codes are not ints"),
    ([3, ["a"], ["0"]], "codes are not ints"),
    ([3, ["a"], [None]], "codes are not ints"),
    ([3, ["a"], [2**64 - 1]], "codes are not ints"),
    ([3, ["a"], [[0]]], "codes are not ints"),
    ([3, [], [0]], "codes are not ints"),
    ([3, [1], [0]], "strings are not all str"),
    ([3, [b"a"], [0]], "strings are not all str"),
    ([3, [None], [0]], "strings are not all str"),
    ([3, [[0]], [0]], "strings are not all str"),          # a reference smuggled in
    ([3, ["a"], [0, 0]], "2 objects, its first column holds|first column holds 2"),
    ([3, ["a"]], "malformed column"),
    ([3, ["a"], [0], [0]], "malformed column"),
    ([3, "a", [0]], "malformed column"),
    ([3, ["a"], b"\x00"], "malformed column"),
])
def test_forged_coded_columns_are_format_errors_naming_the_batch(column, match):
    data = forged([UNIT], [[0, 1, column, [0, [1]]]])
    for load in (autosave.loads, lambda d: both_loops(autosave.loads, d)):
        with pytest.raises(FormatError, match=match) as caught:
            load(data)
        assert "batch 0" in str(caught.value)


def test_a_coded_column_is_checked_where_it_stands():
    """Decoded into the inline column it stands for, it meets that column's checks:
    strings are no lengths, and a dict's keys it codes are inline."""
    lengths = forged([DICT], [[0, 1, [3, ["x"], [0]], [0, ["k"]], [0, [1]]]])
    with pytest.raises(FormatError, match="non-negative ints"):
        autosave.loads(lengths)
    keys = forged([DICT], [[0, 2, [0, [1, 1]], [3, ["k", "j"], [1, 0]], [0, [1, 2]]]])
    assert autosave.loads(keys) == {"j": 1}


def test_a_version_4_file_holding_a_coded_column_is_refused():
    batches = [[0, 1, [3, ["a"], [0]], [0, [1]]]]
    with pytest.raises(FormatError, match="malformed column"):
        autosave.loads(forged([UNIT], batches, version=4))
    inline = [[0, 1, [COLUMN_INLINE, ["a"]], [0, [1]]]]
    assert autosave.loads(forged([UNIT], inline, version=4)).name == "a"


def test_a_huge_code_table_costs_no_more_than_its_bytes():
    """Every string and every code takes at least a byte of the file: a coded column
    describes no more values than an inline one of the same size would."""
    codes = [0] * 100_000
    data = forged([UNIT], [[0, len(codes), [3, ["a"], codes], [0, [1] * len(codes)]]])
    assert len(data) > len(codes)
    assert autosave.loads(data).name == "a"


def test_a_copy_hands_coded_columns_to_the_loader_as_they_are():
    docs = [{"item": f"i{i % 5}", "n": i} for i in range(100)]
    copied = both_loops(autosave.copy, docs)
    assert copied == docs and copied is not docs
