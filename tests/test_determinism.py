"""Same graph, same bytes: set members are ordered by the saved structure alone.

Every test here builds the same structure in ways that make ``hash()``/``id()`` order
differ (another PYTHONHASHSEED, other allocations, other insertion orders, the graph
loaded back from its own save) and demands identical bytes.
"""

import collections
import enum
import json
import os
import random
import subprocess
import sys
import weakref
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
import autosave.saving.order
from autosave.saving.saver import Saver
from autosave.format.wire import encode


autosave.allow(__name__)

TESTS = Path(__file__).parent
FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)


@attrs.frozen
class World:
    a: object = None
    b: object = None
    c: object = None


@attrs.define(eq=False)
class Node:
    a: object = None
    b: object = None


class Plain:
    pass


class Suit(enum.Enum):
    HEARTS = 1
    SPADES = 2


class Rank(enum.IntEnum):
    LOW = 1
    HIGH = 2


Pair = collections.namedtuple("Pair", "a b")


class Members(set):
    pass


class FrozenMembers(frozenset):
    pass


def dumps_twice(graph):
    """The bytes of graph, checked: saved twice the same, and again after a round trip."""
    data = autosave.dumps(graph)
    assert autosave.dumps(graph) == data
    assert autosave.dumps(autosave.loads(data)) == data, "dumps(loads(b)) != b"
    return data


# -- shapes from the field -------------------------------------------------------------

def nested_frozen(i):
    return World(a=World(b=World(c=i)))


def frozen_keys(i):
    return World(a=frozenset({World(b=i), World(c=str(i))}), b=f"k{i}")


def shared_members(n):
    shared = Node(a="shared")
    return {Node(a=shared, b=i % 3) for i in range(n)}


SHAPES = {
    # the three of the report
    "nested-frozen": lambda: {nested_frozen(i) for i in range(30)},
    "frozen-keys": lambda: {frozen_keys(i): i for i in range(30)},
    "deep-lists": lambda: {Node(a=[[[i]]]) for i in range(30)},
    # strings hashed per process, members with cycles to the set and to each other
    "strings-in-members": lambda: {World(a=str(i), b=(f"x{i}",)) for i in range(40)},
    "mixed": lambda: {1, "a", b"b", 2.5, None, World(a="m"), Node(a="n"), (1, "t")},
    "cycle-to-set": lambda: _cycle_to_set(),
    "ring": lambda: _ring(25),
    "grid": lambda: _grid(6),
    "ties": lambda: {Node() for _ in range(20)},
    "shared-ties": lambda: shared_members(24),
    "referenced-after": lambda: _referenced_after(),
    "told-apart-by-another-set": lambda: _told_apart(),
    "member-in-progress": lambda: _member_in_progress(),
    "subclasses": lambda: [Members({Node(a=i) for i in range(10)}),
                           FrozenMembers({World(a=str(i)) for i in range(10)})],
    "weak": lambda: _weak(),
    "plain": lambda: {_plain(i) for i in range(15)},
    "nested-sets": lambda: {frozenset({World(a=i), World(a=str(i))}) for i in range(15)},
    # a tuple meeting several classes first: their batches (type entries) in its order
    "tuple-meets-classes": lambda: [(Rank.LOW, Suit.HEARTS, World(c=1), Pair(1, 2), Rank.HIGH),
                                    {Pair(Suit.SPADES, 1), Pair(3, 4)}],
}


def _cycle_to_set():
    s = set()
    nodes = [Node(a=s, b=i) for i in range(20)]
    s.update(nodes)
    return {"set": s, "first": nodes[0]}


def _ring(n):
    nodes = [Node(b=i % 2) for i in range(n)]
    for i, node in enumerate(nodes):
        node.a = nodes[(i + 1) % n]
    return set(nodes)


def _grid(n):
    cells = [[Node() for _ in range(n)] for _ in range(n)]
    for y in range(n):
        for x in range(n):
            cells[y][x].a = cells[y][(x + 1) % n]
            cells[y][x].b = cells[(y + 1) % n][x]
    cells[0][0].b = "corner"
    return {c for row in cells for c in row}


