"""What a load may call, attacked (docs/security.md, "What the loader calls").

A save names the callable of a ``__reduce__`` record; the reconstructor registry
(autosave/model/reconstructors.py) decides whether a load may call it and checks its
arguments first. Package trust alone never makes a class constructible with arguments
from the file, and the arguments, states and items a load hands to trusted code are
inert data: no lazy iterator that would call something when the code iterates it, no
callable where the entry does not say so. Every attack here runs with the C loops and
with the Python loops; the dangerous ones also in a process of their own, with an audit
hook watching for imports and file writes.
"""

import contextlib
import functools
import importlib.util
import operator
import pathlib
import sys

import attrs
import pytest

import autosave
from autosave.format.kernels import python_loops
from forge import Forge

LOOPS = [pytest.param(contextlib.nullcontext, id="C-loops"),
         pytest.param(python_loops, id="Python-loops")]


class Bag(list):
    """A game's list subclass: list.__init__ iterates what it is given."""


class Members:
    def __init__(self, members=()):
        self.members = list(members)


@attrs.define
class Converted:
    items: list = attrs.field(converter=list, factory=list)


class Tuplish(tuple):
    """tuple.__new__ iterates its argument."""


class OwnReduce:
    """Defines its own __reduce__ in Python: the game wrote the constructor for it."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __reduce__(self):
        return (type(self), (self.x, self.y))

    def __eq__(self, other):
        return type(other) is type(self) and (self.x, self.y) == (other.x, other.y)


class Inherits(OwnReduce):
    """Inherits the game's own __reduce__: still the game's code."""


class Callbacked:
    """A game class whose own __reduce__ passes a callable: it must say so."""

    def __init__(self, callback):
        self.callback = callback

    def __reduce__(self):
        return (Callbacked, (self.callback,))


def shout(text):
    SHOUTED.append(text)
    return text


SHOUTED = []


class Guarded:
    def __init__(self, on_hit):
        self.on_hit = on_hit

    def __reduce__(self):
        return (Guarded, (self.on_hit,))


@autosave.save_root          # the game's own module: its classes' __reduce__ are its code
class Root:
    pass


autosave.reconstructor(Guarded, callables=(0,))


def writer_map(f, target, payload="pwned"):
    """map(<Path(target).write_text>, iter([payload])): writes when iterated."""
    path = f.rec("pathlib.PosixPath", str(target))
    write = f.rec("autosave.method", path, "write_text")
    return f.rec("builtins.map", write, f.rec("builtins.list_iterator",
                                             f.rec("builtins.list", payload), 0))


def caller_map(f, name, *args):
    """map(<game function>, iter([args...])): calls it when iterated."""
    return f.rec("builtins.map", f.glob(name), f.rec("builtins.list_iterator",
                                                    f.rec("builtins.list", *args), 0))


CONSUMERS = ["Bag", "Members", "Converted", "Tuplish-newobj", "OwnReduce", "Inherits"]


def consume(f, who, lazy):
    """A reduce record handing ``lazy`` to trusted code that iterates it."""
    if who == "Tuplish-newobj":
        return f.reduce(f.glob("test_reconstructors.Tuplish"), (lazy,), newobj=True)
    return f.reduce(f.glob(f"test_reconstructors.{who}"),
                    (lazy, 1) if who in ("OwnReduce", "Inherits") else (lazy,))


@pytest.mark.parametrize("loops", LOOPS)
@pytest.mark.parametrize("who", CONSUMERS)
def test_a_file_built_map_never_reaches_trusted_code(tmp_path, who, loops):
    target = tmp_path / "written.pth"
    f = Forge()
    consume(f, who, writer_map(f, target))
    with loops(), pytest.raises(autosave.LoadError):
        autosave.loads(f.bytes())
    assert not target.exists()
    SHOUTED.clear()
    f = Forge()
    consume(f, who, caller_map(f, "test_reconstructors.shout", "called"))
    with loops(), pytest.raises(autosave.LoadError):
        autosave.loads(f.bytes())
    assert SHOUTED == []


@pytest.mark.parametrize("loops", LOOPS)
def test_a_class_trusted_by_package_is_never_constructed_with_arguments(loops):
    """Bag's constructor is list's: package trust allocates and fills, never calls it."""
    f = Forge()
    f.reduce(f.glob("test_reconstructors.Bag"), (f.rec("builtins.list", 1, 2),))
    with loops(), pytest.raises(autosave.UntrustedTypeError, match="reconstructor"):
        autosave.loads(f.bytes())
    f = Forge()       # allocation with no arguments, then items: what a list subclass is
    f.reduce(f.glob("test_reconstructors.Bag"), (), listitems=(1, 2), newobj=True)
    with loops():
        bag = autosave.loads(f.bytes())
    assert type(bag) is Bag and bag == [1, 2]


@pytest.mark.parametrize("loops", LOOPS)
def test_mutators_and_callers_in_items_and_states_are_refused(loops):
    """methodcaller("append", ...) mapped over a list the graph holds, handed to a
    class's own extend or __setstate__, would change it during the load."""
    for place in ("state", "listitems"):
        f = Forge()
        canary = f.rec("builtins.list", 1, 2, 3)
        append = f.reduce(f.glob("operator.methodcaller"), ("append", 4))
        lazy = f.rec("builtins.map", append, f.rec("builtins.list_iterator",
                                                  f.rec("builtins.list", canary), 0))
        if place == "state":
            state = f.rec("builtins.dict", "members", lazy)
            rec = f.reduce(f.glob("test_reconstructors.Stateful"), (), state=state,
                           newobj=True)
        else:
            rec = f.reduce(f.glob("test_reconstructors.Extending"), (),
                           listitems=(lazy,), newobj=True)
        f.rec("builtins.list", canary, rec)
        with loops(), pytest.raises(autosave.FormatError, match="lazy|iterat"):
            autosave.loads(f.bytes())


