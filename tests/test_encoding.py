"""Save bodies are encoded by msgspec when it is installed (the ``fast`` extra), by
msgpack otherwise: the bytes must be the same, to the bit, for everything a body can hold.

format.pack is the one encoder. It tries msgspec and falls back to msgpack for the two
things msgspec will not write (a str with a lone surrogate, an int beyond 64 bits);
format.msgpack_pack is msgpack alone, the reference. Every property here compares the
two on generated bodies: extreme and wide ints, every float (NaNs with payloads, -0.0,
floats that would fit in 32 bits), strings with surrogates, bytes, nested arrays and the
unset-slot marker, then decodes the bytes back. AUTOSAVE_FUZZ_EXAMPLES=N runs N fresh
examples per property instead of the seeded set."""

import copy
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import threading
import types

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
import autosave.format.wire as fmt
from autosave.format.wire import ABSENT, decode, frame, msgpack_pack, pack

import test_graph_properties as graphs_under_test
from test_codegen import bench_graphs, game

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)   # 0: the seeded CI set
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])
HAS_MSGSPEC = fmt._fast_encode is not None
needs_msgspec = pytest.mark.skipif(not HAS_MSGSPEC, reason="msgspec is not installed")


@pytest.fixture
def msgpack_only(monkeypatch):
    """pack() as it is without msgspec installed."""
    monkeypatch.setattr(fmt, "_fast_encode", None)


# -- body-like values ---------------------------------------------------------------------

INT_MIN, INT_MAX = -(2 ** 63), 2 ** 64 - 1
EDGE_INTS = sorted({s * b + d for b in (0, 2 ** 5, 2 ** 7, 2 ** 8, 2 ** 15, 2 ** 16, 2 ** 31,
                                        2 ** 32, 2 ** 63, 2 ** 64)
                    for s in (1, -1) for d in (-1, 0, 1)})
WIDE_EDGES = [2 ** 64, 2 ** 64 + 1, INT_MIN - 1, INT_MIN - 2, 2 ** 127, -(2 ** 127),
              2 ** 128 - 1, -(2 ** 128), 2 ** 1000, -(10 ** 400)]


