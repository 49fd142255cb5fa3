"""Out-of-band buffers (docs/format.md, "Out-of-band buffers"), as pickle's protocol 5:
arrays handed to ``buffer_callback`` without a copy, rebuilt on the caller's memory,
views of them loading as views, writeability kept, every declared length checked;
saves without a callback unchanged, byte for byte; ``loads`` reading a memoryview in
place."""

import pickle

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave import FormatError
from autosave.format import wire
from autosave.format.buffers import LENGTH, OUT_OF_BAND

from forge import Forge

np = pytest.importorskip("numpy")
hnp = pytest.importorskip("hypothesis.extra.numpy")

SMALL = 64        # out_of_band_min for the generated arrays


def oob_dumps(root, **kw):
    buffers = []
    data = autosave.dumps(root, buffer_callback=buffers.append, **kw)
    return data, buffers


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.flags.writeable == b.flags.writeable
    assert a.flags.f_contiguous == b.flags.f_contiguous
    assert a.flags.c_contiguous == b.flags.c_contiguous
    assert a.tobytes() == b.tobytes()


DTYPES = st.sampled_from(["<f8", "<i4", "u1", "<c16", ">i2", "?", "<M8[s]", "<U3", "<m8[ms]"])


@st.composite
def scenes(draw):
    """An array big enough to go out of band, in C or Fortran order, writeable or not,
    with views of it (slices, transposes, reinterpretations)."""
    dtype = np.dtype(draw(DTYPES))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=9))
    arr = draw(hnp.arrays(dtype, shape))
    if draw(st.booleans()):
        arr = np.asfortranarray(arr)
    arr.flags.writeable = draw(st.booleans())
    views = {"T": arr.T, "slice": arr[::2], "flat": arr.reshape(-1, order="A")}
    if arr.ndim > 1:
        views["col"] = arr[:, 1]
    return {"arr": arr, **{k: views[k] for k in draw(st.sets(st.sampled_from(sorted(views))))}}


@settings(max_examples=60, deadline=None)
@given(scenes(), st.booleans())
def test_arrays_and_their_views_round_trip_on_the_callers_memory(scene, read_only_buffers):
    data, buffers = oob_dumps(scene, out_of_band_min=SMALL)
    arr = scene["arr"]
    if arr.nbytes >= SMALL:
        assert len(buffers) == 1 and isinstance(buffers[0], pickle.PickleBuffer)
        assert np.shares_memory(np.asarray(buffers[0]), arr)       # no copy
    given_buffers = [bytes(b) for b in buffers] if read_only_buffers else buffers
    out = autosave.loads(data, buffers=given_buffers)
    for key, value in scene.items():
        same(out[key], value)
    if buffers and not read_only_buffers:
        assert np.shares_memory(out["arr"], arr)
    for key in scene.keys() - {"arr"}:
        assert np.shares_memory(out[key], out["arr"])               # views stay views
    # the bytes with every buffer kept in band are the bytes without a callback
    assert autosave.dumps(scene, buffer_callback=lambda b: True,
                          out_of_band_min=SMALL) == autosave.dumps(scene)


def test_a_writeable_array_over_read_only_memory_is_copied_to_stay_writeable():
    arr = np.arange(1 << 15, dtype=np.float64)
    data, buffers = oob_dumps({"a": arr, "v": arr[5:9]})
    out = autosave.loads(data, buffers=[bytes(buffers[0])])
    assert out["a"].flags.writeable and out["v"].flags.writeable
    out["a"][5] = -1
    assert out["v"][0] == -1 and arr[5] == 5


def test_small_and_object_and_noncontiguous_arrays_stay_in_band():
    foreign = np.frombuffer(bytes(1 << 18), dtype=np.float64)   # memory of a bytes
    root = {"small": np.arange(10), "objects": np.array([None] * 10000, dtype=object),
            "strided": foreign[::2], "empty": np.zeros((0, 1 << 20))}
    data, buffers = oob_dumps(root)
    assert buffers == []
    assert data == autosave.dumps(root)