def _referenced_after():
    a, b = Node(a="same"), Node(a="same")
    return {"members": {a, b}, "the_first": a}


def _told_apart():
    a, b, c = Node(a="same"), Node(a="same"), Node(a="same")
    return [{a, b, c}, {Node(a=a), Node(b=b)}]


def _weak():
    objs = [Node(a=i) for i in range(12)]
    return {"objs": objs, "ws": weakref.WeakSet(objs[::2]),
            "wk": weakref.WeakKeyDictionary({o: i for i, o in enumerate(objs[1::2])})}


def _plain(i):
    p = Plain()
    p.name = f"p{i}"
    p.tags = {f"t{i}", f"u{i}"}
    return p


def test_the_reported_shapes_are_stable_in_process():
    for name, make in SHAPES.items():
        noise = [object() for _ in range(random.randrange(100))]   # other ids
        assert dumps_twice(make()) == dumps_twice(make()), name
        del noise


CHILD = """
import hashlib, json, random, sys
sys.path.insert(0, {tests!r})
[object() for _ in range(random.randrange(1000))]
import autosave, test_determinism
out = {{}}
for name, make in test_determinism.SHAPES.items():
    data = autosave.dumps(make())
    assert autosave.dumps(autosave.loads(data)) == data, name
    out[name] = hashlib.sha256(data).hexdigest()
print(json.dumps(out))
"""


def run_child(code, seed):
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_reported_shapes_give_the_same_bytes_in_eight_processes():
    code = CHILD.format(tests=str(TESTS))
    runs = [run_child(code, seed) for seed in (0, 1, 2, 3, 7, 42, 1234, 4294967295)]
    for name in SHAPES:
        assert len({run[name] for run in runs}) == 1, name


# -- random structures, built in shuffled orders -----------------------------------------

@st.composite
def structures(draw):
    """A random structure: nodes (identity-hashed Node, value-hashed World with string
    parts, lists, sets, frozensets, tuples, namedtuples; enum members as values) with
    random edges, so sets hold members with cycles
    and shared parts. Only node 0 is the root: many nodes are reached through sets
    alone."""
    n = draw(st.integers(2, 14))
    kinds = draw(st.lists(st.sampled_from(["node", "world", "list", "set", "frozenset",
                                           "tuple", "pair"]), min_size=n, max_size=n))
    kinds[0] = draw(st.sampled_from(["set", "list", "node"]))
    atoms = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y", "\ud800"]))
    # enum members, by name (a spec is passed to other processes as a literal): the
    # classes a tuple meets first decide their batches in the tuple's order
    members = st.sampled_from([f"{type(m).__name__}.{m.name}" for m in [*Suit, *Rank]])
    edges = []
    for i, kind in enumerate(kinds):
        size = (draw(st.integers(0, 4)) if kind in ("list", "set", "frozenset", "tuple")
                else 2)
        row = []
        for _ in range(size):
            if draw(st.booleans()):
                # immutables refer to earlier immutables or to mutables (no impossible
                # cycles); members of sets must hash: no lists, no sets
                targets = [j for j in range(n)
                           if (kinds[j] in ("node", "list", "set") or j < i)
                           and not (kind in ("set", "frozenset", "world", "tuple", "pair")
                                    and kinds[j] in ("list", "set"))]
                if targets:
                    row.append(("ref", draw(st.sampled_from(targets))))
                    continue
            if draw(st.integers(0, 3)) == 0:
                row.append(("member", draw(members)))
                continue
            row.append(("atom", draw(atoms)))
        edges.append(row)
    return kinds, edges


