"""Small numpy arrays in batches (format 8; docs/format.md, "Batches"): round trips of
generated arrays, the bytes of every engine, the version 7 files that still load, and
forged batches refused before anything is allocated."""

import struct
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
from hypothesis.extra import numpy as hnp  # noqa: E402  (needs numpy)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave import FormatError
from autosave.errors import SaveError
from autosave.format import wire
from autosave.format.expand import records_of
from autosave.format.forms import target
from autosave.format.kernels import python_loops
from autosave.format.wire import COLUMN_INLINE, COLUMN_REFS, FRAME_SIZE, HEAD, decode
from autosave.model.adapters.numpy import IN_PLACE_MIN
from autosave.saving.saver import Saver

from numpy_v7_sample import state as v7_state

V7 = Path(__file__).parent / "data" / "format7" / "arrays.sav"

PLAIN = ["<f8", ">f8", "<f4", "<i8", ">i4", "<i2", "|i1", "<u4", "|u1", "|b1", "<c16",
         ">c8", "<M8[s]", ">m8[ms]", "|S5", "<U3", ">U2", "|V4", "<f2"]


def same(a, b):
    """b is a as a load must give it: dtype, shape, bytes, order, writeability."""
    assert type(b) is np.ndarray
    assert b.dtype == a.dtype and b.dtype.str == a.dtype.str and b.shape == a.shape
    assert b.tobytes("A") == a.tobytes("A")
    assert b.flags.writeable == a.flags.writeable
    if a.ndim > 1 and a.size > 1 and a.flags.f_contiguous and not a.flags.c_contiguous:
        assert b.flags.f_contiguous
    if a.base is None:
        assert b.base is None and b.flags.owndata     # each its own memory


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(PLAIN)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    # any bit pattern (NaN payloads, bools other than 0 and 1): loads copy bytes
    size = int(np.prod(shape)) * dtype.itemsize
    raw = draw(st.binary(min_size=size, max_size=size))
    arr = np.frombuffer(raw, dtype).reshape(shape).copy()
    if draw(st.booleans()) and arr.ndim > 1:
        arr = np.asfortranarray(arr)
    if draw(st.integers(0, 5)) == 0:
        arr.flags.writeable = False
    return arr


@st.composite
def scenes(draw):
    """Arrays in lists, dicts and objects, some shared, some viewed."""
    arrs = draw(st.lists(arrays(), min_size=1, max_size=12))
    picks = draw(st.lists(st.integers(0, len(arrs) - 1), max_size=6))
    views = {f"v{k}": arrs[k].reshape(-1)[1:] for k in picks
             if arrs[k].flags.c_contiguous and arrs[k].size > 1}
    return {"arrays": arrs, "again": [arrs[k] for k in picks], "nested": {"t": tuple(arrs)},
            **views}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_generated_arrays_round_trip_in_batches(scene):
    data = autosave.dumps(scene)
    types, _, _, _, _, batches = decode(data)
    assert any(wire.array_entry(types[b[0]]) for b in batches)
    out = autosave.loads(data)
    for a, b in zip(scene["arrays"], out["arrays"]):
        same(a, b)
    # shared arrays stay shared, views stay views of them
    ids = {id(a): b for a, b in zip(scene["arrays"], out["arrays"])}
    for a, b in zip(scene["again"], out["again"]):
        assert b is ids[id(a)]
    assert all(x is y for x, y in zip(out["nested"]["t"], out["arrays"]))
    for key in scene.keys() - {"arrays", "again", "nested"}:
        assert np.shares_memory(out[key], ids[id(scene[key].base)])
        assert out[key].tobytes() == scene[key].tobytes()
    # the loaded state saves to the same bytes; writeable arrays are still writeable
    assert autosave.dumps(out) == data
    for b in out["arrays"]:
        if b.flags.writeable and b.size:
            b.reshape(-1)[0] = b.reshape(-1)[-1]


