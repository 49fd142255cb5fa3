"""One anatomy of an object (autosave/model/anatomy.py): the walk's records, the set-order
digests and the error paths / structural index take an object apart the same way.

Two attacks: the parts each of the three sees are compared, object by object, on
generated graphs (the walk's are read from the records it really makes, not from the
anatomy module); and the promise the drift broke is attacked directly: what a transient
field holds never changes the bytes.
"""

import collections
import dataclasses
import enum
import functools

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave.format import kernels
from autosave.format.wire import INLINE_TYPES
from autosave.model.anatomy import labelled_parts
from autosave.saving.order import parts_of
from autosave.saving.saver import Saver
from test_graph_properties import build, graph_specs

autosave.allow(__name__)


@attrs.define(eq=False)
class Item:
    name: str


@attrs.define(eq=False, slots=False)
class DictRoot:
    items: set
    cache: object = attrs.field(default=None, metadata=autosave.transient)
    favorite: object = None


@attrs.define(eq=False)
class SlotRoot:
    items: set
    cache: object = attrs.field(default=None, metadata=autosave.transient)
    favorite: object = None


class PlainRoot:
    __autosave_transient__ = ("cache",)

    def __init__(self, items, cache, favorite):
        self.items, self.cache, self.favorite = items, cache, favorite


@pytest.mark.parametrize("root_class", [DictRoot, SlotRoot, PlainRoot])
@pytest.mark.parametrize("python_loops", [False, True])
def test_what_a_transient_field_holds_never_changes_the_bytes(root_class, python_loops):
    # Two identical objects in a set; the one a transient field holds used to come
    # first in the structural index, so the later reference to `a` pointed at the first
    # set member or at the second depending on what the transient field held.
    a, b = Item("x"), Item("x")
    with kernels.python_loops() if python_loops else _nothing():
        saves = {autosave.dumps(root_class({a, b}, cache=held, favorite=a))
                 for held in (a, b, None, [b, a], {"k": b})}
    assert len(saves) == 1


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


@attrs.define(eq=False, slots=False)
class Holder:
    graph: object
    first: object = attrs.field(default=None, metadata=autosave.transient)
    second: object = attrs.field(default=None, metadata=autosave.transient)
    later: object = None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=graph_specs(), picks=st.lists(st.integers(0, 10 ** 6), min_size=3, max_size=3))
def test_generated_graphs_save_alike_whatever_transient_fields_hold(spec, picks):
    graph = build(spec)
    nodes = graph["all"]
    twins = [Item("twin"), Item("twin")]
    graph["twins"] = set(twins)       # a tie only the structural index breaks

    def pick(i):
        pool = [*nodes, *twins]
        return pool[picks[i] % len(pool)]

    plain = Holder(graph, later=twins[0])
    held = Holder(graph, first=pick(0), second=pick(1), later=twins[0])
    held_twin = Holder(graph, first=twins[1], second=pick(2), later=twins[0])
    for loops in (_nothing, kernels.python_loops):
        with loops():
            expected = autosave.dumps(plain)
            assert autosave.dumps(held) == expected
            assert autosave.dumps(held_twin) == expected


# -- the three readers of an object's parts, compared --------------------------------


class RecordingSaver(Saver):
    """A reflective save with every object in a record of its own (no batches), which
    notes the values each record was made from: the walk's own view of the parts."""

    def __init__(self, seen):
        super().__init__(generated=False)
        self.seen = seen             # outlives the walk, which forgets itself
        self.made_of = {}            # id(obj) -> the cells of the objects its record holds
        self.objects = seen["objects"] = {}

    def plain_handler_for(self, cls):
        from autosave.model import dispatch
        kind, detail = dispatch.kind_of(cls)
        handler = self.record_handler_for(cls, kind, detail)

        def recording(obj):
            rec = handler(obj)
            if rec is not None:
                self.objects[id(obj)] = obj
                self.made_of[id(obj)] = [p for p in rec[1:] if p.__class__ is list]
            return rec
        return recording

    def check_walk(self):
        super().check_walk()
        by_cell = {id(cell): key for key, cell in self.memo.items()}
        self.seen["made"] = dict(self.made)
        self.seen["made_of"] = {key: sorted(by_cell[id(cell)] for cell in cells)
                                for key, cells in self.made_of.items()}


def _object_ids(values):
    return sorted(id(v) for v in values
                  if v.__class__ not in INLINE_TYPES and v is not autosave.format.wire.ABSENT)


def assert_one_anatomy(root):
    with kernels.python_loops():
        seen = {}
        RecordingSaver(seen).run(root)
        walked, objects, made = seen["made_of"], seen["objects"], seen["made"]
    assert walked, "the walk made no record"
    kinds, keep = {}, []
    for key, obj in objects.items():
        labelled = _object_ids(v for _, v in labelled_parts(obj, made, kinds))
        assert labelled == walked[key], (type(obj), "labelled parts differ from the record")
        _, digested, _ = parts_of(obj, keep, kinds)
        if key not in made:
            assert _object_ids(digested) == walked[key], (type(obj), "digest parts differ")
            continue
        # __getstate__ / __reduce__ make new objects at each call: the digest's are
        # compared one level down with those the walk saved
        given = made[key] if isinstance(made[key], list) else [made[key]]
        assert len(digested) == len(given)
        for fresh, saved in zip(digested, given):
            if fresh is not saved and fresh.__class__ not in INLINE_TYPES:
                assert (_object_ids(v for _, v in labelled_parts(fresh, None, kinds))
                        == _object_ids(v for _, v in labelled_parts(saved, None, kinds)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(spec=graph_specs())
def test_walk_digest_and_paths_see_the_same_parts_of_generated_graphs(spec):
    assert_one_anatomy(build(spec))


class Colour(enum.Enum):
    RED = [1]


@dataclasses.dataclass
class WithState:
    hp: list

    def __getstate__(self):
        return {"hp": self.hp}

    def __setstate__(self, state):
        self.hp = state["hp"]


class Bag(list):
    def __init__(self, items=(), owner=None):
        super().__init__(items)
        self.owner = owner


@attrs.define(eq=False, slots=False)
class Cached:
    value: list
    cache: object = attrs.field(default=None, metadata=autosave.transient)


class Reduced:
    def __init__(self, a, items=None):
        self.a, self.items = a, items if items is not None else []

    def __reduce__(self):
        return (Reduced, (self.a,), {"a": self.a}, iter(self.items))

    def extend(self, items):
        self.items.extend(items)


autosave.reconstructor(Reduced)


def _closure(cell_value):
    def inner():
        return cell_value
    return inner


def test_every_kind_of_object_has_one_anatomy():
    shared = [1, 2]
    root = {
        "partial": functools.partial(_closure, shared),
        "keywords": functools.partial(_closure, cell_value=shared),
        "method": Item("m").__repr__,
        "closure": _closure(shared),
        "enum": Colour.RED,
        "state": WithState(shared),
        "bag": Bag([shared], owner=Item("o")),
        "deque": collections.deque([shared], maxlen=4),
        "ordered": collections.OrderedDict(a=shared),
        "cached": Cached(shared, cache=[Item("gone")]),
        "exception": ValueError(shared),
        "reduce": Reduced(shared, [shared]),
    }
    assert_one_anatomy(root)
