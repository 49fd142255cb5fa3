"""Property tests: random object graphs survive a round trip as isomorphic copies.

The strategy builds N nodes of a few kinds -- slotted attrs nodes and plain ``__dict__``
nodes (identity-hashed), frozen attrs classes, frozen dataclasses and namedtuples (hashed by value,
used as dict keys and set members), lists, dicts, sets, tuples and frozensets -- joined
by random edges, so graphs have sharing, cycles (also through immutable tuples and
frozen keys), self-references and keys whose hash depends on other nodes.
"""

import collections
import dataclasses
import gc
import os
import pickle
import random

import attrs
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import autosave
from helpers import NotIsomorphic, assert_isomorphic

autosave.allow(__name__)


@attrs.define(eq=False)
class SlotNode:
    a: object = None
    b: object = None
    c: object = None


class DictNode:
    pass


@attrs.frozen
class FrozenKey:
    x: object
    y: object


@dataclasses.dataclass(frozen=True)
class DataKey:
    x: object
    y: object


Pair = collections.namedtuple("Pair", "x y")      # a tuple subclass, hashed by value

MUTABLE = ("slot", "dictnode", "list", "dict", "set")
IMMUTABLE = ("fkey", "dkey", "ntuple", "tuple", "frozenset")
ATTR_NAMES = ("p", "q", "r", "s")

atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2 ** 70), 2 ** 70),
    st.sampled_from([2 ** 64 - 1, 2 ** 64, -(2 ** 63), -(2 ** 63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.sampled_from(["a", "b", "\u00e9", "\ud800", "\U0001f600", "\x00"]), max_size=4),
    st.binary(max_size=4),
)


@st.composite
def graph_specs(draw, max_nodes=10):
    """(kinds, edges): a plain description of a graph, built by ``build``.

    An edge is ("ref", j) or ("atom", value). Immutable nodes are built in index order
    from finished parts, so they refer to earlier nodes or to mutable ones (allocated
    first, filled last); mutable nodes may refer to anything, themselves included.
    """
    n = draw(st.integers(1, max_nodes))
    kinds = draw(st.lists(st.sampled_from(MUTABLE + IMMUTABLE), min_size=n, max_size=n))
    hashable = {i: k in ("slot", "dictnode") for i, k in enumerate(kinds) if k in MUTABLE}
    edges = [None] * n

    def edge(i, need_hash):
        if kinds[i] in MUTABLE:
            targets = list(range(n))
        else:
            targets = [j for j in range(n) if j < i or kinds[j] in MUTABLE]
        if need_hash:
            targets = [j for j in targets if hashable[j]]
        if targets and draw(st.integers(0, 3)):
            return ("ref", draw(st.sampled_from(targets)))
        return ("atom", draw(atoms))

    def is_hashable(e):
        return e[0] == "atom" or hashable[e[1]]

    sizes = st.integers(0, 4)
    # Immutables first, so a mutable node knows whether an immutable target is hashable.
    order = sorted(range(n), key=lambda i: kinds[i] in MUTABLE)
    for i in order:
        k = kinds[i]
        if k in ("fkey", "dkey", "ntuple"):
            edges[i] = [edge(i, False), edge(i, False)]
            hashable[i] = all(map(is_hashable, edges[i]))
        elif k == "tuple":
            edges[i] = [edge(i, False) for _ in range(draw(sizes))]
            hashable[i] = all(map(is_hashable, edges[i]))
        elif k in ("frozenset", "set"):
            edges[i] = [edge(i, True) for _ in range(draw(sizes))]
            hashable[i] = k == "frozenset"
        elif k == "dict":
            edges[i] = [[edge(i, True), edge(i, False)] for _ in range(draw(sizes))]
        elif k == "dictnode":
            names = draw(st.permutations(ATTR_NAMES))[:draw(st.integers(0, 4))]
            edges[i] = [[name, edge(i, False)] for name in names]
        else:  # slot, list
            edges[i] = [edge(i, False) for _ in range(3 if k == "slot" else draw(sizes))]
    return kinds, edges


def build(spec):
    """The graph described by spec: ``{"entry": node 0, "all": [every node]}``.

    Every node is also reachable through the "all" list, so the isomorphism checker
    pairs every object along an ordered path before it has to match set members.
    """
    kinds, edges = spec
    n = len(kinds)
    objs = [None] * n
    for i, k in enumerate(kinds):
        if k in MUTABLE:
            objs[i] = {"slot": SlotNode, "dictnode": DictNode, "list": list, "dict": dict,
                       "set": set}[k]()

    def val(e):
        return objs[e[1]] if e[0] == "ref" else e[1]

    for i, k in enumerate(kinds):       # immutables, from finished parts
        if k == "fkey":
            objs[i] = FrozenKey(val(edges[i][0]), val(edges[i][1]))
        elif k == "dkey":
            objs[i] = DataKey(val(edges[i][0]), val(edges[i][1]))
        elif k == "ntuple":
            objs[i] = Pair(val(edges[i][0]), val(edges[i][1]))
        elif k == "tuple":
            objs[i] = tuple(map(val, edges[i]))
        elif k == "frozenset":
            objs[i] = frozenset(map(val, edges[i]))
    for i, k in enumerate(kinds):       # then fill the mutables
        obj = objs[i]
        if k == "slot":
            obj.a, obj.b, obj.c = map(val, edges[i])
        elif k == "dictnode":
            for name, e in edges[i]:
                setattr(obj, name, val(e))
        elif k == "list":
            obj.extend(map(val, edges[i]))
        elif k == "dict":
            for ke, ve in edges[i]:
                obj[val(ke)] = val(ve)
        elif k == "set":
            obj.update(map(val, edges[i]))
    return {"entry": objs[0], "all": objs}


def check_roundtrip(graph):
    data = autosave.dumps(graph)
    assert autosave.dumps(graph) == data, "dumping the same graph twice gave different bytes"
    loaded = autosave.loads(data)
    assert_isomorphic(graph, loaded)
    again = autosave.dumps(loaded)
    assert again == data, "dumps(loads(b)) != b"
    assert_isomorphic(graph, autosave.loads(again))


FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)   # 0: the seeded CI set
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])