def test_the_callback_decides_per_buffer_and_the_order_is_the_bodys():
    arrays = [np.full(1 << 14, i, dtype=np.int64) for i in range(4)]
    kept = []

    def every_other(buffer):
        kept.append(buffer)
        return len(kept) % 2 == 0          # true: in band

    data = autosave.dumps(arrays, buffer_callback=every_other)
    out_of_band = kept[0::2]
    out = autosave.loads(data, buffers=out_of_band)
    for a, b in zip(arrays, out):
        assert np.array_equal(a, b)
    assert np.shares_memory(out[0], arrays[0]) and not np.shares_memory(out[1], arrays[1])


def test_saves_of_one_graph_with_buffers_are_the_same_bytes_in_any_process():
    root = {"grid": np.arange(1 << 16).reshape(256, 256), "name": "w"}
    assert oob_dumps(root)[0] == oob_dumps(root)[0]
    assert len(oob_dumps(root)[0]) < 400


def test_a_callback_error_is_the_callers():
    class Full(Exception):
        pass

    def refuse(buffer):
        raise Full("no room")

    with pytest.raises(Full):
        autosave.dumps(np.zeros(1 << 14), buffer_callback=refuse)


@pytest.mark.parametrize("given, message", [
    (None, r"buffers=\[\.\.\.\]"),
    ([], "more than the 0 out-of-band buffers"),
    ([bytes(1 << 17), b"extra"], "declares 1 out-of-band buffers, 2 were given"),
    ([bytes(16)], "buffer 0 holds 16 bytes, the save declares 131,072"),
])
def test_the_buffers_given_must_be_those_declared(given, message):
    data, _ = oob_dumps(np.zeros(1 << 14))
    with pytest.raises(FormatError, match=message):
        autosave.loads(data, buffers=given)


def test_buffers_must_be_buffers():
    data, buffers = oob_dumps(np.zeros(1 << 14))
    with pytest.raises(TypeError, match="iterable of buffers"):
        autosave.loads(data, buffers=bytes(buffers[0]))
    with pytest.raises(TypeError, match="buffer 0 is a int"):
        autosave.loads(data, buffers=[7])
    with pytest.raises(FormatError, match="not contiguous"):
        autosave.loads(data, buffers=[np.zeros(1 << 15)[::2]])


def _ext(n):
    return msgpack.ExtType(OUT_OF_BAND, LENGTH.pack(n))


def forged(f, root=None):
    """A forged save holding msgpack extensions (which Forge's encoder would write as
    arrays)."""
    types, records, root = f.body(root)
    return wire.frame(msgpack.packb([types, records, root, []], use_bin_type=True))


@pytest.mark.parametrize("where", ["list item", "root", "dtype position", "second array field"])
def test_a_forged_buffer_anywhere_but_an_arrays_data_is_refused(where):
    """A buffer never becomes an object of its own: ext 2 stands only as the data of
    a numpy.ndarray record."""
    f = Forge()
    dtype = f.rec("numpy.dtype", "<f8")
    if where == "list item":
        f.rec("builtins.list", _ext(8))
    elif where == "dtype position":
        f.rec("numpy.ndarray", _ext(8), 0, b"\0" * 8, 1)
    elif where == "second array field":
        f.rec("numpy.ndarray", dtype, _ext(8), _ext(8), 1)
    data = forged(f, _ext(8) if where == "root" else None)
    with pytest.raises(FormatError, match="outside a numpy.ndarray record's data"):
        autosave.loads(data, buffers=[bytes(8)] * (2 if where == "second array field" else 1))


def test_a_forged_extension_of_the_wrong_size_is_refused():
    f = Forge()
    dtype = f.rec("numpy.dtype", "<f8")
    f.rec("numpy.ndarray", dtype, 0, msgpack.ExtType(OUT_OF_BAND, b"\1\0"), 1)
    with pytest.raises(FormatError, match="holds 2 bytes, not 8"):
        autosave.loads(forged(f), buffers=[bytes(8)])