class Stateful:
    def __setstate__(self, state):
        self.members = list(state["members"])


class Extending(list):
    def extend(self, items):
        for item in items:
            list.extend(self, item)


@pytest.mark.parametrize("loops", LOOPS)
def test_a_class_with_its_own_reduce_loads_on_inert_arguments(loops):
    for obj in (OwnReduce(1, [2, (3, "x")]), Inherits({"a": 1}, frozenset({4}))):
        with loops():
            back = autosave.loads(autosave.dumps(obj))
        assert back == obj and type(back) is type(obj)


def test_a_callable_argument_needs_an_entry_that_allows_it():
    """A save refuses what a load would refuse, and says how to fix it; the fix works."""
    with pytest.raises(autosave.SaveError, match=r"autosave\.reconstructor\(.*Callbacked"):
        autosave.dumps(Callbacked(shout))
    SHOUTED.clear()
    back = autosave.loads(autosave.dumps(Guarded(shout)))
    assert back.on_hit is shout and SHOUTED == []
    # the position that may hold a callable holds one; the others stay inert
    f = Forge()
    f.reduce(f.glob("test_reconstructors.Guarded"),
             (caller_map(f, "test_reconstructors.shout", "x"),))
    with pytest.raises(autosave.FormatError):
        autosave.loads(f.bytes())


def test_the_callable_fix_the_save_error_suggests_works():
    class Local:
        pass
    with pytest.raises(autosave.SaveError) as err:
        autosave.dumps(Callbacked(shout))
    fix = str(err.value)
    assert "autosave.reconstructor(test_reconstructors.Callbacked, callables=(0,))" in fix
    autosave.reconstructor(Callbacked, callables=(0,))
    try:
        back = autosave.loads(autosave.dumps(Callbacked(shout)))
        assert back.callback is shout
    finally:
        from autosave.model.reconstructors import unregister
        unregister(Callbacked)


# -- what a loaded callable can reach --------------------------------------------------

PATH_IO = ["write_text", "write_bytes", "read_text", "read_bytes", "unlink", "open",
           "rename", "replace", "touch", "chmod", "mkdir", "rmdir", "symlink_to",
           "hardlink_to", "exists", "stat", "iterdir", "glob", "resolve", "expanduser"]


@pytest.mark.parametrize("name", PATH_IO)
def test_a_path_binds_pure_methods_only(tmp_path, name):
    f = Forge()
    f.rec("autosave.method", f.rec("pathlib.PosixPath", str(tmp_path / "x")), name)
    with pytest.raises(autosave.UntrustedTypeError, match="pure"):
        autosave.loads(f.bytes())