# The minimal failing graph of test_frozen_key_over_a_frozenset_on_a_cycle, as a spec:
# node 0 a frozenset {node 1}; node 1 a plain object with p=node 0, q=node 2; node 2 a
# set {node 3}; node 3 a frozen key (node 0, None).
FROZEN_KEY_BUG_SPEC = (["frozenset", "dictnode", "set", "fkey"],
                       [[("ref", 1)], [["p", ("ref", 0)], ["q", ("ref", 2)]], [("ref", 3)],
                        [("ref", 0), ("atom", None)]])


@pytest.mark.slow
@settings(max_examples=FUZZ or 250, **SETTINGS)
@given(graph_specs())
def test_random_graphs_round_trip_isomorphically(spec):
    graph = build(spec)
    check_roundtrip(graph)


@pytest.mark.slow
@settings(max_examples=FUZZ or 80, **SETTINGS)
@given(graph_specs(max_nodes=25))
def test_larger_random_graphs_round_trip_isomorphically(spec):
    graph = build(spec)
    check_roundtrip(graph)


@pytest.mark.slow
@settings(max_examples=FUZZ or 250, **SETTINGS)
@given(graph_specs(max_nodes=14))
@example(FROZEN_KEY_BUG_SPEC)
def test_random_graphs_with_frozensets_on_cycles_round_trip(spec):
    # Frozensets on cycles, with a regression example: a frozen key over a frozenset.
    graph = build(spec)
    check_roundtrip(graph)


@pytest.mark.slow
@settings(max_examples=FUZZ or 60, **SETTINGS)
@given(graph_specs(max_nodes=6))
def test_entry_node_alone_round_trips(spec):
    # The root need not be a container of everything: only what the entry reaches is saved.
    whole = build(spec)
    graph = whole["entry"]
    data = autosave.dumps(graph)
    loaded = autosave.loads(data)
    assert_isomorphic(graph, loaded)
    assert autosave.dumps(loaded) == data


# -- hand-picked shapes the generator must also get right -------------------------------


def test_tuple_containing_list_containing_the_tuple():
    lst = []
    tup = (lst, "t")
    lst.append(tup)
    for root in (tup, lst, [lst, tup], {"k": tup}):
        check_roundtrip(root)
    loaded = autosave.loads(autosave.dumps(tup))
    assert type(loaded) is tuple and type(loaded[0]) is list
    assert loaded[0][0] is loaded