def test_a_buffer_that_does_not_fit_the_arrays_shape_is_refused():
    f = Forge()
    dtype = f.rec("numpy.dtype", "<f8")
    f.rec("numpy.ndarray", dtype, 0, _ext(16), 3)
    with pytest.raises(FormatError, match="holds 16 bytes of data"):
        autosave.loads(forged(f), buffers=[bytes(16)])


def test_a_view_of_an_array_owning_no_memory_is_still_refused_without_buffers():
    """The view check is relaxed for arrays this load built on a buffer, nothing else."""
    f = Forge()
    dtype = f.rec("numpy.dtype", "<f8")
    base = f.rec("numpy.ndarray", dtype, 0, bytes(64), 8)
    inner = f.rec("numpy.view", base, dtype, 0, 8, 1, 4, 8)
    f.rec("numpy.view", inner, dtype, 0, 0, 1, 2, 8)
    with pytest.raises(FormatError, match="owning its memory"):
        autosave.loads(f.bytes())


def test_the_budget_is_the_saves_and_the_buffers_and_a_copy_is_charged(monkeypatch):
    """The load's budget is that of a file as long as the save and its buffers; a
    copy of a read-only buffer is charged to it before it is made."""
    import autosave.model.adapters.numpy as adapter
    import autosave.files as files

    sizes, charged = [], []
    real_budget, real_charge = files.file_budget, adapter.charge
    monkeypatch.setattr(files, "file_budget", lambda size: (sizes.append(size),
                                                            real_budget(size))[1])
    monkeypatch.setattr(adapter, "charge", lambda m, w, what: (charged.append(m),
                                                               real_charge(m, w, what)))
    arr = np.zeros(1 << 20, dtype=np.uint8)
    data, buffers = oob_dumps([arr])
    autosave.loads(data, buffers=buffers)
    assert sizes == [len(data) + (1 << 20)] and charged == []       # no copy, no charge
    out = autosave.loads(data, buffers=[bytes(buffers[0])])
    assert charged == [1 << 20] and out[0].flags.writeable


# -- loads reads a memoryview in place ---------------------------------------------

def test_loads_reads_a_memoryview_in_place():
    data = bytearray(autosave.dumps({"a": [1, 2, 3], "b": b"x" * 1000}))
    view = memoryview(data)
    version, body = wire.unframe(view)
    assert body.obj is data                 # the caller's memory, not a copy
    assert autosave.loads(view) == {"a": [1, 2, 3], "b": b"x" * 1000}
    assert autosave.loads(view[:]) == autosave.loads(bytes(data))
    as_ints = np.frombuffer(bytes(data) + bytes(-len(data) % 8), dtype=np.uint64)
    with pytest.raises(FormatError, match="trailing bytes"):
        autosave.loads(memoryview(as_ints))   # cast to bytes: the padding is trailing


def test_a_truncated_memoryview_is_a_truncated_save():
    data = autosave.dumps(list(range(100)))
    with pytest.raises(autosave.TruncatedSaveError):
        autosave.loads(memoryview(data)[:-3])


class Packed:
    """Saves a part of itself as bytes of its own, with autosave, while being saved."""

    def __init__(self, grid):
        self.grid = grid

    def __getstate__(self):
        return {"blob": autosave.dumps(self.grid)}

    def __setstate__(self, state):
        self.grid = autosave.loads(state["blob"])


autosave.allow(__name__)


def test_a_save_made_during_a_save_offering_buffers_offers_none():
    """The policy belongs to the one walk dumps started: a hook's own dumps writes its
    arrays in band, and its bytes load alone."""
    grid = np.arange(1 << 14, dtype=np.float64)
    root = {"packed": Packed(grid), "big": np.ones(1 << 14)}
    data, buffers = oob_dumps(root)
    assert len(buffers) == 1                              # "big" only
    out = autosave.loads(data, buffers=buffers)
    assert np.array_equal(out["packed"].grid, grid)
    assert not np.shares_memory(out["packed"].grid, grid)
