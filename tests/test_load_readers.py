"""Code that runs on load and reads what it is given, in generated graphs.

A load runs user code: a ``__reduce__`` constructor, a ``__setstate__``, a frozen key's
hash. The loader builds batch objects (plain instances, lists, dicts, tuples) in bulk,
and a value that such code produces is patched into them afterwards. The promises
attacked here, on graphs generated with readers anywhere in them:

* Code run on load never sees a loader's placeholder, only objects of the graph.
* A reader that is not on a cycle through itself sees what it was saved with, whole,
  however the objects it reaches are batched and whatever other readers they hold: as
  pickle shows it. (On a cycle, a reader is built before something it reaches is whole,
  there as in pickle: only the first promise holds.)
* ``__autosave_loaded__`` hooks run once each, after everything, and see it whole.
* The loaded graph is the saved one; a graph whose only cycles would need an object to
  exist before its own constructor ran is refused when saved, and only such a graph.

Every reader logs, when it runs, a digest of what it was handed, which the test
compares with the same digest taken of the original graph.
"""

import os

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from test_graph_properties import DictNode, SlotNode   # plain nodes, batched

autosave.allow(__name__)


@autosave.save_root      # this module is the game: its classes' own __reduce__ are its code
class Game:
    pass


LOG = []                 # (label, digest) of every reader run on load, in order


class Sparse:
    """Slotted, its last slot never set: filled field by field by its class plan, not
    in bulk (the other path a batch takes)."""
    __slots__ = ("a", "b", "c")


@attrs.frozen
class Key:
    """Hashed by value, so a record whose hash a load computes from its fields."""
    x: object
    y: object


class Made:
    """Built by its constructor, which reads everything its arguments reach."""

    def __init__(self, label, a, b):
        self.label, self.a, self.b = label, a, b
        LOG.append((label, digest((a, b), self)))

    def __reduce__(self):
        return (Made, (self.label, self.a, self.b))


class Restored:
    """Given its state by __setstate__, which reads everything the state reaches."""

    def __getstate__(self):
        return {"label": self.label, "a": self.a, "b": self.b}

    def __setstate__(self, state):
        self.label, self.a, self.b = state["label"], state["a"], state["b"]
        LOG.append((self.label, digest((self.a, self.b), self)))


class Hooked:
    """Plain and slotted, so in a batch; its ``__autosave_loaded__`` runs once the
    whole graph is loaded, and reads what it holds."""
    __slots__ = ("label", "a", "b")

    def __autosave_loaded__(self):
        HOOKS.append((self.label, digest((self.a, self.b), self)))


HOOKS = []               # (label, digest) of every load hook run, in order
UNSET = object()


def digest(root, me=None):
    """A canonical text of everything root reaches (sharing and cycles included, as
    first-visit numbers); ``me``, the reader asking, is "SELF". An object of a type not
    in the graph's (a loader's placeholder) shows as "!name"."""
    seen = {}

    def d(o):
        if o is me:
            return "SELF"
        t = type(o)
        if t in (int, str, bool, type(None)):
            return repr(o)
        if o is UNSET:
            return "~"
        if id(o) in seen:
            return f"@{seen[id(o)]}"
        seen[id(o)] = len(seen)
        if t is list:
            return "[" + ",".join(map(d, list(o))) + "]"
        if t is tuple:
            return "(" + ",".join(map(d, o)) + ")"
        if t is dict:
            return "{" + ",".join(f"{d(k)}:{d(v)}" for k, v in list(o.items())) + "}"
        if t is SlotNode:
            return "S(" + ",".join(d(getattr(o, n, UNSET)) for n in "abc") + ")"
        if t is Sparse:
            return "P(" + ",".join(d(getattr(o, n, UNSET)) for n in "abc") + ")"
        if t is DictNode:
            return "D(" + ",".join(f"{k}={d(v)}" for k, v in list(vars(o).items())) + ")"
        if t is Key:
            return f"K({d(getattr(o, 'x', UNSET))},{d(getattr(o, 'y', UNSET))})"
        if t in (Made, Restored, Hooked):
            return (t.__name__[0] + "(" + ",".join(d(getattr(o, n, UNSET))
                                                   for n in ("label", "a", "b")) + ")")
        return "!" + t.__qualname__

    return d(root)


