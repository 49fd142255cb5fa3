"""``kernels.writable``: a large array's data loaded with one copy (docs/speedups.md).
Both implementations give a writeable buffer of the item's bytes; the C gives the
bytes' own memory only when nothing but the two lists holds them."""

import sys

import pytest

np = pytest.importorskip("numpy")
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.format import kernels
from autosave.format.kernels import python_loops

try:
    from autosave import _speedups
except ImportError:                    # no C compiler where autosave was installed
    _speedups = None

IMPLEMENTATIONS = [pytest.param(kernels.PURE["writable"], id="Python"),
                   pytest.param(getattr(_speedups, "writable", None), id="C",
                                marks=pytest.mark.skipif(_speedups is None,
                                                         reason="no C build"))]


@pytest.mark.parametrize("writable", IMPLEMENTATIONS)
@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300), st.booleans(), st.booleans())
def test_a_writeable_buffer_of_the_bytes(writable, data, in_holder, kept):
    fresh = bytes(bytearray(data))           # a new object, whatever its size
    items, holder = [0, fresh], [1, fresh if in_holder else b"other"]
    elsewhere = [fresh] if kept else []
    del fresh
    buffer = writable(items, holder, 1)
    view = memoryview(buffer)
    assert not view.readonly and view.tobytes() == data
    taken = type(buffer) is not bytearray
    if taken:        # only the C, only when nothing else held the bytes, never tiny ones
        assert writable is not kernels.PURE["writable"] and not kept and len(data) >= 2
        assert items[1] is None and holder[1] is (None if in_holder else holder[1])
        view[:1] = b"\xff"                    # writes the memory nobody else can read
        assert bytes(view[:1]) == b"\xff"
    else:
        assert items[1] is not None
        if kept:
            assert elsewhere[0] == data      # a copy: the held bytes are left as they were
    if writable is not kernels.PURE["writable"] and not kept and len(data) >= 2:
        assert taken
    view.release()


@pytest.mark.parametrize("writable", IMPLEMENTATIONS)
@pytest.mark.parametrize("args, error", [
    (([b"ab"], [], 1), IndexError),
    (([b"ab"], [], -1), IndexError),
    ((["ab"], [], 0), TypeError),
    ((["ab"], [], 0), TypeError),
    (((b"ab",), [], 0), TypeError),
    (([b"ab"], (), 0), TypeError),
    (([b"ab"], [], "0"), TypeError),
    (([bytearray(b"ab")], [], 0), TypeError),
])
def test_bad_arguments_raise_the_same_class(writable, args, error):
    with pytest.raises(error):
        writable(*args)


@pytest.mark.skipif(_speedups is None, reason="no C build")
def test_the_bytes_taken_live_as_long_as_the_array():
    items = [bytes(bytearray(b"\x01" * 64))]
    before = sys.getrefcount(items[0])
    buffer = _speedups.writable(items, [], 0)
    assert before == 2 and items == [None]
    arr = np.ndarray((64,), np.uint8, buffer)
    del buffer
    arr[:] = 7
    assert arr.sum() == 7 * 64 and type(arr.base).__name__ == "OwnedBytes"


@pytest.mark.parametrize("python", [False, True])
def test_large_arrays_load_on_the_decoded_bytes_and_views_stay_views(python):
    big = np.arange(50_000.0)
    ro = np.arange(20_000, dtype=">i4")
    ro.flags.writeable = False
    state = {"big": big, "col": np.asfortranarray(np.ones((200, 100))), "ro": ro,
             "view": big[10:20], "again": big}
    data = autosave.dumps(state)
    if python:
        with python_loops():
            out = autosave.loads(data)
    else:
        out = autosave.loads(data)
    owners = (bytearray, *kernels.OWNERS)
    for key in ("big", "col", "ro"):
        assert type(out[key].base) in owners
        assert out[key].tobytes("A") == state[key].tobytes("A")
        assert out[key].dtype.str == state[key].dtype.str
        assert out[key].flags.writeable == state[key].flags.writeable
    assert out["col"].flags.f_contiguous and out["again"] is out["big"]
    assert np.shares_memory(out["view"], out["big"])
    out["big"][10] = -1.0                      # writeable, and the view sees it
    assert out["view"][0] == -1.0
    out["big"][10] = 10.0
    # saved again: the same bytes (the view still a view of its root)
    assert autosave.dumps(out) == data


def test_a_copys_records_are_not_taken():
    """autosave.copy hands the walk's own records to the loader: their bytes are held
    by the walk too, so the array is a copy and the original is untouched."""
    big = np.arange(50_000.0)
    copied = autosave.copy({"a": big})["a"]
    copied[0] = 99.0
    assert big[0] == 0.0 and copied[0] == 99.0