def test_pure_path_methods_still_bind_and_work():
    p = pathlib.PurePosixPath("maps/level1.tmx")
    back = autosave.loads(autosave.dumps([p.with_suffix, p.joinpath, p.relative_to]))
    assert back[0](".json") == pathlib.PurePosixPath("maps/level1.json")
    assert back[1]("x") == p / "x"


def test_a_saved_callback_cannot_write_files(tmp_path):
    target = tmp_path / "x.txt"
    with pytest.raises(autosave.SaveError, match="pure"):
        autosave.dumps(functools.partial(target.write_text, "boom"))
    f = Forge()
    write = f.rec("autosave.method", f.rec("pathlib.PosixPath", str(target)), "write_text")
    f.rec("functools.partial", write, f.rec("builtins.tuple", "boom"),
          f.rec("builtins.dict"), None)
    with pytest.raises(autosave.UntrustedTypeError):
        autosave.loads(f.bytes())
    assert not target.exists()


@pytest.mark.parametrize("name", ["write_text", "unlink", "encode", "decode", "tofile",
                                  "format", "mkdir"])
def test_methodcaller_cannot_name_an_impure_method_of_a_value_type(name):
    f = Forge()
    f.reduce(f.glob("operator.methodcaller"), (name, "x"))
    with pytest.raises(autosave.UntrustedTypeError, match="impure|pure"):
        autosave.loads(f.bytes())
    with pytest.raises(autosave.SaveError):
        autosave.dumps(operator.methodcaller(name, "x"))


def test_methodcaller_of_pure_and_game_names_still_loads():
    back = autosave.loads(autosave.dumps([operator.methodcaller("count", 1),
                                          operator.methodcaller("step")]))
    assert back[0]([1, 1]) == 2


@pytest.mark.parametrize("owner, name", [("x", "format"), ("x", "format_map"),
                                         ("x", "encode"), (b"x", "decode")])
def test_builtin_methods_that_import_or_read_attributes_are_refused(owner, name):
    f = Forge()
    f.rec("autosave.method", owner, "upper")       # a pure one binds
    assert autosave.loads(f.bytes())() == owner.upper()
    f = Forge()
    f.rec("autosave.method", owner, name)
    with pytest.raises(autosave.UntrustedTypeError, match="pure"):
        autosave.loads(f.bytes())


# -- nothing is imported ---------------------------------------------------------------

@pytest.mark.parametrize("codec", ["cp037", "idna", "punycode", "utf_7", "rot13",
                                   "hex", "base64", "zlib"])
def test_text_codecs_are_a_fixed_set(codec):
    f = Forge()
    f.reduce(f.glob("builtins.str"), (b"abc", codec))
    before = set(sys.modules)
    with pytest.raises(autosave.UntrustedTypeError, match="codec"):
        autosave.loads(f.bytes())
    assert set(sys.modules) == before


@pytest.mark.parametrize("codec", ["utf-8", "UTF8", "latin-1", "ascii", "utf_16_le"])
def test_the_fixed_codecs_decode(codec):
    text = "e" if codec == "ascii" else "é"
    f = Forge()
    f.reduce(f.glob("builtins.str"), (text.encode(codec.lower().replace("_", "-")), codec))
    assert autosave.loads(f.bytes()) == text


def test_bytes_of_a_huge_size_is_refused_within_the_budget():
    f = Forge()
    f.reduce(f.glob("builtins.bytes"), (1 << 40,))
    with pytest.raises(autosave.LoadError):
        autosave.loads(f.bytes())


# -- numpy: package trust does not make a class constructible -------------------------

def test_allowing_numpy_does_not_make_memmap_constructible(tmp_path):
    np = pytest.importorskip("numpy")
    target = tmp_path / "victim.bin"
    target.write_bytes(b"precious")
    autosave.allow("numpy")
    for mode in ("w+", "r"):
        f = Forge()
        f.reduce(f.glob("numpy.memmap"), (str(target), "uint8", mode, 0, 4))
        with pytest.raises(autosave.UntrustedTypeError):
            autosave.loads(f.bytes())
    assert target.read_bytes() == b"precious"
    with pytest.raises(autosave.SaveError, match="pure"):
        autosave.dumps(functools.partial(np.arange(5).tofile, str(target)))
    f = Forge()
    array = f.rec("builtins.list")          # any owner: the name is refused first
    f.rec("autosave.method", array, "tofile")
    with pytest.raises(autosave.LoadError):
        autosave.loads(f.bytes())
    assert target.read_bytes() == b"precious"