def test_frozen_key_whose_hash_depends_on_a_node_in_a_cycle():
    node = SlotNode()
    key = FrozenKey(node, "k")
    table = {key: "value"}
    members = {key, DataKey(node, 1)}
    node.a, node.b, node.c = table, members, key
    check_roundtrip(node)
    loaded = autosave.loads(autosave.dumps(node))
    assert loaded.a[loaded.c] == "value", "the key must hash by its final fields"
    assert loaded.c in loaded.b and DataKey(loaded, 1) in loaded.b


@pytest.mark.parametrize("root", ["frozenset", "node"])
@pytest.mark.parametrize("key_class", [FrozenKey, DataKey])
def test_frozen_key_over_a_frozenset_on_a_cycle(key_class, root):
    node = DictNode()
    fs = frozenset([node])
    node.p = fs
    node.q = {key_class(fs, None)}
    loaded = autosave.loads(autosave.dumps(fs if root == "frozenset" else node))
    if root == "frozenset":
        (loaded,) = loaded
    assert loaded.p is next(iter(loaded.q)).x
    assert key_class(loaded.p, None) in loaded.q


@pytest.mark.parametrize("root", ["inner", "outer", "node"])
def test_two_frozensets_on_one_cycle(root):
    node = SlotNode()
    inner = frozenset([node])
    outer = frozenset([inner, node])
    node.c = outer
    loaded = autosave.loads(autosave.dumps({"inner": inner, "outer": outer, "node": node}[root]))
    if root == "inner":
        (loaded,) = loaded
    elif root == "outer":
        loaded = next(x for x in loaded if type(x) is SlotNode)
    assert loaded.c == frozenset([frozenset([loaded]), loaded])


def test_many_shared_references_to_one_object():
    shared = DictNode()
    shared.v = [1]
    graph = {"list": [shared] * 50, "tuple": (shared,) * 3, "set": {shared},
             "key": {FrozenKey(shared, 0): shared}}
    check_roundtrip(graph)
    loaded = autosave.loads(autosave.dumps(graph))
    first = loaded["list"][0]
    assert all(x is first for x in loaded["list"]) and loaded["tuple"][2] is first
    assert next(iter(loaded["set"])) is first and next(iter(loaded["key"])).x is first


def test_distinct_equal_objects_stay_distinct():
    a, b = [1], [1]
    fa, fb = FrozenKey(1, 2), FrozenKey(1, 2)
    loaded = autosave.loads(autosave.dumps([a, b, a, fa, fb]))
    assert loaded[0] is not loaded[1] and loaded[0] is loaded[2]
    assert loaded[3] == loaded[4] and loaded[3] is not loaded[4]




def test_set_of_indistinguishable_objects_is_byte_stable():
    # dumps(loads(b)) == b also when a set holds objects that only other paths tell apart.
    rng = random.Random(0)
    for trial in range(30):
        pool = [DictNode() for _ in range(40)]
        nodes = rng.sample(pool, 6)         # scattered ids, so hash order is arbitrary
        graph = [set(nodes), nodes]
        data = autosave.dumps(graph)
        loaded = autosave.loads(data)
        assert_isomorphic(graph, loaded)
        assert autosave.dumps(loaded) == data, f"trial {trial}: dumps(loads(b)) != b"


# -- the checker itself: it must be able to fail ----------------------------------------


def _mutual_cycle():
    x, y = SlotNode(), SlotNode()
    x.a, y.a = y, x
    return x


@pytest.mark.parametrize("original, bad_copy", [
    pytest.param(*(lambda s: ([s, s], [[1], [1]]))([1]), id="sharing lost"),
    pytest.param([[1], [1]], (lambda s: [s, s])([1]), id="distinct objects merged"),
    pytest.param([0.0], [-0.0], id="float sign bit"),
    pytest.param([float("nan")], [-float("nan")], id="nan sign bit"),
    pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, id="dict order"),
    pytest.param([(1,)], [[1]], id="type changed"),
    pytest.param([True], [1], id="bool became int"),
    pytest.param({FrozenKey(1, 2)}, {FrozenKey(1, 3)}, id="set member changed"),
    pytest.param(_mutual_cycle(), SlotNode(SlotNode(SlotNode())), id="cycle broken"),
    pytest.param((lambda d: (setattr(d, "p", 1), d)[1])(DictNode()), DictNode(),
                 id="attribute lost"),
])
def test_isomorphism_checker_detects_differences(original, bad_copy):
    with pytest.raises(NotIsomorphic):
        assert_isomorphic(original, bad_copy)


