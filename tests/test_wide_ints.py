"""Ints beyond 64 bits (format 3): written inline as msgpack extension 1, in one
canonical form, so a save walks the graph once whatever it holds.

Format 2 boxed them as ``builtins.int`` records, which only a second walk of the whole
graph could find out it needed (a user's ``__getstate__`` then ran twice); those files
still load (tests/data/format2, test_integrity).
"""

import threading

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
import autosave.files
from autosave import FormatError, SaveError
from autosave.format.wire import HEAD, CHECKSUM, MAGIC, checksum, frame

autosave.allow(__name__)


class Counted:
    """Counts the walks that reach it (its __getstate__ runs once per walk)."""
    calls = 0

    def __init__(self, value):
        self.value = value

    def __getstate__(self):
        type(self).calls += 1
        return {"value": self.value}

    def __setstate__(self, state):
        self.value = state["value"]


def body_of(data):
    return msgpack.unpackb(data[21:], ext_hook=lambda code, raw: (code, raw), raw=False,
                           strict_map_key=False)


def framed(body, version=3):
    raw = msgpack.packb(body, use_bin_type=True)
    head = HEAD.pack(MAGIC, version, len(raw))
    return head + CHECKSUM.pack(checksum(head, raw)) + raw


WIDE = st.one_of(st.integers(min_value=2 ** 64), st.integers(max_value=-(2 ** 63) - 1),
                 st.sampled_from([2 ** 64, -(2 ** 63) - 1, 2 ** 127, -(2 ** 127), 10 ** 400]))


@given(WIDE)
@settings(max_examples=200, derandomize=True)
def test_wide_ints_round_trip_inline_in_their_canonical_form(value):
    data = autosave.dumps((value, -value, (value, "x")))     # tuples: records
    types, records, _, _ = body_of(data)
    assert ["builtins.int", 1, []] not in types          # no record: inline
    ext = records[0][1]
    assert ext[0] == 1 and ext[1] == value.to_bytes((value.bit_length() + 8) // 8, "little",
                                                    signed=True)
    assert autosave.loads(data) == (value, -value, (value, "x"))
    assert autosave.dumps(autosave.loads(data)) == data


@pytest.mark.one_save_engine          # the suite's differential check walks a second time
@pytest.mark.parametrize("engine", ["direct", "reflective"])
@pytest.mark.parametrize("failing", [False, True])
def test_a_save_walks_the_graph_once(failing, engine, monkeypatch):
    generated = autosave.files.GENERATED
    monkeypatch.setattr(generated, "activate", lambda: engine == "direct")
    Counted.calls = 0
    graph = {"big": 2 ** 200, "counted": Counted(3), "more": [2 ** 64, -(2 ** 100)]}
    if failing:
        graph["lock"] = threading.Lock()
        with pytest.raises(SaveError) as e:
            autosave.dumps(graph)
        assert e.value.path == "root['lock']"
    else:
        assert autosave.loads(autosave.dumps(graph))["counted"].value == 3
    assert Counted.calls == 1


@pytest.mark.parametrize("raw, why", [
    ((5).to_bytes(9, "little", signed=True), "fits in 64 bits"),
    ((2 ** 63 - 1).to_bytes(9, "little", signed=True), "fits in 64 bits"),
    ((2 ** 64 - 1).to_bytes(9, "little", signed=True), "fits in 64 bits (as uint64)"),
    ((2 ** 70).to_bytes(12, "little", signed=True), "padded"),
    (b"", "empty"),
])
def test_non_canonical_wide_ints_are_refused(raw, why):
    data = framed([[["builtins.list", 1, []]], [[0, msgpack.ExtType(1, raw)]], [0]])
    with pytest.raises(FormatError, match="canonical"):
        autosave.loads(data)


def test_a_format2_body_cannot_hold_inline_wide_ints():
    raw = (2 ** 70).to_bytes(9, "little", signed=True)
    data = framed([[["builtins.list", 1, []]], [[0, msgpack.ExtType(1, raw)]], [0]], version=2)
    with pytest.raises(FormatError, match="extension type 1"):
        autosave.loads(data)
    assert autosave.loads(framed([[["builtins.list", 1, []]], [[0, msgpack.ExtType(1, raw)]],
                                  [0]]))[0] == 2 ** 70


def test_colliding_wide_int_keys_are_refused_as_boxed_ones_are():
    # The hash-flood of test_safe_load (ints equal modulo 2**61 - 1 collide), inline.
    p61 = 2 ** 61 - 1
    keys = [msgpack.ExtType(1, (k * p61).to_bytes(((k * p61).bit_length() + 8) // 8,
                                                   "little", signed=True))
            for k in range(2 ** 32, 2 ** 32 + 5000)]
    data = framed([[["builtins.set", 1, []]], [[0, *keys]], [0]])
    with pytest.raises(FormatError, match="collid"):
        autosave.loads(data)


def test_the_frame_helper_writes_the_current_version():
    assert frame(b"\x90")[4] == 8