# A frozen key is allocated, then given its fields, like the mutable kinds (by pickle
# too); only its hash waits for them.
MUTABLE = ("slot", "sparse", "dictnode", "list", "dict", "restored", "key", "hooked")
BUILT = ("tuple", "made")               # exist only once their parts do
READERS = ("made", "restored")
IDENTITY = ("slot", "sparse", "dictnode", "made", "restored", "hooked")     # usable in keys as they are
atoms = st.one_of(st.none(), st.integers(-3, 300), st.sampled_from(["x", "y", ""]))


@st.composite
def specs(draw, max_nodes=12):
    """(kinds, edges): node i is of kinds[i]; an edge is ("ref", j) or ("atom", v).

    Built nodes refer to earlier built nodes or to mutable ones (allocated first,
    filled last); mutable nodes and readers' parts may refer to anything. A dict's keys
    are atoms or keys; a key's fields are atoms, identity-hashed nodes or earlier keys.
    """
    n = draw(st.integers(1, max_nodes))
    kinds = draw(st.lists(st.sampled_from(MUTABLE + BUILT), min_size=n, max_size=n))

    def edge(i, hashable=False):
        if hashable:
            targets = [j for j in range(n) if kinds[j] in IDENTITY
                       or (kinds[j] == "key" and j < i)]
        elif kinds[i] in MUTABLE:
            targets = list(range(n))
        else:
            targets = [j for j in range(n) if j < i or kinds[j] in MUTABLE]
        if targets and draw(st.integers(0, 3)):
            return ("ref", draw(st.sampled_from(targets)))
        return ("atom", draw(atoms))

    edges = []
    for i, k in enumerate(kinds):
        if k == "dict":
            keys = draw(st.lists(atoms | st.just(None).map(lambda _: "key"), max_size=3))
            edges.append([[edge(i, True) if key == "key" else ("atom", key), edge(i)]
                          for key in keys])
        elif k == "dictnode":
            names = draw(st.permutations(["p", "q", "r"]))[:draw(st.integers(0, 3))]
            edges.append([[name, edge(i)] for name in names])
        elif k == "key":
            edges.append([edge(i, True), edge(i, True)])
        elif k in ("tuple", "list"):
            edges.append([edge(i) for _ in range(draw(st.integers(0, 3)))])
        else:                              # slot: a, b, c; the others: a, b
            edges.append([edge(i) for _ in range(3 if k == "slot" else 2)])
    return kinds, edges


def build(spec):
    kinds, edges = spec
    objs = [None] * len(kinds)
    new = {"slot": SlotNode, "sparse": lambda: Sparse(), "dictnode": DictNode, "list": list, "dict": dict,
           "restored": lambda: Restored.__new__(Restored), "key": lambda: Key.__new__(Key),
           "hooked": Hooked}
    for i, k in enumerate(kinds):
        if k in new:
            objs[i] = new[k]()

    def val(e):
        return objs[e[1]] if e[0] == "ref" else e[1]

    for i, k in enumerate(kinds):          # built nodes, from parts that exist
        if k == "tuple":
            objs[i] = tuple(map(val, edges[i]))
        elif k == "made":
            made = objs[i] = Made.__new__(Made)
            made.label, made.a, made.b = i, *map(val, edges[i])
    for i, k in enumerate(kinds):          # keys first: dicts hash them
        if k == "key":
            object.__setattr__(objs[i], "x", val(edges[i][0]))
            object.__setattr__(objs[i], "y", val(edges[i][1]))
    for i, k in enumerate(kinds):          # then the mutable ones are filled
        obj = objs[i]
        if k == "slot":
            obj.a, obj.b, obj.c = map(val, edges[i])
        elif k == "sparse":
            obj.a, obj.b = map(val, edges[i])
        elif k == "dictnode":
            for name, e in edges[i]:
                setattr(obj, name, val(e))
        elif k == "list":
            obj.extend(map(val, edges[i]))
        elif k == "dict":
            for ke, ve in edges[i]:
                obj[val(ke)] = val(ve)
        elif k in ("restored", "hooked"):
            obj.label, obj.a, obj.b = i, *map(val, edges[i])
    return objs