def build(spec, rng):
    """The structure of spec, with allocations and insertion orders from rng."""
    kinds, edges = spec
    objs, noise = [None] * len(kinds), []
    order = list(range(len(kinds)))
    rng.shuffle(order)
    for i in order:
        noise.append([object() for _ in range(rng.randrange(4))])
        objs[i] = {"node": Node, "list": list, "set": set}.get(kinds[i], lambda: None)()

    def val(e):
        if e[0] == "member":
            cls, name = e[1].split(".")
            return {"Suit": Suit, "Rank": Rank}[cls][name]
        return objs[e[1]] if e[0] == "ref" else e[1]

    for i, kind in enumerate(kinds):
        if kind == "world":
            a, b = map(val, edges[i])
            objs[i] = World(a=a, b=b, c=f"w{i}")
        elif kind == "frozenset":
            items = list(map(val, edges[i]))
            rng.shuffle(items)
            objs[i] = frozenset(items)
        elif kind == "tuple":
            objs[i] = tuple(map(val, edges[i]))
        elif kind == "pair":
            objs[i] = Pair(*map(val, edges[i]))
    for i, kind in enumerate(kinds):
        if kind == "node":
            objs[i].a, objs[i].b = map(val, edges[i])
        elif kind == "list":
            objs[i].extend(map(val, edges[i]))
        elif kind == "set":
            items = list(map(val, edges[i]))
            rng.shuffle(items)
            objs[i].update(items)
    return objs[0]


