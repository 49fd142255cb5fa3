"""Mutation fuzzing of real saves: bit flips, truncations and structure-aware edits of
the decoded body. Whatever comes out, ``loads`` succeeds or raises a LoadError kind, and
``autosave dump`` / ``autosave inspect`` print valid output or one line (exit 2) that
is not an internal error -- never a traceback; and the load's loops in C and in Python
agree on every file.

CI runs a fixed, seeded set; AUTOSAVE_FUZZ_EXAMPLES=N runs N examples per property."""

import collections
import datetime
import json
import os

import attrs
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave.cli import main
from autosave.format.wire import encode, unframe
from autosave.format.kernels import python_loops

autosave.allow(__name__)

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0"))
SETTINGS = dict(deadline=None, derandomize=not FUZZ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@attrs.define(eq=False)
class Npc:
    name: str
    friend: object = None
    bag: list = attrs.Factory(list)


def sample():
    a, b = Npc("a\udc80"), Npc("b")
    a.friend, b.friend = b, a
    a.bag = [1, 2 ** 70, 1.5, b"\x00", (1, "x"), frozenset({"k"}), {"q": a},
             collections.deque([b], maxlen=3), datetime.date(2020, 1, 2), range(3),
             collections.OrderedDict(x=1), {Npc("key"): 1}]
    return autosave.dumps([a, b, {1, 2, 3}])


SAMPLE = sample()
BODY = msgpack.unpackb(unframe(SAMPLE)[1], raw=False, strict_map_key=False,
                       unicode_errors="surrogatepass", ext_hook=msgpack.ExtType)

plain = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64 - 1), st.floats(),
    st.text(st.characters(codec="utf-8") | st.sampled_from(["\udc80", "\ud800"]), max_size=8),
    st.binary(max_size=8),
    st.sampled_from(["builtins.list", "builtins.tuple", "autosave.reduce", "autosave.global",
                     "autosave.method", "builtins.map", "collections.deque", "os.system",
                     "__subclasses__", "builtins.dict", "autosave.function", ""]),
)
values = st.recursive(plain, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


def paths(v, prefix=()):
    yield prefix
    if type(v) is list:
        for i, x in enumerate(v):
            yield from paths(x, prefix + (i,))


def edited(body, path, op, new):
    body = msgpack.unpackb(msgpack.packb(body, use_bin_type=True,
                                         unicode_errors="surrogatepass"),
                           raw=False, strict_map_key=False, unicode_errors="surrogatepass",
                           ext_hook=msgpack.ExtType)
    if not path:
        return new
    parent = body
    for i in path[:-1]:
        parent = parent[i]
    if op == "replace":
        parent[path[-1]] = new
    elif op == "delete":
        del parent[path[-1]]
    elif op == "insert":
        parent.insert(path[-1], new)
    else:
        parent[path[-1]] = [parent[path[-1]]] * 3
    return body


def load_outcome(data):
    """What loading gives: the loaded graph's bytes, or the error's kind and message."""
    try:
        return "loaded", autosave.dumps(autosave.loads(data))
    except autosave.LoadError as e:
        return type(e).__name__, str(e)


def check_all(data, tmp_path, capsys):
    # The load's loops in C and in Python (autosave.format.kernels) must agree on every file.
    loaded = load_outcome(data)
    with python_loops():
        assert load_outcome(data) == loaded
    path = tmp_path / "m.sav"
    path.write_bytes(data)
    for argv in (["dump", str(path)], ["inspect", str(path)]):
        status = main(argv)
        out, err = capsys.readouterr()
        assert status in (0, 2), (argv, status)
        assert "internal error" not in err, err
        if status == 2:
            assert err.count("\n") == 1 and str(path) in err, err
        elif argv[0] == "dump":
            json.loads(out)


@pytest.mark.slow
@settings(max_examples=FUZZ or 150, **SETTINGS)
@given(st.data())
def test_structure_edits(tmp_path, capsys, data):
    all_paths = list(paths(BODY))
    path = data.draw(st.sampled_from(all_paths[1:]))
    op = data.draw(st.sampled_from(["replace", "delete", "insert", "triple"]))
    new = data.draw(values)
    try:
        body = edited(BODY, path, op, new)
        blob = encode(*body) if type(body) is list and len(body) == 4 else None
    except (TypeError, ValueError, OverflowError):
        return
    if blob is None:
        blob = autosave.format.wire.frame(msgpack.packb(body, use_bin_type=True,
                                                   unicode_errors="surrogatepass"))
    check_all(blob, tmp_path, capsys)


@pytest.mark.slow
@settings(max_examples=FUZZ or 100, **SETTINGS)
@given(st.lists(st.tuples(st.integers(0, len(SAMPLE) - 1), st.integers(0, 7)),
                min_size=1, max_size=4), st.integers(0, len(SAMPLE)))
def test_bit_flips_and_truncations_of_an_unchecksummed_body(tmp_path, capsys, flips, cut):
    """Format 1 has no checksum: these edits reach the decoder and the loader."""
    body = bytearray(unframe(SAMPLE)[1])
    for offset, bit in flips:
        if offset < len(body):
            body[offset] ^= 1 << bit
    check_all(b"\x89ASV\x01" + bytes(body[:cut]), tmp_path, capsys)


def test_a_valid_save_holding_lone_surrogates_dumps_as_json(tmp_path, capsys):
    path = tmp_path / "s.sav"
    path.write_bytes(SAMPLE)
    assert main(["dump", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any(r.get("fields", {}).get("name") == "a\udc80" for r in doc["records"])