@settings(max_examples=40, deadline=None)
@given(scenes())
def test_c_and_python_loops_and_reflection_write_the_same_bytes(scene):
    data = autosave.dumps(scene)
    with python_loops():
        assert autosave.dumps(scene) == data
        assert wire.frame(wire.msgpack_pack(wire.body_of(
            *Saver(generated=False).run(scene)))) == data
    with python_loops():
        out = autosave.loads(data)
    for a, b in zip(scene["arrays"], out["arrays"]):
        same(a, b)


def test_which_arrays_go_in_batches():
    small = np.arange(10.0)
    big = np.zeros(IN_PLACE_MIN // 8)
    structured = np.zeros(3, dtype=[("x", "<f4")])
    objects = np.array([1, "a"], dtype=object)
    view = small[2:5]
    meta = np.zeros(2, dtype=np.dtype("f8", metadata={"m": 1}))
    state = [small, big, structured, objects, view, np.float64(2.0)]
    types, records, _, _, _, batches = decode(autosave.dumps(state))
    entries = [types[b[0]] for b in batches if wire.array_entry(types[b[0]])]
    assert entries == [["numpy.ndarray", 1, ["<f8", "1"]], ["numpy.scalar", 1, ["<f8"]]]
    assert [b[1] for b in batches if wire.array_entry(types[b[0]])] == [1, 1]
    named = [types[r[0]][0] for r in records]
    assert named.count("numpy.ndarray") == 2          # the big and the structured one
    assert "numpy.view" in named and "numpy.object_array" in named
    with pytest.raises(SaveError, match="metadata"):
        autosave.dumps(meta)


def test_a_batch_is_one_entry_per_descr_and_ndim():
    state = [np.zeros(2), np.zeros(3), np.zeros((2, 2)), np.zeros(2, dtype=">f8"),
             np.zeros(2, dtype="<i4")]
    types, _, _, _, _, batches = decode(autosave.dumps(state))
    got = [(types[b[0]][2], b[1]) for b in batches if wire.array_entry(types[b[0]])]
    assert got == [(["<f8", "1"], 2), (["<f8", "2"], 1), ([">f8", "1"], 1),
                   (["<i4", "1"], 1)]


def test_version_7_saves_still_load():
    data = V7.read_bytes()
    assert data[4] == 7
    out, expected = autosave.loads(data), v7_state()
    for key, value in expected.items():
        got = out[key]
        if isinstance(value, list):
            for a, b in zip(value, got):
                same(a, b)
        elif key == "view":
            assert np.shares_memory(got, out["ints"]) and got.tobytes() == value.tobytes()
        else:
            same(value, got)
    # saved again: version 8, small arrays in batches, the same state
    again = autosave.dumps(out)
    assert again[4] == wire.VERSION == 8
    types, _, _, _, _, batches = decode(again)
    assert any(wire.array_entry(types[b[0]]) for b in batches)
    assert autosave.dumps(autosave.loads(again)) == again


def _with_version(data, version):
    """data under another version byte, its checksum made again."""
    head = HEAD.pack(wire.MAGIC, version, len(data) - FRAME_SIZE)
    body = data[FRAME_SIZE:]
    return head + struct.pack("<Q", wire.checksum(head, body)) + body


def test_a_version_7_file_holding_an_array_batch_is_refused():
    data = autosave.dumps([np.arange(3.0)])
    assert autosave.loads(_with_version(data, 8))[0].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(FormatError, match="version 8"):
        autosave.loads(_with_version(data, 7))


def test_records_of_expands_array_batches_into_their_records():
    state = {"a": np.arange(6, dtype="<i2").reshape(2, 3).copy(), "b": np.asfortranarray(
        np.ones((2, 2))), "c": np.array(3.5), "d": np.zeros(0, dtype=">u4")}
    state["c"].flags.writeable = False
    types, records, root = records_of(autosave.dumps(state))
    # the root still names the dict, the dtype records placed after every other
    assert types[records[target(root[0], len(records))][0]][0] == "builtins.dict"
    dtypes = {i: rec[1] for i, rec in enumerate(records) if types[rec[0]][0] == "numpy.dtype"}
    arrays = [rec for rec in records if types[rec[0]] == ["numpy.ndarray", 1, []]]
    assert len(arrays) == 4 and not any(wire.array_entry(t) for t in types)
    rebuilt = []
    for _, dtype, flags, data, *shape in arrays:
        arr = np.ndarray(shape, np.dtype(dtypes[dtype[0]]), data,
                         order="F" if flags & 1 else "C")
        rebuilt.append((arr.tobytes("A"), arr.dtype.str, arr.shape, flags))
    expected = [(a.tobytes("A"), a.dtype.str, a.shape,
                 (1 if a.flags.f_contiguous and not a.flags.c_contiguous else 0)
                 | (0 if a.flags.writeable else 2)) for a in state.values()]
    assert sorted(rebuilt) == sorted(expected)


def test_autosave_dump_shows_the_arrays_as_records(tmp_path, capsys):
    from autosave.cli import main
    path = tmp_path / "s.sav"
    path.write_bytes(autosave.dumps({"pos": np.arange(3.0)}))
    main(["dump", str(path)])
    out = capsys.readouterr().out
    assert "numpy.ndarray" in out and "numpy.dtype" in out


# -- forged batches ----------------------------------------------------------------------

def forged(entry_fields, columns, n=None, extra_types=()):
    """A save whose root is object 0 of one numpy.ndarray batch."""
    n = len(columns[0][1]) if n is None and columns else (n or 1)
    types = [["numpy.ndarray", 1, list(entry_fields)], *extra_types]
    return wire.encode(types, [], [0], [[0, n, *columns]])


def good(n=2):
    return [[COLUMN_INLINE, [0] * n], [COLUMN_INLINE, [b"\x00" * 16] * n],
            [COLUMN_INLINE, [2] * n]]


def test_a_forged_batch_loads_when_it_is_what_a_writer_writes():
    out = autosave.loads(forged(["<f8", "1"], good()))
    assert out.tolist() == [0.0, 0.0] and out.flags.owndata and out.flags.writeable


@pytest.mark.parametrize("fields, columns, match", [
    (["<f8", "1"], good()[:2], "columns"),
    (["<f8", "1"], good() + [[COLUMN_INLINE, [1, 1]]], "columns"),
    (["<f8"], good(), "descr and its number"),
    (["<f8", "33"], good(), "descr and its number"),
    (["<f8", "01"], good(), "descr and its number"),
    (["<f8", "-1"], good(), "descr and its number"),
    (["|O", "1"], good(), "plain"),
    (["|O8", "1"], good(), "plain"),
    (["<i4,<f8", "1"], good(), "plain"),
    (["(2,)<i4", "1"], good(), "plain"),
    (["|V0", "1"], good(), "plain"),
    (["<f8", "1"], [[0, [0, 0]], [0, [b"\x00" * 15] * 2], [0, [2, 2]]], "holds 15 bytes"),
    (["<f8", "1"], [[0, [0, 0]], [0, [b"\x00" * 16] * 2], [0, [2, 3]]], "holds 16 bytes"),
    (["<f8", "1"], [[0, [0, 4]], [0, [b"\x00" * 16] * 2], [0, [2, 2]]], "flags"),
    (["<f8", "1"], [[0, [0, -1]], [0, [b"\x00" * 16] * 2], [0, [2, 2]]], "flags"),
    (["<f8", "1"], [[0, [0, 0.0]], [0, [b"\x00" * 16] * 2], [0, [2, 2]]], "flags"),
    (["<f8", "1"], [[0, [0, 0]], [0, [b"\x00" * 16, "x"]], [0, [2, 2]]], "bins"),
    (["<f8", "1"], [[0, [0, 0]], [0, [b"\x00" * 16] * 2], [0, [2, -2]]], "ints >= 0"),
    (["<f8", "1"], [[0, [0, 0]], [0, [b"\x00" * 16] * 2], [0, [2, 2.0]]], "ints >= 0"),
    (["<f8", "2"], [[0, [0]], [0, [b""]], [0, [0]], [0, [1 << 62]]], "numpy"),
    (["<f8", "2"], [[0, [0]], [0, [b""]], [0, [1 << 63]], [0, [0]]], "numpy"),
    (["<f8", "1"], [[0, [0, 0]], [COLUMN_REFS, [0, 0]], [0, [2, 2]]], "inline bins"),
    (["<f8", "1"], [[COLUMN_REFS, [0, 0]], [0, [b"\x00" * 16] * 2], [0, [2, 2]]],
     "inline values"),
])
def test_forged_batches_are_refused(fields, columns, match):
    with pytest.raises(FormatError, match=match):
        autosave.loads(forged(fields, columns))


def test_a_record_naming_a_batch_entry_is_refused():
    types = [["numpy.ndarray", 1, ["<f8", "1"]]]
    data = wire.encode(types, [[0, 0, b"\x00" * 8, 1]], [0])
    with pytest.raises(FormatError, match="type entry of a batch"):
        autosave.loads(data)


values = st.one_of(st.integers(-2, 1 << 64), st.binary(max_size=40), st.none(),
                   st.floats(allow_nan=False), st.text(max_size=3), st.booleans())


@st.composite
def forged_batches(draw):
    fields = draw(st.one_of(
        st.tuples(st.sampled_from(PLAIN + ["|O", "<i4,<f8", "(2,)i4", "|V0", "x", ""]),
                  st.sampled_from(["0", "1", "2", "3", "33", "01", "a"])).map(list),
        st.lists(st.text(max_size=4), max_size=3)))
    n = draw(st.integers(1, 4))
    ncolumns = draw(st.integers(0, 6))
    columns = []
    for c in range(ncolumns):
        kind = draw(st.sampled_from([COLUMN_INLINE] * 4 + [COLUMN_REFS]))
        size = draw(st.sampled_from([n, n, n, n + 1, max(n - 1, 0)]))
        if kind == COLUMN_REFS:
            columns.append([kind, [0] * size])
        elif c == 1:
            columns.append([kind, draw(st.lists(st.binary(max_size=48), min_size=size,
                                                max_size=size))])
        elif draw(st.booleans()):
            columns.append([kind, draw(st.lists(st.integers(-1, 6), min_size=size,
                                                max_size=size))])
        else:
            columns.append([kind, draw(st.lists(values, min_size=size, max_size=size))])
    return fields, columns, n


@settings(max_examples=300, deadline=None)
@given(forged_batches())
def test_generated_forged_batches_load_or_raise_format_error(batch):
    fields, columns, n = batch
    try:
        data = forged(fields, columns, n)
    except Exception:
        return                          # not even encodable (an int beyond 64 bits)
    try:
        out = autosave.loads(data)
    except FormatError:
        return
    # what loads is what the batch says: an array of the entry's dtype, its bytes given
    assert type(out) is np.ndarray and out.dtype.str.lstrip("<>|=") and out.flags.owndata
    assert out.nbytes == len(columns[1][1][0])


def test_diff_and_compat_verify_read_array_batches(tmp_path):
    from autosave.compat.diff import diff
    from autosave.compat.verify import OK, verify_file
    a = {"pos": [np.arange(3.0), np.zeros((2, 2), dtype="<i4")]}
    b = {"pos": [np.arange(3.0), np.ones((2, 2), dtype="<i4")]}
    data_a, data_b = autosave.dumps(a), autosave.dumps(b)
    assert not diff(data_a, data_a).total_changes
    changed = diff(data_a, data_b)
    assert changed.total_changes >= 1
    path = tmp_path / "a.sav"
    path.write_bytes(data_a)
    assert verify_file(str(path)).status == OK
    # the version 7 sample, and its state saved again, are as valid
    assert verify_file(str(V7)).status == OK


@settings(max_examples=30, deadline=None)
@given(scenes())
def test_autosave_copy_of_array_batches(scene):
    """copy hands the walk's columns to the loader as they are: the arrays are new,
    each its own memory."""
    out = autosave.copy(scene)
    for a, b in zip(scene["arrays"], out["arrays"]):
        same(a, b)
        assert not np.shares_memory(a, b) or not a.size


@pytest.mark.parametrize("join", [1, 40, 1 << 20])
def test_a_batch_joined_in_parts_gives_the_same_arrays(monkeypatch, join):
    from autosave.model.adapters import numpy_batches
    monkeypatch.setattr(numpy_batches, "JOIN_BYTES", join)
    state = [np.arange(k, k + 3.0) for k in range(25)]
    out = autosave.loads(autosave.dumps(state))
    for a, b in zip(state, out):
        same(a, b)
    assert len({id(b) for b in out}) == 25


# -- scalars ---------------------------------------------------------------------------

@st.composite
def scalars(draw):
    dtype = np.dtype(draw(st.sampled_from(PLAIN))).newbyteorder("=")
    raw = draw(st.binary(min_size=dtype.itemsize, max_size=dtype.itemsize))
    return np.frombuffer(raw, dtype)[0].copy()


def same_scalar(a, b):
    assert type(b) is type(a) and b.dtype == a.dtype and b.tobytes() == a.tobytes()


@settings(max_examples=80, deadline=None)
@given(st.lists(scalars(), min_size=1, max_size=20), st.lists(st.integers(0, 19)))
def test_generated_scalars_round_trip_in_batches(items, picks):
    state = {"items": items, "again": [items[k % len(items)] for k in picks],
             "keys": {k: i for i, k in enumerate(items)
                      if k.dtype.kind != "V" and bool(k == k)}}     # hashable, not NaN
    data = autosave.dumps(state)
    types, _, _, _, _, batches = decode(data)
    assert all(types[b[0]][0] == "numpy.scalar" for b in batches
               if wire.array_entry(types[b[0]]) and len(types[b[0]][2]) == 1)
    out = autosave.loads(data)
    for a, b in zip(items, out["items"]):
        same_scalar(a, b)
    ids = {id(a): b for a, b in zip(items, out["items"])}
    assert all(b is ids[id(a)] for a, b in zip(state["again"], out["again"]))
    assert out["keys"] == state["keys"]
    assert autosave.dumps(out) == data
    with python_loops():
        assert autosave.dumps(state) == data
        for a, b in zip(items, autosave.loads(data)["items"]):
            same_scalar(a, b)


def test_records_of_expands_scalar_batches():
    state = [np.float32(2.5), np.int8(-3), np.complex64(1j)]
    types, records, root = records_of(autosave.dumps(state))
    assert not any(wire.array_entry(t) for t in types)
    dtypes = {i: rec[1] for i, rec in enumerate(records) if types[rec[0]][0] == "numpy.dtype"}
    got = [(dtypes[rec[1][0]], rec[2]) for rec in records
           if types[rec[0]] == ["numpy.scalar", 1, []]]
    assert got == [("<f4", 2.5), ("|i1", -3), ("<c8", np.complex64(1j).tobytes())]
    assert types[records[target(root[0], len(records))][0]][0] == "builtins.list"


@pytest.mark.parametrize("fields, column, match", [
    (["<i4"], [0, [1 << 40]], "range"),
    (["|u1"], [0, [-1]], "range"),
    (["<i4"], [0, [1.5]], "holds a float"),
    (["|b1"], [0, [1]], "holds a int"),
    (["<f8"], [0, [b"\x00" * 7]], "7 bytes"),
    (["<c8"], [0, [1.0]], "holds a float"),
    (["|O"], [0, [1]], "plain"),
    (["<i4", "0"], [0, [1]], "names its descr"),
    (["<i4"], [COLUMN_REFS, [0]], "inline values"),
])
def test_forged_scalar_batches_are_refused(fields, column, match):
    data = wire.encode([["numpy.scalar", 1, fields]], [], [0], [[0, 1, column]])
    with pytest.raises(FormatError, match=match):
        autosave.loads(data)


def test_a_forged_scalar_batch_of_bytes_loads_as_its_records_would():
    data = wire.encode([["numpy.scalar", 1, ["<f8"]]], [], [0],
                       [[0, 1, [0, [np.float64(2.5).tobytes()]]]])
    assert autosave.loads(data) == np.float64(2.5)
