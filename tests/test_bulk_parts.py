"""A record of many parts (a big list, set, dict or tuple) files the objects it meets
first in bulk when a visit of each would have filed it in its batch
(``Batches.refer_parts``): generated wide containers of every kind of part -- batched
classes of several shapes, value-hashed ones that fit their batch and ones that do
not, tuples, enums, records, objects met before, repeats -- give the same bytes with
the bulk path as visited one by one, with the C and the Python loops, and load back."""

import collections
import dataclasses
import enum

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.format.kernels import python_loops
from autosave.saving import walk
from helpers import assert_isomorphic

autosave.allow(__name__)


@attrs.define(eq=False)
class Slot:
    a: object = None


class Plain:
    """Its instances' __dict__s take several shapes: a batch per shape."""


@dataclasses.dataclass(frozen=True)
class Key:
    x: object
    y: object


Pair = collections.namedtuple("Pair", "x y")


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Kept:
    """A record: saved by its __getstate__, never in a batch."""

    def __init__(self, v=None):
        self.v = v

    def __getstate__(self):
        return {"v": self.v}

    def __setstate__(self, state):
        self.v = state["v"]


ATOMS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                  st.text(max_size=3), st.binary(max_size=2))
KINDS = ("atom", "slot", "plain", "key", "key-deep", "pair", "tuple", "tuple-deep",
         "colour", "kept", "shared", "repeat")


def part(draw, kind, shared, made):
    if kind == "atom":
        return draw(ATOMS)
    if kind == "slot":
        return Slot(draw(ATOMS))
    if kind == "plain":
        p = Plain()
        for name in draw(st.lists(st.sampled_from("pqr"), max_size=3, unique=True)):
            setattr(p, name, draw(ATOMS))
        return p
    if kind == "key":                       # inline fields: fits its batch
        return Key(draw(st.integers(0, 9)), draw(st.text(max_size=2)))
    if kind == "key-deep":                  # holds an object: a record
        return Key(draw(st.integers(0, 9)), Slot(1))
    if kind == "pair":
        return Pair(draw(st.integers(0, 99)), draw(st.floats(allow_nan=False)))
    if kind == "tuple":
        return (draw(st.integers(0, 99)), draw(st.text(max_size=2)))
    if kind == "tuple-deep":
        return (draw(st.integers(0, 9)), Colour.RED, Key(1, 2))
    if kind == "colour":
        return draw(st.sampled_from(list(Colour)))
    if kind == "kept":
        return Kept(draw(ATOMS))
    if kind == "shared":
        return draw(st.sampled_from(shared))
    return draw(st.sampled_from(made)) if made else draw(ATOMS)      # a repeat


@st.composite
def wide_states(draw):
    shared = [Slot(0), Plain(), Key(0, "s"), (1, 2), Kept()]
    containers = []
    for _ in range(draw(st.integers(1, 4))):
        kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=3))
        made = []
        for _ in range(draw(st.integers(2, 48))):
            made.append(part(draw, draw(st.sampled_from(kinds)), shared, made))
        shape = draw(st.sampled_from(["list", "tuple", "set", "dict", "frozenset"]))
        hashable = [p for p in made if not isinstance(p, (Plain, Slot, Kept)) or
                    type(p).__hash__ is not None]
        if shape == "list":
            containers.append(made)
        elif shape == "tuple":
            containers.append(tuple(made))
        elif shape in ("set", "frozenset"):
            containers.append((set if shape == "set" else frozenset)(hashable))
        else:                           # keys of their own: values of any kind
            keys = draw(st.sampled_from([lambda i: Key(i, "k"), lambda i: Slot(i),
                                         lambda i: Pair(i, 0.5)]))
            containers.append(dict(zip(map(keys, range(len(made))), made)))
    first = draw(st.sampled_from(["shared first", "containers first"]))
    return [shared, *containers] if first == "shared first" else [*containers, shared]


def dumps_one_by_one(state, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(walk, "BULK_PARTS", 10 ** 9)
        return autosave.dumps(state)


@settings(max_examples=120, deadline=None)
@given(wide_states())
def test_bulk_filing_gives_the_bytes_of_a_visit_each(state):
    with pytest.MonkeyPatch.context() as monkeypatch:
        data = autosave.dumps(state)
        assert dumps_one_by_one(state, monkeypatch) == data
        with python_loops():
            assert autosave.dumps(state) == data
            assert dumps_one_by_one(state, monkeypatch) == data
    loaded = autosave.loads(data)
    assert autosave.dumps(loaded) == data
    assert_isomorphic(state, loaded)


def plain(shape):
    p = Plain()
    for name in shape:
        setattr(p, name, 1)
    return p


def test_shapes_met_around_another_class_keep_their_batch_order(monkeypatch):
    """A batch per shape is made as its first object is filed: a class met between two
    shapes (a dict's values: shape p, a Slot, shape q) puts its batch between them
    when visited one by one, so the bulk path leaves such a mix to the visits."""
    values = [plain("p"), Slot(1), plain("q")] * 8
    state = [dict(zip((Key(i, "k") for i in range(24)), values))]
    data = autosave.dumps(state)
    assert dumps_one_by_one(state, monkeypatch) == data


def test_a_wide_set_of_value_keys_is_filed_in_bulk(monkeypatch):
    """The path is taken: a set of frozen keys met first files them in one call."""
    filed = []
    original = walk.Walker.__init__

    def spy(self):
        original(self)
        refer = self.batches.refer_parts
        self.batches.refer_parts = lambda t, parts: filed.append(refer(t, parts)) or filed[-1]
        self.mention, self.refs = self._make_mention()

    monkeypatch.setattr(walk.Walker, "__init__", spy)
    state = {Key(i, "k") for i in range(40)}
    data = autosave.dumps(state)
    assert filed and filed[0] is not None
    monkeypatch.undo()
    assert dumps_one_by_one(state, pytest.MonkeyPatch()) == data