def children(spec, i):
    kinds, edges = spec
    for e in edges[i]:
        for part in (e if isinstance(e, list) else [e]):
            if isinstance(part, tuple) and part[0] == "ref":
                yield part[1]


def reaches(spec, starts):
    found, stack = set(), list(starts)
    while stack:
        j = stack.pop()
        if j not in found:
            found.add(j)
            stack.extend(children(spec, j))
    return found


def impossible(spec):
    """Whether some cycle passes through built nodes only: each would have to exist
    before its own parts, so no load (pickle's either) could build it."""
    kinds, _ = spec
    built = [i for i, k in enumerate(kinds) if k in BUILT]
    for i in built:
        stack, found = [j for j in children(spec, i) if kinds[j] in BUILT], set()
        while stack:
            j = stack.pop()
            if j == i:
                return True
            if j not in found:
                found.add(j)
                stack.extend(c for c in children(spec, j) if kinds[c] in BUILT)
    return False


FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)


@pytest.mark.slow
@settings(max_examples=FUZZ or 300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(specs())
def test_code_run_on_load_sees_the_graph_it_was_saved_with(spec):
    kinds, _ = spec
    objs = build(spec)
    if impossible(spec):
        try:
            autosave.dumps(objs)
        except autosave.SaveError:
            return
        raise AssertionError("a graph no load can build was saved")
    data = autosave.dumps(objs)
    expected = {i: digest((objs[i].a, objs[i].b), objs[i])
                for i, k in enumerate(kinds) if k in READERS}
    hooked = {i: digest((objs[i].a, objs[i].b), objs[i])
              for i, k in enumerate(kinds) if k == "hooked"}
    LOG.clear()
    HOOKS.clear()
    back = autosave.loads(data)
    # load hooks run last, once each, and see everything whole, cycles or not
    assert sorted(HOOKS) == sorted(hooked.items())
    ran = dict(LOG)
    assert sorted(label for label, _ in LOG) == sorted(expected), "each reader runs once"
    for label, seen in LOG:
        assert "!" not in seen, f"reader {label} was handed a placeholder: {seen}"
    for i in expected:
        if i not in reaches(spec, children(spec, i)):      # not on a cycle through itself
            assert ran[i] == expected[i], f"reader {i} saw its parts unfinished"
    assert digest(back) == digest(objs)
    assert autosave.dumps(back) == data


class Holds:
    """A constructor that reads: it holds the shared world and counts its nodes."""

    def __init__(self, world):
        self.world, self.n = world, len(world)

    def __reduce__(self):
        return (Holds, (self.world,))


def load_calls(readers, nodes):
    """Python and C calls made by loading ``readers`` readers that all reach one world
    of ``nodes`` plain objects holding another reader (so every reader must wait)."""
    import sys
    world = [SlotNode(i) for i in range(nodes)]
    world[-1].b = Made(-1, None, None)
    data = autosave.dumps([Holds(world) for _ in range(readers)])
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += 1

    sys.setprofile(count)
    try:
        back = autosave.loads(data)
    finally:
        sys.setprofile(None)
    assert back[0].n == nodes and back[0].world is back[-1].world
    return calls


def test_readers_reaching_one_world_are_ordered_in_one_pass_over_it():
    # Twice the readers over twice the world: twice the work, never four times (each
    # reader searching the world for what it waits for would be).
    small, large = load_calls(40, 400), load_calls(80, 800)
    assert large < 2.6 * small, (small, large)