def from_bits(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def bits_of(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# NaNs of either sign with any payload, quiet or signalling (a payload of 1 is a
# signalling NaN): a save keeps their bits.
nans = st.builds(lambda sign, payload: from_bits(sign << 63 | 0x7FF << 52 | payload),
                 st.integers(0, 1), st.integers(1, 2 ** 52 - 1))
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, float("inf"), float("-inf"), float("nan"),
               from_bits(0x7FF0000000000001), from_bits(0xFFF8000000000001),
               3.4028234663852886e38, 1.401298464324817e-45, 5e-324, 1.7976931348623157e308,
               2.0 ** 24, 2.0 ** 53, 0.1]
surrogate_text = st.text(st.characters(exclude_categories=()), max_size=8)
SURROGATE_STRINGS = ["\ud800", "\udfff", "a\udc80b", "\udbff\udc00"[::-1], "\U0001f600\ud83d"]
SIZES = [0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(INT_MIN, INT_MAX),
    st.sampled_from(EDGE_INTS),
    st.integers(min_value=INT_MAX + 1),
    st.integers(max_value=INT_MIN - 1),
    st.sampled_from(WIDE_EDGES),
    st.floats(allow_nan=True),
    st.floats(width=32),
    nans,
    st.sampled_from(EDGE_FLOATS),
    st.text(max_size=8),
    surrogate_text,
    st.sampled_from(SURROGATE_STRINGS),
    st.binary(max_size=8),
    st.sampled_from(SIZES[:8]).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
    st.sampled_from(SIZES[:8]).map(lambda n: b"\x00" * n),
    st.just(ABSENT),
)
bodies = st.recursive(leaves, lambda inner: st.lists(inner, max_size=18), max_leaves=60)


def has(value, test):
    if type(value) is list:
        return any(has(v, test) for v in value)
    return test(value)


def is_wide(v):
    return type(v) is int and not INT_MIN <= v <= INT_MAX


def has_surrogate(v):
    return type(v) is str and any("\ud800" <= c <= "\udfff" for c in v)


def same(a, b):
    """a == b, floats by their bits, the unset-slot marker by identity."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(map(same, a, b))
    if type(a) is float:
        return bits_of(a) == bits_of(b)
    return a is b if a is ABSENT else a == b


def count(value, test):
    if type(value) is list:
        return sum(count(v, test) for v in value)
    return int(test(value))


def round_trip(value, data):
    """``value`` back from ``data``, the bytes of a body holding it as a record's item
    and as the root, decoded by format.decode, with its checks."""
    types_, records, root, unset, _, _ = decode(frame(data))
    assert types_ == [["builtins.list", 1, []]]
    assert same(records, [[0, value]]) and same(root, value)
    assert unset == 2 * count(value, lambda v: v is ABSENT)


def body_holding(value):
    return [[["builtins.list", 1, []]], [[0, value]], value, []]


# -- the encoders agree -------------------------------------------------------------------

@pytest.mark.slow
@needs_msgspec
@settings(max_examples=FUZZ or 400, **SETTINGS)
@given(bodies)
def test_msgspec_writes_msgpack_bytes_or_refuses_only_surrogates_and_wide_ints(value):
    reference = msgpack_pack(value)
    try:
        fast = fmt._fast_encode(value)
    except UnicodeEncodeError:
        assert has(value, has_surrogate)
    except OverflowError:
        assert has(value, is_wide)
    else:
        assert fast == reference
    assert pack(value) == reference


@pytest.mark.slow
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(bodies)
def test_every_body_decodes_to_what_was_encoded(value):
    data = pack(body_holding(value))
    assert data == msgpack_pack(body_holding(value))
    round_trip(value, data)


@pytest.mark.parametrize("value", [*EDGE_INTS, *WIDE_EDGES, *EDGE_FLOATS, *SURROGATE_STRINGS,
                                   None, True, False, ABSENT, [], [[[]]], [ABSENT] * 3],
                         ids=repr)
def test_edge_values_are_written_alike(value):
    assert pack(value) == msgpack_pack(value)
    round_trip(value, pack(body_holding(value)))


@pytest.mark.parametrize("size", SIZES)
def test_lengths_at_every_header_size_are_written_alike(size):
    # fixstr/str8/str16/str32, bin8/16/32, fixarray/array16/array32 boundaries
    for value in ("x" * size, "é" * size, b"\xff" * size, [None] * size, [ABSENT] * size,
                  ["\ud800"] * min(size, 300), [2 ** 64] * min(size, 300)):
        assert pack(value) == msgpack_pack(value)
    round_trip([b"\xff" * size, "\ud800" * size], pack(body_holding([b"\xff" * size,
                                                                   "\ud800" * size])))


@pytest.mark.parametrize("value", [1.0, 0.5, -0.0, 3.4028234663852886e38, float("nan"),
                                   from_bits(0x7FF0000000000001), 1.401298464324817e-45])
def test_floats_are_always_float64_even_where_32_bits_would_hold_them(value):
    data = pack(value)
    assert data == b"\xcb" + struct.pack(">d", value) == msgpack_pack(value)


def test_wide_ints_are_extension_1_in_their_canonical_form():
    for value in WIDE_EDGES:
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        expected = msgpack.packb(msgpack.ExtType(1, raw))
        assert pack(value) == msgpack_pack(value) == expected
        assert pack([1, value, "x"]) == msgpack_pack([1, value, "x"])


# -- the unset-slot marker ------------------------------------------------------------------

def test_the_unset_slot_marker_is_extension_0_empty_with_either_encoder(msgpack_only):
    assert msgpack_pack(ABSENT) == b"\xc7\x00\x00" == msgpack.packb(msgpack.ExtType(0, b""))
    assert pack(ABSENT) == b"\xc7\x00\x00"


@needs_msgspec
def test_msgspec_writes_the_unset_slot_marker_as_extension_0():
    assert fmt._fast_encode([ABSENT, [ABSENT]]) == msgpack_pack([ABSENT, [ABSENT]])
    assert fmt._fast_encode(ABSENT) == b"\xc7\x00\x00"


def test_the_unset_slot_marker_is_one_object_that_no_encoder_takes_for_an_array():
    assert not isinstance(ABSENT, (tuple, list))
    assert copy.copy(ABSENT) is ABSENT and copy.deepcopy([ABSENT])[0] is ABSENT
    assert pickle.loads(pickle.dumps(ABSENT)) is ABSENT
    # The decoder hands back the very marker, so `is ABSENT` holds on a load.
    _, _, root, unset, _, _ = decode(frame(pack([[], [], ABSENT, []])))
    assert root is ABSENT and unset == 1


def test_threads_sharing_the_encoder_each_get_their_own_bytes():
    # The hook runs Python code in the middle of an encoding, where another thread may
    # take over and encode with the same encoder.
    bodies_ = [[i, [ABSENT, "t" * i] * 200, float(i)] for i in range(8)]
    expected = [msgpack_pack(b) for b in bodies_]
    wrong = []

    def work(i):
        for _ in range(300):
            if pack(bodies_[i]) != expected[i]:
                wrong.append(i)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong


# -- what a body never holds ----------------------------------------------------------------

class Thing:
    pass


@pytest.mark.parametrize("value", [object(), Thing(), Thing, len, lambda: 0, types,
                                   NotImplemented, Ellipsis, 1j],
                         ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("encoder", ["pack", "msgpack"])
def test_anything_else_in_a_body_is_a_type_error(value, encoder):
    encode = pack if encoder == "pack" else msgpack_pack
    with pytest.raises(TypeError, match=f"a record holds a {type(value).__name__}$"):
        encode([1, ["x", value]])


@pytest.mark.parametrize("other", ["\ud800", 2 ** 64, -(2 ** 100)])
def test_falling_back_to_msgpack_hides_no_error(other):
    # msgspec refuses the surrogate or the wide int first; msgpack then meets the object.
    with pytest.raises(TypeError, match="a record holds a Thing"):
        pack([other, Thing()])
    with pytest.raises(TypeError, match="a record holds a Thing"):
        pack([Thing(), other])


def test_a_save_of_a_body_that_cannot_be_encoded_is_a_save_error(monkeypatch):
    # dumps reports an encoder failure (a defect: records hold only encodable values)
    monkeypatch.setattr(autosave.files, "encode", lambda *body: pack([Thing()]))
    with pytest.raises(autosave.SaveError, match="could not be encoded: TypeError: a record "
                                                 "holds a Thing"):
        autosave.dumps([1])


# -- real saves -----------------------------------------------------------------------------

class Slotted:
    __slots__ = ("a", "b", "__weakref__")


def odd_values():
    s = Slotted()
    s.b = [from_bits(0x7FF0000000000001), -0.0, "\ud800x", 2 ** 64, -(2 ** 200), b"\x00"]
    return {"unset": s, "wide": [2 ** 64 - 1, INT_MIN, INT_MIN - 1], "text": "é\udfff",
            "again": s, "nan": float("nan"), "set": {1, "\ud800", 2 ** 70}}


autosave.allow(__name__)

REAL_GRAPHS = {
    "demo level": lambda: game.build_level(seed=3, n_npcs=40),
    "bench level": lambda: bench_graphs.level_graph(2000),
    "bench world": lambda: bench_graphs.world_graph(3000),
    "odd values": odd_values,
}


@pytest.mark.slow
@pytest.mark.parametrize("codegen", ["1", "0"])
@pytest.mark.parametrize("name", REAL_GRAPHS)
def test_real_saves_are_byte_identical_with_either_encoder(name, codegen, monkeypatch):
    monkeypatch.setenv("AUTOSAVE_CODEGEN", codegen)
    root = REAL_GRAPHS[name]()
    data = autosave.dumps(root)
    with monkeypatch.context() as m:
        m.setattr(fmt, "_fast_encode", None)
        assert autosave.dumps(root) == data
        assert autosave.dumps(autosave.loads(data)) == data
    assert autosave.dumps(autosave.loads(data)) == data
    assert autosave.dumps(autosave.copy(root)) == data


@pytest.mark.slow
@settings(max_examples=FUZZ or 60, **SETTINGS)
@given(graphs_under_test.graph_specs(max_nodes=14))
def test_random_graphs_save_to_the_same_bytes_with_either_encoder(spec):
    graph = graphs_under_test.build(spec)
    data = autosave.dumps(graph)
    fast, fmt._fast_encode = fmt._fast_encode, None
    try:
        assert autosave.dumps(graph) == data
    finally:
        fmt._fast_encode = fast


@pytest.mark.slow
def test_without_msgspec_installed_saves_are_the_same_bytes(tmp_path):
    # A fresh interpreter in which importing msgspec fails, as where the fast extra is
    # not installed: autosave encodes with msgpack alone and writes the same saves.
    script = textwrap.dedent("""
        import sys
        sys.modules["msgspec"] = None          # import msgspec raises ImportError
        sys.path[:0] = sys.argv[1:]
        import autosave.format.wire, test_encoding
        assert autosave.format.wire._fast_encode is None and autosave.format.wire.msgspec is None
        for name, make in test_encoding.REAL_GRAPHS.items():
            print(autosave.dumps(make()).hex())
    """)
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", script, here], capture_output=True,
                         text=True, check=True, timeout=300, env={**os.environ, "AUTOSAVE_CODEGEN": "0"})
    written = [bytes.fromhex(line) for line in out.stdout.split()]
    expected = [autosave.dumps(make()) for make in REAL_GRAPHS.values()]
    assert written == expected
