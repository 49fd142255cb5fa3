"""Hostile input: whatever bytes ``loads`` is given, it raises only ``autosave.LoadError``
kinds (FormatError, UntrustedTypeError, IncompatibleSaveError), never another exception,
never hangs, never allocates what the bytes cannot describe, and never imports or calls
anything outside the allowed namespaces.

Saves are forged either by editing a real save's decoded body (renaming strings keeps
every reference exactly as the writer encoded it) or, for the few hand-built ones, with
the layout docs/format.md states: header, then msgpack ``[types, records, root]`` with
non-negative (absolute) reference indices.
"""

import collections
import datetime
import decimal
import enum
import functools
import itertools
import operator
import os
import random
import subprocess
import sys
import textwrap
import time
import tracemalloc
import weakref

import attrs
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
import forge
import helpers
from autosave import FormatError, IncompatibleSaveError, LoadError, UntrustedTypeError
from autosave.format.wire import unframe

autosave.allow(__name__)

HEADER = b"\x89ASV\x01"


# -- a rich sample save -------------------------------------------------------------------


class Bait:
    def __init__(self, *args):
        self.args = args


autosave.reconstructor(Bait)     # a game's registered reconstructor: the name a save calls

@pytest.fixture(autouse=True)
def forging_writer(monkeypatch):
    """autosave's writer refuses a reduce value its loader would refuse; these tests
    write such values on purpose (what a hostile writer would), so the check is off."""
    monkeypatch.setattr(autosave.model.adapters.callables, "check_constructor", lambda *a: None)