@pytest.mark.slow
@settings(max_examples=max(150, FUZZ), derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(structures(), st.integers(0, 2 ** 32))
def test_random_structures_give_the_same_bytes_whatever_the_build_order(spec, seed):
    rng = random.Random(seed)
    first = dumps_twice(build(spec, rng))
    assert dumps_twice(build(spec, rng)) == first


STRUCTURE_CHILD = """
import ast, hashlib, random, sys
sys.path.insert(0, {tests!r})
import autosave, test_determinism
rng = random.Random({seed})
out = []
for spec in ast.literal_eval(sys.stdin.read()):
    data = autosave.dumps(test_determinism.build(spec, rng))
    assert autosave.dumps(autosave.loads(data)) == data
    out.append(hashlib.sha256(data).hexdigest())
print(repr(out))
"""


@pytest.mark.slow
def test_random_structures_give_the_same_bytes_in_processes_with_other_hash_seeds():
    specs = []

    @settings(max_examples=max(40, FUZZ // 4), derandomize=True, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(structures())
    def collect(spec):
        specs.append(spec)
    collect()
    results = []
    for seed in (11, 2024, 999983):
        code = STRUCTURE_CHILD.format(tests=str(TESTS), seed=seed)
        done = subprocess.run([sys.executable, "-c", code], input=repr(specs), text=True,
                              env=dict(os.environ, PYTHONHASHSEED=str(seed)),
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr
        results.append(done.stdout)
    assert results[0] == results[1] == results[2]


# -- ties, engines, cost -------------------------------------------------------------------

def test_identical_members_referenced_from_outside_the_set():
    # Which of two identical members the dict refers to is visible in the bytes: the
    # member reached outside the set is told apart by its place in the graph.
    datas = set()
    for _ in range(20):
        a, b = Node(a="same"), Node(a="same")
        pair = [a, b]
        random.shuffle(pair)
        datas.add(dumps_twice({"members": set(pair), "the_first": a, "n": [b, 1]}))
    assert len(datas) == 1


def test_identical_members_told_apart_only_by_a_reference_from_another_set():
    datas = set()
    for _ in range(20):
        a, b = Node(a="same"), Node(a="same")
        pair = [a, b]
        random.shuffle(pair)
        noise = [object() for _ in range(random.randrange(50))]
        datas.add(dumps_twice([set(pair), {Node(a=a)}, frozenset({World(a=b)})]))
        del noise
    assert len(datas) == 1


def _member_in_progress():
    # x is an ancestor of the set it is a member of; y, the other member, refers to x
    # and x to y: y's digest seen from outside x differs from y's digest inside x.
    s = set()
    x, y = Node(), Node()
    x.a, x.b = s, y
    y.b = x
    s.update([x, y])
    return x


def test_a_member_in_progress_next_to_members_that_refer_to_it():
    datas = set()
    for _ in range(30):
        noise = [object() for _ in range(random.randrange(50))]
        datas.add(dumps_twice(_member_in_progress()))
        del noise
    assert len(datas) == 1


# Found by test_graph_properties on 3.12: frozenset {None, a, b} where a, in progress,
# holds a dict in progress and b, and b refers back to a.
IN_PROGRESS_SPEC = (
    ["slot", "tuple", "list", "tuple", "slot", "list", "fkey", "tuple", "list", "list", "fkey",
     "dictnode", "dict", "fkey", "list", "dictnode", "tuple", "slot", "frozenset", "fkey"],
    [[("atom", None)] * 3, [], [], [("atom", None)] * 3, [("atom", None)] * 3, [],
     [("atom", None)] * 2, [("atom", None), ("atom", None), ("ref", 2), ("ref", 15)], [], [],
     [("atom", None), ("ref", 2)], [["p", ("atom", None)], ["q", ("atom", None)], ["r", ("ref", 15)]],
     [[("atom", None), ("atom", None)], [("atom", None), ("atom", None)], [("ref", 17), ("atom", None)]],
     [("atom", None), ("ref", 2)], [("atom", None), ("atom", None), ("ref", 0)],
     [["p", ("ref", 12)], ["q", ("atom", None)], ["r", ("ref", 11)]],
     [("atom", None), ("atom", None), ("atom", None), ("ref", 2)],
     [("atom", False), ("ref", 18), ("ref", 2)], [("atom", None), ("ref", 11), ("ref", 15)],
     [("atom", None), ("atom", None)]])


def test_digests_kept_for_other_members_are_not_used_inside_a_member_in_progress():
    import test_graph_properties
    graph = test_graph_properties.build(IN_PROGRESS_SPEC)
    data = dumps_twice(graph)
    for _ in range(30):
        assert autosave.dumps(autosave.loads(data)) == data


def test_both_engines_write_the_same_bytes_for_every_shape():
    for name, make in SHAPES.items():
        graph = make()
        reflective = encode(*Saver(generated=False).run(graph))
        assert encode(*Saver().run(graph)) == reflective, name


@pytest.mark.slow
def test_digest_cost_is_linear_in_the_members_parts(monkeypatch):
    # A torus of linked cells in one set: every cell is on cycles with its neighbours,
    # so no digest can be reused between members, yet each traversal enters each cell
    # once; and a set of 2,000 members sharing one long chain digests the chain once.
    calls = [0]
    parts_of = autosave.saving.order.parts_of

    def counting(obj, keep, *cache):
        calls[0] += 1
        return parts_of(obj, keep, *cache)
    monkeypatch.setattr(autosave.saving.order, "parts_of", counting)
    torus = _grid(8)                       # 64 cells
    Saver(generated=False).run(torus)
    assert calls[0] <= 64 * 64 + 64        # one traversal of the torus per member

    calls[0] = 0
    chain = None
    for i in range(5000):
        chain = Node(a=chain, b=i)
    members = {Node(a=chain, b=i) for i in range(2000)}
    Saver(generated=False).run(members)
    assert calls[0] <= 2000 + 5000 + 10


@pytest.mark.slow
def test_a_member_holding_a_million_long_chain_is_digested_without_recursion():
    chain = None
    for i in range(200_000):
        chain = Node(a=chain)
    data = dumps_twice({Node(a=chain), Node(a=None)})
    assert autosave.loads(data)


def test_sets_of_only_plain_values_still_sort_by_value():
    data = autosave.dumps({"b", "a", "c"})
    assert data.index(b"\xa1a") < data.index(b"\xa1b") < data.index(b"\xa1c")


# -- nothing but SaveError escapes dumps -------------------------------------------------

def test_small_int_keys_of_a_weak_value_dict_beside_a_wide_int():
    n = Node(a="target")
    graph = [2 ** 100, n, weakref.WeakValueDictionary({1: n, "k": n})]
    loaded = autosave.loads(dumps_twice(graph))
    assert loaded[0] == 2 ** 100 and dict(loaded[2]) == {1: loaded[1], "k": loaded[1]}


def test_a_defect_outside_the_handlers_is_a_save_error_with_the_path(monkeypatch):
    from autosave.model.adapters.weak import WeakValueDictionaryAdapter

    def broken(self, strong, target):
        raise KeyError("a defect")
    monkeypatch.setattr(WeakValueDictionaryAdapter, "payload", broken)
    n = Node(a="target")
    graph = {"objs": [n], "cache": weakref.WeakValueDictionary({1: n})}
    try:
        autosave.dumps(graph)
    except autosave.SaveError as e:
        assert e.path == "root['cache']" and "KeyError" in str(e)
    else:
        raise AssertionError("dumps did not fail")


weak_graphs = st.recursive(
    st.one_of(st.integers(-(2 ** 80), 2 ** 80), st.text(max_size=3), st.none(),
              st.builds(Node, a=st.integers(-2, 2))),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.builds(Node, a=inner, b=inner)),
    max_leaves=12)


@pytest.mark.slow
@settings(max_examples=max(100, FUZZ), derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(weak_graphs, st.data())
def test_weak_containers_next_to_anything_save_or_fail_with_save_error(graph, data):
    objs = [graph] if not isinstance(graph, list) else graph
    targets = [o for o in objs if isinstance(o, Node)]
    keys = data.draw(st.lists(st.one_of(st.integers(-(2 ** 70), 2 ** 70), st.text(max_size=2)),
                              min_size=len(targets), max_size=len(targets), unique=True))
    root = [objs, weakref.WeakValueDictionary(dict(zip(keys, targets))),
            weakref.WeakSet(targets), weakref.WeakKeyDictionary({t: k for t, k in zip(targets, keys)})]
    try:
        data_ = dumps_twice(root)
    except autosave.SaveError:
        return
    loaded = autosave.loads(data_)          # holds the targets: the entries live
    assert len(loaded[1]) == len(loaded[2]) == len(loaded[3]) == len(targets)


# -- the direct engine goes deep without touching the recursion limit ---------------------

def deep_graph(n):
    chain = None
    for i in range(n):
        chain = Node(a=chain, b=[i] if i % 3 else {"k": i})
    nested = []
    for _ in range(n // 2):
        nested = [nested]
    return [chain, nested, (chain, nested)]


@pytest.mark.slow
def test_overlapping_saves_in_threads_leave_the_recursion_limit_alone():
    import threading
    limit = sys.getrecursionlimit()
    seen, results, stop = set(), {}, threading.Event()

    def watch():
        while not stop.is_set():
            seen.add(sys.getrecursionlimit())

    def save(name, n):
        results[name] = autosave.dumps(deep_graph(n))

    watcher = threading.Thread(target=watch)
    watcher.start()
    savers = [threading.Thread(target=save, args=(f"t{i}", 8000 + 1000 * i)) for i in range(3)]
    for t in savers:
        t.start()
    for t in savers:
        t.join()
    stop.set()
    watcher.join()
    assert seen == {limit} and sys.getrecursionlimit() == limit
    assert sorted(results) == ["t0", "t1", "t2"]
    for i in range(3):
        graph = deep_graph(8000 + 1000 * i)
        assert results[f"t{i}"] == encode(*Saver(generated=False).run(graph))


def test_deep_graphs_under_a_low_recursion_limit_give_the_reflective_bytes():
    graph = deep_graph(3000)
    expected = encode(*Saver(generated=False).run(graph))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(__import__("inspect").stack()) + 150)
    try:
        direct = Saver().run(graph)
    finally:
        sys.setrecursionlimit(limit)
    assert encode(*direct) == expected


def test_a_failure_thousands_of_levels_down_is_a_save_error_with_its_path():
    import threading
    graph = deep_graph(5000)
    graph[0].a.a.a.b = threading.Lock()        # not saveable, deep down the chain
    bottom = graph[0]
    for _ in range(4000):
        bottom = bottom.a
    bottom.b = (x for x in ())                 # a plain generator, 4,000 levels down
    try:
        autosave.dumps(graph)
    except autosave.SaveError as e:
        assert e.path.startswith("root[0].a.a.a.b") or ".a" * 4000 in e.path
    else:
        raise AssertionError("dumps did not fail")