def test_isomorphism_checker_rejects_the_original_itself():
    graph = [SlotNode(1), {"a": [2]}]
    with pytest.raises(NotIsomorphic):
        assert_isomorphic(graph, graph)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(graph_specs())
def test_isomorphism_checker_accepts_a_pickle_copy(spec):
    # pickle is an independent deep copy that keeps sharing and cycles (copy.deepcopy
    # does not: it duplicates a set reached again while copying its own members). pickle
    # cannot rebuild a frozen key that lies on a cycle; such graphs are skipped here.
    graph = build(spec)
    try:
        copied = pickle.loads(pickle.dumps(graph, protocol=5))
    except AttributeError:
        assume(False)
    assert_isomorphic(graph, copied)


def garbage_left_by(operation):
    """What the cyclic collector finds after ``operation`` alone: the objects a call
    left in reference cycles (its own bookkeeping, never the graph, which is alive)."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        result = operation()
        return gc.collect(), result
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.slow
@settings(max_examples=FUZZ or 60, **SETTINGS)
@given(graph_specs(max_nodes=14))
def test_nothing_of_a_save_or_a_load_outlives_the_call(spec):
    graph = build(spec)
    left, data = garbage_left_by(lambda: autosave.dumps(graph))
    assert left == 0, f"dumps left {left} objects in reference cycles"
    left, loaded = garbage_left_by(lambda: autosave.loads(data))
    assert left == 0, f"loads left {left} objects in reference cycles"
    assert_isomorphic(graph, loaded)


def test_the_garbage_probe_sees_a_cycle_left_behind():
    def leaves_a_cycle():
        a = []
        a.append(a)
    assert garbage_left_by(leaves_a_cycle)[0] == 1


# A frozenset on a cycle whose members were digested in the order the set iterates in:
# a digest taken from the walk-state cache made the digest using it look stable.
SET_ORDER_CACHE_SPEC = (
    ["frozenset", "dictnode", "tuple", "slot", "frozenset", "slot"],
    [[("atom", None), ("ref", 1), ("ref", 5)], [["p", ("atom", False)], ["q", ("ref", 5)]],
     [("ref", 3)], [("atom", None), ("atom", None), ("ref", 0)],
     [("atom", None), ("ref", 0), ("ref", 2)], [("atom", False), ("ref", 4), ("atom", None)]])


def test_set_order_never_depends_on_the_order_members_are_digested_in():
    # Each copy allocates its objects elsewhere, so the sets iterate in other orders.
    data = autosave.dumps(build(SET_ORDER_CACHE_SPEC))
    for _ in range(60):
        graph = build(SET_ORDER_CACHE_SPEC)
        assert autosave.dumps(graph) == data
        assert autosave.dumps(autosave.loads(data)) == data


@settings(max_examples=FUZZ or 100, **SETTINGS)
@given(graph_specs(max_nodes=14))
def test_copy_is_what_a_save_and_a_load_give(spec):
    # copy() hands the walk's records straight to the loader: the result must be the
    # graph loads(dumps(x)) gives, to the byte.
    graph = build(spec)
    data = autosave.dumps(graph)
    copied = autosave.copy(graph)
    assert_isomorphic(graph, copied)
    assert autosave.dumps(copied) == data
    assert copied is not graph and copied["all"] is not graph["all"]


def test_copy_keeps_unset_slots_and_wide_ints():
    node = SlotNode.__new__(SlotNode)          # no slot set
    graph = [node, 2 ** 100, -(2 ** 70), {"n": node}]
    copied = autosave.copy(graph)
    assert not hasattr(copied[0], "a") and copied[3]["n"] is copied[0]
    assert copied[1:3] == [2 ** 100, -(2 ** 70)]
    assert autosave.dumps(copied) == autosave.dumps(graph)