class Call:
    """Saves as ``func(*args)`` through ``__reduce__``: builds reduce records with the
    real writer, so a test needs no knowledge of their byte layout."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


@attrs.define
class Slotted:
    a: object = None
    b: object = None


@attrs.frozen
class Key:
    k: object


class Checked:
    """Its hooks raise on state a forged save could give it."""

    def __init__(self):
        self.n = 1

    def __getstate__(self):
        return {"n": self.n}

    def __setstate__(self, state):
        if not isinstance(state["n"], int):
            raise TypeError("n must be an int")
        self.n = state["n"]

    def __autosave_loaded__(self):
        if self.n < 0:
            raise ValueError("negative n")


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1


def make_closure():
    count = 0

    def inc():
        nonlocal count
        count += 1
        return count
    return inc


class Mood(enum.Enum):
    CALM = 1
    ANGRY = 2


ASSET = autosave.asset(["static", "data"], "test_hostile_input/asset")


def sample_graph():
    shared = [1, "two", 3.0]
    node = Slotted(shared)
    node.b = {Key("k"): node, "self": shared}
    lst = []
    tup = (lst, node)
    lst.append(tup)
    counter = Counter()
    ns = collections.defaultdict(int, a=1)
    return {
        "node": node, "tup": tup, "set": {Key(1), Key(2)}, "fs": frozenset({"a", "b"}),
        "plain": Bait(shared, None), "reduce": Call(Bait, 1, "x"), "checked": Checked(),
        "closure": make_closure(), "method": counter.bump, "counter": counter,
        "partial": functools.partial(make_closure), "enum": Mood.ANGRY,
        "dt": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        "dec": decimal.Decimal("1.5"), "big": 2 ** 100, "floats": [float("nan"), -0.0],
        "bytes": b"\x00\xff", "ba": bytearray(b"ab"), "dq": collections.deque([1], maxlen=3),
        "dd": ns, "weak": weakref.ref(counter), "rng": random.Random(3),
        "count": itertools.count(2), "range": range(3), "asset": ASSET, "str": "\ud800😀",
        "cls": Bait,
    }


def decode_body(data):
    """A save's body as format 1 holds it: wide ints, inline since format 3, become the
    ``builtins.int`` records format 1 had (appended, so referred to forward)."""
    types, records, root = msgpack.unpackb(forge.pack(forge.records_body(data)), raw=False,
                                           unicode_errors="surrogatepass",
                                           strict_map_key=False)
    for rec in list(records):
        for k, v in enumerate(rec):
            if isinstance(v, msgpack.ExtType) and v.code == 1:
                if ["builtins.int", 1, []] not in types:
                    types.append(["builtins.int", 1, []])
                rec[k] = [len(records)]
                records.append([types.index(["builtins.int", 1, []]), v.data])
                if rec[0] >= 0:
                    rec[0] = ~rec[0]
    return [types, records, root]


def encode(body, header=HEADER):
    return header + msgpack.packb(body, use_bin_type=True, unicode_errors="surrogatepass")


# In format 1, which has no checksum, so that byte edits reach the body's checks
# instead of stopping at format 2's checksum (test_integrity tests that one).
SAMPLE = encode(decode_body(autosave.dumps(sample_graph())))
SMALL = encode(decode_body(autosave.dumps([Bait(1), (2,), {"a": None}])))


def rename(data, old, new):
    """``data`` with every string equal to ``old`` in its body replaced by ``new``."""
    def sub(v):
        if type(v) is list:
            return [sub(x) for x in v]
        return new if v == old else v
    body = decode_body(data)
    replaced = sub(body)
    assert replaced != body, f"{old!r} does not occur in the save"
    return encode(replaced)


def loads_or_load_error(data):
    """Load; a LoadError is fine, anything else propagates and fails the test."""
    try:
        autosave.loads(data)
    except LoadError:
        pass


def test_sample_saves_are_valid():
    assert helpers.roundtrip(autosave.loads(SAMPLE)) is not None
    assert autosave.loads(SMALL)[1] == (2,)


# -- argument type, magic, version --------------------------------------------------------


@pytest.mark.parametrize("value", ["text", SAMPLE.decode("latin-1"), None, 5, [1, 2], {"a": 1}])
def test_non_bytes_input_is_type_error(value):
    with pytest.raises(TypeError):
        autosave.loads(value)


def test_bytes_like_inputs_are_accepted():
    expected = autosave.dumps(autosave.loads(SAMPLE))
    for data in (bytearray(SAMPLE), memoryview(SAMPLE)):
        assert autosave.dumps(autosave.loads(data)) == expected


BODY = SAMPLE[len(HEADER):]


@pytest.mark.parametrize("data", [
    pytest.param(b"", id="empty"),
    pytest.param(b"\x89", id="1 byte"),
    pytest.param(b"\x89ASV", id="magic only"),
    pytest.param(HEADER, id="header only"),
    pytest.param(b"\x89ASW\x01" + BODY, id="wrong magic"),
    pytest.param(b"ASV\x01" + BODY, id="magic without high byte"),
    pytest.param(b"\xc2\x89ASV\x01" + BODY, id="utf-8 mangled"),
    pytest.param(b"\x89asv\x01" + BODY, id="lowercase magic"),
    pytest.param(b"\x89ASV\x00" + BODY, id="version 0"),
    pytest.param(b"\x89ASV\x02" + BODY, id="version 2"),
    pytest.param(b"\x89ASV\xff" + BODY, id="version 255"),
    pytest.param(b"\x80\x05\x95" + b"\x00" * 20, id="a pickle"),
    pytest.param(b'{"types": []}', id="json"),
    pytest.param(b"\x1f\x8b\x08\x00" + b"\x00" * 20, id="gzip"),
])
def test_wrong_magic_or_version_is_format_error(data):
    with pytest.raises(FormatError):
        autosave.loads(data)


# -- truncation and trailing bytes ----------------------------------------------------


@pytest.mark.parametrize("data", [SAMPLE, SMALL], ids=["sample", "small"])
def test_truncation_at_every_offset_is_format_error(data):
    start = time.perf_counter()
    for end in range(len(data)):
        with pytest.raises(FormatError):
            autosave.loads(data[:end])
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("extra", [b"\x00", b"\xc0", SMALL, SAMPLE[len(HEADER):]])
def test_trailing_bytes_are_format_error(extra):
    with pytest.raises(FormatError):
        autosave.loads(SAMPLE + extra)


# -- random corruption --------------------------------------------------------------------

HYPOTHESIS = dict(deadline=2000, suppress_health_check=[HealthCheck.too_slow])

edits = st.lists(st.tuples(st.sampled_from(["set", "xor", "insert", "delete", "dup"]),
                           st.integers(0, 2 ** 16), st.binary(min_size=1, max_size=6)),
                 min_size=1, max_size=5)


def apply_edits(data, edit_list):
    data = bytearray(data)
    for op, pos, blob in edit_list:
        pos = pos % (len(data) + 1)
        if op == "set":
            data[pos:pos + len(blob)] = blob
        elif op == "xor" and pos < len(data):
            data[pos] ^= blob[0] or 1
        elif op == "insert":
            data[pos:pos] = blob
        elif op == "delete":
            del data[pos:pos + blob[0] % 16 + 1]
        elif op == "dup":
            data[pos:pos] = data[pos:pos + blob[0] % 32 + 1]
    return bytes(data)


@settings(max_examples=400, **HYPOTHESIS)
@given(st.sampled_from([SAMPLE, SMALL]), edits)
def test_random_byte_edits_raise_only_load_errors(data, edit_list):
    loads_or_load_error(apply_edits(data, edit_list))


# Values a structure-aware mutation writes into a decoded body: plausible names and
# references, wrong types, the unset-slot marker. Nothing that names a callable able
# to allocate or loop for long (see the reduce tests below for those).
NAMES = ["builtins.tuple", "builtins.dict", "builtins.set", "builtins.frozenset",
         "autosave.reduce", "autosave.global", "autosave.function", "autosave.method",
         "autosave.cell", "autosave.asset", "functools.partial", "weakref.ref",
         "datetime.datetime", "decimal.Decimal", "random.Random", "test_hostile_input.Bait",
         "test_hostile_input.Slotted", "test_hostile_input.Key", "test_hostile_input.Mood",
         "test_hostile_input.make_closure", "test_hostile_input.NoSuchThing", "os.system",
         "n", "a", "b", "k", "args", "__getstate__", "CALM", "bump", "inc"]
mutant_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(10 ** 6), 10 ** 6), st.integers(-40, 40),
    st.sampled_from([2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1]), st.floats(),
    st.sampled_from(NAMES), st.text(max_size=5), st.binary(max_size=17),
    st.just(msgpack.ExtType(0, b"")), st.lists(st.integers(-40, 40), max_size=2),
    st.lists(st.sampled_from([None, 0, "x", []]), max_size=3),
)


def positions(value, path=()):
    """Every (path) to an item inside a list in the decoded body."""
    if type(value) is list:
        for i, item in enumerate(value):
            yield path + (i,)
            yield from positions(item, path + (i,))


def set_at(body, path, new):
    target = body
    for i in path[:-1]:
        target = target[i]
    target[path[-1]] = new


@pytest.mark.slow
@settings(max_examples=500, **HYPOTHESIS)
@given(st.sampled_from([SAMPLE, SMALL]), st.data())
def test_random_structure_edits_raise_only_load_errors(data, draw):
    body = decode_body(data)
    spots = list(positions(body))
    for _ in range(draw.draw(st.integers(1, 4))):
        path = draw.draw(st.sampled_from(spots))
        try:
            set_at(body, path, draw.draw(mutant_values))
        except (IndexError, TypeError):
            pass   # an earlier edit replaced a container on this path
        spots = list(positions(body))
    loads_or_load_error(encode(body))


# -- malformed structure, hand-built per docs/format.md ---------------------------------

LIST = ["builtins.list", 1, []]
TUPLE = ["builtins.tuple", 1, []]
EXT0 = msgpack.ExtType(0, b"")


def forged(types, records, root):
    return encode([types, records, root])


@pytest.mark.parametrize("data", [
    pytest.param(encode(5), id="body not an array"),
    pytest.param(encode([[], []]), id="body of 2"),
    pytest.param(encode([[], [], None, None]), id="body of 4"),
    pytest.param(encode([5, [], None]), id="types not an array"),
    pytest.param(encode([[], "records", None]), id="records not an array"),
    pytest.param(HEADER + msgpack.packb([[], [], {"a": 1}]), id="map at root"),
    pytest.param(HEADER + msgpack.packb([[LIST], [[0, {}]], [0]]), id="map in a record"),
    pytest.param(encode([[], [], msgpack.ExtType(5, b"x")]), id="ext type 5"),
    pytest.param(encode([[], [], msgpack.ExtType(0, b"x")]), id="ext 0 with data"),
    pytest.param(forged([LIST], [5], [0]), id="record not an array"),
    pytest.param(forged([LIST], [[]], [0]), id="empty record"),
    pytest.param(forged([LIST], [[1]], [0]), id="type index out of range"),
    pytest.param(forged([LIST], [[-2]], [0]), id="marked type index out of range"),  # ~-2 == 1
    pytest.param(forged([LIST], [["builtins.list"]], [0]), id="type index a string"),
    pytest.param(forged([LIST], [[True]], [0]), id="type index a bool"),
    pytest.param(forged([["builtins.list", 1]], [[0]], [0]), id="type entry of 2"),
    pytest.param(forged([[5, 1, []]], [[0]], [0]), id="type name not a string"),
    pytest.param(forged([["builtins.list", "1", []]], [[0]], [0]), id="version a string"),
    pytest.param(forged([["builtins.list", 1, [5]]], [[0]], [0]), id="field name not a string"),
    pytest.param(forged([["builtins.list", 1, ["x"]]], [[0]], [0]), id="adapter with fields"),
    pytest.param(forged([LIST], [[0, [5]]], [0]), id="reference past the end"),
    pytest.param(forged([LIST], [[0, [-5]]], [0]), id="reference before the start"),
    pytest.param(forged([LIST], [[0, []]], [0]), id="empty reference"),
    pytest.param(forged([LIST], [[0, ["x"]]], [0]), id="reference to a string"),
    pytest.param(forged([LIST], [[0, [0.0]]], [0]), id="reference to a float"),
    pytest.param(forged([LIST], [[0, [None]]], [0]), id="reference to None"),
    pytest.param(forged([LIST], [[0, [[0]]]], [0]), id="nested reference"),
    pytest.param(forged([LIST], [[0]], [1]), id="root past the end"),
    pytest.param(forged([], [], [0]), id="root with no records"),
    pytest.param(forged([LIST], [[0]], []), id="empty root reference"),
    pytest.param(forged([LIST], [[0]], [0, 0]), id="root array of 2"),
    pytest.param(forged([TUPLE], [[0, [0]]], [0]), id="tuple containing itself"),
    pytest.param(HEADER + b"\x93\x90\x90\xa2\xff\xfe", id="bad utf-8"),
    pytest.param(HEADER + b"\x91" * 100_000 + b"\xc0", id="deep nesting"),
    pytest.param(HEADER + b"\x93\x90\x90" + b"\x91" * 5000 + b"\xc0", id="deep root value"),
])
def test_malformed_structure_is_format_error(data):
    with pytest.raises(FormatError):
        autosave.loads(data)


@pytest.mark.parametrize("data", [
    pytest.param(forged([], [], EXT0), id="unset-slot marker as root"),
    pytest.param(forged([LIST], [[0, EXT0]], [0]), id="unset-slot marker in a list"),
])
def test_forbidden_value_shapes_are_format_error(data):
    with pytest.raises(FormatError, match="unset-slot marker"):
        autosave.loads(data)


def test_reference_array_is_read_by_its_first_element():
    # docs/format.md: writers write one element; readers take the first.
    assert autosave.loads(forged([LIST, LIST], [[0], [1, [0, 5]]], [1])) == [[]]


# Adapter payloads are documented beside each adapter in autosave/model/adapters/.
@pytest.mark.parametrize("name, payload", [
    ("datetime.date", [2024, 13, 1]),
    ("datetime.date", ["2024", 1, 1]),
    ("datetime.datetime", [2024, 1, 1, 25, 0, 0, 0, None, 0]),
    ("datetime.timedelta", [1, 2]),
    ("datetime.timezone", [5, None]),
    ("decimal.Decimal", ["9" * 20_000]),
    ("decimal.Decimal", ["not a number"]),
    ("fractions.Fraction", [1, 0]),
    ("fractions.Fraction", [1.5, 2]),
    ("builtins.range", [0, 10, 0]),
    ("builtins.complex", [1, 2]),
    ("builtins.int", ["123"]),
    ("builtins.bytearray", [5]),
    ("builtins.dict", ["odd"]),
    ("builtins.set", [[0]]),
    ("collections.deque", [-1]),
    ("collections.deque", ["x"]),
    ("collections.defaultdict", [5]),
    ("uuid.UUID", [b"short"]),
    ("zoneinfo.ZoneInfo", ["../../../etc/passwd"]),
    ("zoneinfo.ZoneInfo", ["/etc/passwd"]),
    ("zoneinfo.ZoneInfo", ["No/Such_Zone"]),
    ("random.Random", [3, 1, 2, None]),
    ("itertools.count", ["a", 1]),
    ("builtins.singleton", ["Nope"]),
    ("autosave.cell", [1, 2]),
    ("functools.partial", [1, 2, 3, 4]),
    ("weakref.ref", [5]),
    ("autosave.global", [5]),
    ("autosave.function", [5, 5, 5, 5, 5, 5, 5, 5]),
    ("pathlib.PurePosixPath", [5]),
])
def test_bad_adapter_payloads_are_load_errors(name, payload):
    # "builtins.set", [[0]]: a set holding itself, which is unhashable.
    data = forged([[name, 1, []]], [[0, *payload]], [0])
    with pytest.raises(LoadError):
        autosave.loads(data)


def test_wrong_field_count_is_format_error():
    body = decode_body(autosave.dumps(Bait(1, 2)))
    types, records, root = body
    (record,) = [r for r in records if types[r[0]][0] == "test_hostile_input.Bait"]
    record.append(None)   # one value more than the type entry has fields
    with pytest.raises(FormatError):
        autosave.loads(encode(body))


@pytest.mark.parametrize("old, new", [
    ("ANGRY", "FURIOUS"),                                     # enum member gone
    ("test_hostile_input.Bait", "test_hostile_input.Gone"),   # class gone
    ("test_hostile_input/asset", "unknown-asset"),            # asset not registered
    ("bump", "vanish"),                                       # not a method any more
])
def test_names_that_do_not_resolve_are_incompatible(old, new):
    with pytest.raises(IncompatibleSaveError):
        autosave.loads(rename(SAMPLE, old, new))


def test_hook_errors_are_load_errors():
    c = Checked()
    c.n = -1
    with pytest.raises(LoadError):
        autosave.loads(autosave.dumps(c))
    c.n = "x"   # __setstate__ refuses it
    with pytest.raises(LoadError):
        autosave.loads(autosave.dumps(c))


def test_load_of_a_corrupt_file_is_format_error_naming_the_file(tmp_path):
    path = tmp_path / "corrupt.asv"
    path.write_bytes(SAMPLE[:-3])
    with pytest.raises(FormatError) as info:
        autosave.load(path)
    assert str(path) in "\n".join(getattr(info.value, "__notes__", []))


# -- absurd declared sizes ----------------------------------------------------------------


@pytest.mark.parametrize("data", [
    pytest.param(HEADER + b"\xdd\xff\xff\xff\xff", id="array32 body"),
    pytest.param(HEADER + b"\x93\x90\xdd\xff\xff\xff\xff", id="array32 records"),
    pytest.param(HEADER + b"\x93\xdd\xff\xff\xff\xff", id="array32 types"),
    pytest.param(HEADER + b"\x93\x90\x91\xdc\xff\xff", id="array16 record"),
    pytest.param(HEADER + b"\x93\x90\x90\xc6\xff\xff\xff\xff", id="bin32"),
    pytest.param(HEADER + b"\x93\x90\x90\xdb\xff\xff\xff\xff", id="str32"),
    pytest.param(HEADER + b"\x93\x90\x90\xdf\xff\xff\xff\xff", id="map32"),
    pytest.param(HEADER + b"\x93\x90\x90\xc9\xff\xff\xff\xff\x00", id="ext32"),
    pytest.param(HEADER + b"\x93\x90\x90\xdd\x7f\xff\xff\xff" + b"\xc0" * 1000, id="array32 short"),
])
def test_absurd_declared_sizes_fail_fast_without_allocating(data):
    tracemalloc.start()
    try:
        start = time.perf_counter()
        with pytest.raises(FormatError):
            autosave.loads(data)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 1_000_000, f"loading {len(data)} bytes allocated {peak} bytes"


# -- trust: forged names ------------------------------------------------------------------

FORGED_NAMES = ["os.system", "subprocess.Popen", "builtins.eval", "builtins.exec",
                "builtins.__import__", "builtins.getattr", "builtins.open", "posix.system",
                "importlib.import_module", "sys.modules", "shutil.rmtree", "pickle.loads",
                "ctypes.CDLL", "antigravity.x", "this.x", "os"]
NEVER_IMPORTED = ["antigravity", "this"]


def where_names_go():
    """Real saves, each with the name 'test_hostile_input.Bait' in one role."""
    return {
        "type": autosave.dumps(Bait(1)),                 # the type table
        "global": autosave.dumps([Bait]),                # a class as a value
        "reduce": autosave.dumps(Call(Bait, 1)),         # a reduce callable
    }


SAVES_NAMING_BAIT = where_names_go()
SAVE_WITH_CLOSURE = autosave.dumps(make_closure())


@pytest.fixture
def no_new_imports():
    for name in NEVER_IMPORTED:
        assert name not in sys.modules, f"precondition: {name} must not be imported yet"
    before = set(sys.modules)
    yield
    assert set(sys.modules) - before == set(), "loading a forged save imported modules"


@pytest.mark.parametrize("role", sorted(SAVES_NAMING_BAIT))
@pytest.mark.parametrize("name", FORGED_NAMES)
def test_forged_names_are_untrusted_and_import_nothing(no_new_imports, role, name):
    helpers.Tripwire.calls.clear()
    data = rename(SAVES_NAMING_BAIT[role], "test_hostile_input.Bait", name)
    with pytest.raises(UntrustedTypeError):
        autosave.loads(data)


@pytest.mark.parametrize("module", ["os", "antigravity", "this", "subprocess", "builtins"])
def test_function_records_in_forged_modules_are_untrusted(no_new_imports, module):
    data = rename(SAVE_WITH_CLOSURE, "test_hostile_input", module)
    with pytest.raises(UntrustedTypeError):
        autosave.loads(data)


def test_names_in_a_module_that_is_not_allowed_are_untrusted(no_new_imports):
    # helpers is imported, but it is not an allowed namespace.
    for role, data in SAVES_NAMING_BAIT.items():
        with pytest.raises(UntrustedTypeError):
            autosave.loads(rename(data, "test_hostile_input.Bait", "helpers.Tripwire"))
    assert helpers.Tripwire.calls == []


def test_empty_type_name_is_a_load_error():
    with pytest.raises((FormatError, UntrustedTypeError)):
        autosave.loads(forged([["", 1, []]], [[0]], [0]))


def test_reduce_callable_must_be_a_class():
    data = rename(SAVES_NAMING_BAIT["reduce"], "test_hostile_input.Bait", "builtins.sorted")
    with pytest.raises(LoadError):
        autosave.loads(data)




@pytest.mark.parametrize("role, name", [
    ("reduce", "test_hostile_input.helpers.Tripwire"),   # would call Tripwire(1)
    ("type", "test_hostile_input.helpers.Tripwire"),     # would allocate a Tripwire
    ("global", "test_hostile_input.os.system"),          # would hand out os.system
    ("global", "test_hostile_input.subprocess.Popen"),
    ("global", "test_hostile_input.os"),                 # a module as a value
])
def test_names_reached_through_an_allowed_modules_imports_are_untrusted(role, name):
    helpers.Tripwire.calls.clear()
    data = rename(SAVES_NAMING_BAIT[role], "test_hostile_input.Bait", name)
    try:
        with pytest.raises(UntrustedTypeError):
            autosave.loads(data)
    finally:
        assert helpers.Tripwire.calls == [], "the load called a class it must not know"


# -- trust: reduce records may not chain standard-library callables into arbitrary calls ---



def gadget_save():
    """A save, written by the real writer from Call objects, that contains no allowed
    class at all: only standard-library names. On load it would evaluate

        subclasses = object.__subclasses__()
        by_name = dict(zip([c.__name__ for c in subclasses], subclasses))
        by_name["Tripwire"]("pwned")

    helpers.Tripwire stands in for subprocess.Popen or io.FileIO."""
    subs = Call(list, Call(map, Call(operator.methodcaller, "__subclasses__"), [object]))
    names = Call(list, Call(map, list, Call(map, map, [Call(operator.attrgetter, "__name__")],
                                            subs)))
    by_name = Call(list, Call(map, dict, Call(map, zip, names, subs)))
    cls = Call(list, Call(map, Call(operator.itemgetter, "Tripwire"), by_name))
    return autosave.dumps(Call(list, Call(map, Call(operator.methodcaller, "__call__", "pwned"),
                                          cls)))


def test_reduce_records_cannot_chain_into_arbitrary_calls():
    data = gadget_save()
    assert b"test_hostile_input" not in data, "the save must not need an allowed class"
    helpers.Tripwire.calls.clear()
    try:
        with pytest.raises(LoadError):
            autosave.loads(data)
    finally:
        assert helpers.Tripwire.calls == [], "the load instantiated a class it must not know"


def test_reduce_records_cannot_make_the_loader_loop_forever(tmp_path):
    # collections.deque(itertools.count(), 0) consumes an endless iterator in C; run the
    # load in a child process so a hang cannot take the test run with it.
    path = tmp_path / "loop.asv"
    path.write_bytes(autosave.dumps(Call(collections.deque, itertools.count(), 0)))
    script = textwrap.dedent(f"""
        import autosave
        try:
            autosave.loads(open({str(path)!r}, "rb").read())
        except autosave.LoadError:
            print("LoadError")
        else:
            print("loaded")
    """)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=5, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("loading the save did not finish within 5 s")
    assert result.stdout.strip() == "LoadError", result.stderr


def test_cycle_marks_are_advisory():
    # docs/format.md: a record referring to a later record is marked ~t. A file that
    # omits the mark, or marks a record that needs none, still loads the same graph.
    lst = []
    lst.append(lst)
    honest = autosave.dumps({"loop": lst})
    types, records, root = msgpack.unpackb(forge.pack(forge.records_body(honest)))
    plain = [[~r[0] if r[0] < 0 else r[0], *r[1:]] for r in records]
    marked = [[~r[0] if r[0] >= 0 else r[0], *r[1:]] for r in records]
    for variant in (plain, marked):
        back = autosave.loads(HEADER + msgpack.packb([types, variant, root]))
        assert back["loop"][0] is back["loop"]
