"""The ``framed`` kernel (autosave/format/kernels.py, csrc/frame.c): a save's header
made around its encoded body, by the C in place of the encoder's own result. Both
implementations against the frame's definition (docs/format.md), and what the C's
in-place growth must never do: change bytes someone else holds, or leave a view of the
save's memory alive."""

import struct

import pytest
import xxhash
from hypothesis import given, settings, strategies as st

import autosave
from autosave.format import kernels, wire

try:
    from autosave import _speedups
except ImportError:
    _speedups = None

IMPLEMENTATIONS = [pytest.param(kernels.PURE["framed"], id="Python"),
                   pytest.param(getattr(_speedups, "framed", None), id="C", marks=pytest.mark.skipif(
                       _speedups is None, reason="autosave._speedups not built"))]
PREFIX = wire.MAGIC + bytes((wire.VERSION,))


@pytest.fixture(params=IMPLEMENTATIONS)
def framed(request):
    return request.param


def expected(body: bytes) -> bytes:
    head = struct.pack("<4sBQ", wire.MAGIC, wire.VERSION, len(body))
    h = xxhash.xxh3_64(head)
    h.update(body)
    return head + struct.pack("<Q", h.intdigest()) + body


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=5000) | st.binary(min_size=70_000, max_size=200_000))
def test_the_frame_is_the_header_then_the_body(body):
    for impl in (p.values[0] for p in IMPLEMENTATIONS if p.values[0] is not None):
        # a fresh bytes object each call: the C may grow it in place
        out = impl(lambda v: bytes(bytearray(v)), body, PREFIX, wire.checksum)
        assert out == expected(body)


def test_a_save_is_framed_as_ever(framed):
    value = {"a": [1, 2.5, "x" * 300], "b": bytes(range(256)) * 400}
    data = autosave.dumps(value)
    assert data[:5] == PREFIX
    assert data == expected(data[wire.FRAME_SIZE:])
    assert autosave.loads(data) == value
    assert framed(wire.pack, wire.body_of(*autosave.files._walker().run(value)),
                  PREFIX, wire.checksum) == data


def test_bytes_the_encoder_keeps_are_never_changed(framed):
    kept = []

    def encode(value):
        kept.append(bytes(bytearray(value)))
        return kept[-1]
    body = b"\x94" + b"abc" * 30_000
    out = framed(encode, body, PREFIX, wire.checksum)
    assert kept[0] == body and out == expected(body)


@pytest.mark.parametrize("body", [b"", b"\x90", b"\x91\x01"])
def test_bodies_of_shared_bytes_are_framed_in_a_new_object(framed, body):
    """CPython shares its empty and one-byte bytes: never grown in place."""
    assert framed(bytes, body, PREFIX, wire.checksum) == expected(body)


def test_no_view_of_the_save_outlives_the_call(framed):
    views = []

    def checksum(head, body):
        views.extend((head, body))
        return wire.checksum(head, body)
    out = framed(lambda v: bytes(bytearray(v)), b"\x90" * 100_000, PREFIX, checksum)
    assert out == expected(b"\x90" * 100_000)
    for view in views:
        if isinstance(view, memoryview):
            with pytest.raises(ValueError):
                view.tobytes()            # released


@pytest.mark.parametrize("encode, prefix, checksum, error", [
    (lambda v: v, b"\x89ASV", wire.checksum, TypeError),            # a prefix of 4
    (lambda v: v, "\x89ASV\x06", wire.checksum, TypeError),         # not bytes
    (lambda v: bytearray(v), PREFIX, wire.checksum, TypeError),     # no bytes encoded
    (lambda v: 1 / 0, PREFIX, wire.checksum, ZeroDivisionError),    # the encoder's error
    (lambda v: bytes(bytearray(v)), PREFIX, lambda h, b: 1 / 0, ZeroDivisionError),
    (lambda v: bytes(bytearray(v)), PREFIX, lambda h, b: -1, OverflowError),
])
def test_bad_arguments_raise_and_leak_nothing(framed, encode, prefix, checksum, error):
    with pytest.raises(error):
        framed(encode, b"\x91\x01" * 10, prefix, checksum)


def test_a_large_array_is_read_in_place_only_by_dumps():
    """dumps hands the encoder a view of a large array's memory; a walk encoded later
    (dumps_later, a log's step) copies it at the walk: same bytes either way, and a
    change made after the walk never reaches the later encoding."""
    np = pytest.importorskip("numpy")
    from autosave.files import dumps_later
    rng = np.random.default_rng(0)
    arrays = [rng.random(20_000), np.asfortranarray(rng.random((300, 200))),
              np.arange(20_000).astype("datetime64[s]"), rng.random(20_000).astype(">f8"),
              np.zeros(9_000, dtype=[("a", "<i4"), ("b", ">f8", (2,))])]
    arrays[0].flags.writeable = False
    for arr in arrays:
        state = {"a": arr, "again": [arr]}
        data = autosave.dumps(state)
        walked = dumps_later(state)
        before = arr.copy()
        if arr.flags.writeable:
            arr.reshape(-1, order="A").view(np.uint8)[:] = 7   # the game changes it after the walk
        assert walked.encode() == data
        back = autosave.loads(data)
        assert back["a"].tobytes() == before.tobytes() and back["again"][0] is back["a"]
        assert back["a"].dtype == arr.dtype and back["a"].flags.writeable == arr.flags.writeable
        assert back["a"].flags.f_contiguous == arr.flags.f_contiguous