# -- the same attacks in a process of their own ----------------------------------------

def corpus(tmp_path):
    """The forged saves of this file, each with the file it would write."""
    out = {}
    for who in CONSUMERS:
        f = Forge()
        target = tmp_path / f"{who}.pth"
        consume(f, who, writer_map(f, target))
        out[f"map-into-{who}"] = (f.bytes(), target, ())
    f = Forge()
    target = tmp_path / "partial.txt"
    write = f.rec("autosave.method", f.rec("pathlib.PosixPath", str(target)), "write_text")
    f.rec("functools.partial", write, f.rec("builtins.tuple", "boom"),
          f.rec("builtins.dict"), None)
    out["partial-write_text"] = (f.bytes(), target, ())
    f = Forge()
    f.reduce(f.glob("operator.methodcaller"), ("write_text", "boom"))
    out["methodcaller-write_text"] = (f.bytes(), None, ())
    for codec in ("cp037", "idna"):
        f = Forge()
        f.reduce(f.glob("builtins.str"), (b"abc", codec))
        out[f"codec-{codec}"] = (f.bytes(), None, ())
    target = tmp_path / "memmap.bin"
    f = Forge()
    f.reduce(f.glob("numpy.memmap"), (str(target), "uint8", "w+", 0, 4))
    out["memmap"] = (f.bytes(), target, ("numpy", "+numpy"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("pure", ["", "1"], ids=["C-loops", "Python-loops"])
def test_the_corpus_writes_nothing_imports_nothing_and_opens_nothing(tmp_path, pure,
                                                                     monkeypatch):
    from test_safe_load import run_child
    monkeypatch.setenv("AUTOSAVE_PUREPYTHON", pure)
    for name, (data, target, extra) in corpus(tmp_path).items():
        if "+numpy" in extra and importlib.util.find_spec("numpy") is None:
            continue
        report = run_child(tmp_path, data, "+test_reconstructors", *extra)
        assert report["outcome"] == "refused", (name, report)
        assert report["opened"] == [], (name, report)
        assert target is None or not target.exists(), name


# -- error paths through states and reduce values of any shape -------------------------

class TupleState:
    """Its state is a tuple, as many libraries' are (pandas' block managers)."""

    def __init__(self, *parts):
        self.parts = parts

    def __getstate__(self):
        return self.parts

    def __setstate__(self, state):
        self.parts = state


@pytest.mark.parametrize("make, path", [
    (lambda bad: TupleState(1, [2, bad]), "root['x'].<state>[1][1]"),
    (lambda bad: TupleState(({"a": bad}, None)), "root['x'].<state>[0][0]['a']"),
    (lambda bad: OwnReduce(TupleState(bad), 2), "root['x'].<args>[0].<state>[0]"),
])
def test_a_save_error_inside_any_state_names_its_real_path(make, path):
    import threading
    with pytest.raises(autosave.SaveError) as e:
        autosave.dumps({"x": make(threading.Lock())})
    assert e.value.path == path


# -- generated hostile reduce records ----------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

CALLS = []


def tripwire(*args):
    CALLS.append(args)
    return args


def use_carelessly(value, depth=0, calls=True):
    """What careless trusted code may do with what it is given: call it if it can be
    called, iterate it (and what it yields) if it can be iterated. A state or items may
    hold callables, as a game's do (docs/security.md): code of the class that calls one
    calls what a save may name, which is bounded elsewhere; here it only iterates."""
    if depth > 4 or isinstance(value, (str, bytes)):
        return
    if calls and callable(value) and not isinstance(value, type):
        value()
    try:
        items = list(iter(value))
    except TypeError:
        return
    for item in items:
        use_carelessly(item, depth + 1, calls)


class Trip:
    """A game class whose constructor and __setstate__ consume what they get, and whose
    extend consumes its items."""

    def __init__(self, *args):
        use_carelessly(args)

    def __reduce__(self):
        return (Trip, ())

    def __setstate__(self, state):
        use_carelessly(state, calls=False)


class TripList(list):
    def extend(self, items):
        use_carelessly(items, calls=False)


FUNCS = ["test_reconstructors.Trip", "test_reconstructors.TripList",
         "test_reconstructors.Bag", "test_reconstructors.Members",
         "test_reconstructors.tripwire", "operator.itemgetter", "builtins.str",
         "builtins.len", "test_reconstructors.OwnReduce", "test_reconstructors.Guarded"]


def lazy_value(f, kind):
    """A value a file can build that runs code when iterated or called."""
    trip = f.glob("test_reconstructors.tripwire")     # records a call, returns its args
    it = f.rec("builtins.list_iterator", f.rec("builtins.list", 1, 2), 0)
    return {"map": lambda: f.rec("builtins.map", trip, it),
            "filter": lambda: f.rec("builtins.filter", trip, it),
            "enumerate-map": lambda: f.rec("builtins.enumerate", f.rec(
                "builtins.map", trip, it), 0),
            "partial": lambda: f.rec("functools.partial", trip, f.rec("builtins.tuple", 1),
                                     f.rec("builtins.dict"), None),
            "function": lambda: trip,
            "starmap": lambda: f.rec("itertools.starmap", trip, f.rec(
                "builtins.list_iterator", f.rec("builtins.list", f.rec(
                    "builtins.tuple", 1)), 0))}[kind]()


def argument(f, shape):
    """An argument tree: plain values, containers, and lazy values at any depth."""
    kind, inner = shape
    if kind == "plain":
        return inner
    if kind == "lazy":
        return lazy_value(f, inner)
    parts = [argument(f, s) for s in inner]
    return f.rec({"list": "builtins.list", "tuple": "builtins.tuple"}[kind], *parts)


shapes = st.recursive(
    st.one_of(st.tuples(st.just("plain"), st.one_of(st.integers(-5, 5), st.text(max_size=3),
                                                     st.none())),
              st.tuples(st.just("lazy"), st.sampled_from(
                  ["map", "filter", "enumerate-map", "partial", "function", "starmap"]))),
    lambda children: st.tuples(st.sampled_from(["list", "tuple"]),
                               st.lists(children, max_size=3)),
    max_leaves=6)


def holds_lazy(shape):
    kind, inner = shape
    return kind == "lazy" or (kind in ("list", "tuple") and any(map(holds_lazy, inner)))


@settings(max_examples=120, deadline=None)
@given(func=st.sampled_from(FUNCS), newobj=st.booleans(),
       args=st.lists(shapes, max_size=3), place=st.sampled_from(["args", "state", "items"]))
def test_generated_reduce_records_never_run_file_built_code(func, newobj, args, place):
    """Whatever a reduce record names and whatever its arguments, state or items hold, a
    load refuses it or loads it without calling the tripwire or iterating a lazy value."""
    CALLS.clear()
    f = Forge()
    built = [argument(f, a) for a in args]
    if place == "args":
        f.reduce(f.glob(func), tuple(built), newobj=newobj)
    elif place == "state":
        f.reduce(f.glob(func), (), state=f.rec("builtins.dict", "x", f.rec(
            "builtins.list", *built)), newobj=True)
    else:
        f.reduce(f.glob(func), (), listitems=tuple(built), newobj=True)
    try:
        autosave.loads(f.bytes())
    except autosave.LoadError:
        pass
    assert CALLS == [], (func, args, place)


class Appending:
    """No extend: a load appends its items one by one, through its own code."""

    def __init__(self):
        self.items = []

    def append(self, item):
        self.items.append(item)

    def __reduce__(self):
        return (Appending, (), None, iter(self.items))


def test_the_save_and_the_load_check_items_for_the_same_hooks():
    """Items handed to a class's own append (it has no extend) are checked on both sides:
    a save that would not load is refused when it is made."""
    ok = Appending()
    ok.append(1)
    assert autosave.loads(autosave.dumps(ok)).items == [1]
    bad = Appending()
    bad.append(map(shout, ["x"]))
    with pytest.raises(autosave.SaveError, match="lazy map"):
        autosave.dumps(bad)
    f = Forge()
    f.reduce(f.glob("test_reconstructors.Appending"), (), newobj=True,
             listitems=(caller_map(f, "test_reconstructors.shout", "x"),))
    SHOUTED.clear()
    with pytest.raises(autosave.FormatError, match="lazy map"):
        autosave.loads(f.bytes())
    assert SHOUTED == []
