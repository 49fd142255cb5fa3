"""The safe-load contract (docs/security.md), attacked with forged files.

Each forged save below is loaded in a process of its own (tests/hostile_child.py) with
an audit hook armed for the load: the test asserts that the load was refused with a
LoadError kind or loaded honestly, that no command ran (no marker file), that no module
was imported and no watched audit event fired, and that CPU time and memory stayed
within the budget docs/security.md promises (1 s + 2 us per byte, 64 MiB + 100 bytes per
byte) -- and that whatever loaded could be freed without killing the interpreter.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge import Forge

HERE = Path(__file__).parent
P61 = (1 << 61) - 1              # ints k * P61 all hash to 0


def run_child(tmp_path, data, *allowed):
    path = tmp_path / "forged.sav"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, str(HERE / "hostile_child.py"), str(path),
                           *allowed], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines and lines[-1] == "freed", (
        f"the child died (exit {proc.returncode}): {proc.stderr[-2000:]}")
    report = json.loads(lines[0])
    budget_cpu = 1.0 + 2e-6 * report["bytes"]
    budget_mem = (64 << 20) + 100 * report["bytes"]
    assert report["outcome"] in ("loaded", "refused"), report
    assert report["imported"] == [], report
    assert report["events"] == [], report
    # CPU on a loaded CI machine varies: allow a factor of 3 over the promise
    assert report["cpu"] < 3 * budget_cpu, report
    assert report["peak"] < budget_mem, report
    return report


# -- the forged corpus -----------------------------------------------------------------

def system_gadget(marker):
    """object.__subclasses__() -> a class whose __init__.__globals__ is os -> system."""
    idx = next(i for i, c in enumerate(object.__subclasses__()) if c.__name__ == "_wrap_close")
    f = Forge()

    def make(cls, *args):
        return f.reduce(f.glob(cls), args)
    obj = f.rec("builtins.list", f.glob("builtins.object"))
    it = f.rec("builtins.list_iterator", obj, 0)
    for getter in (make("operator.methodcaller", "__subclasses__"),
                   make("operator.itemgetter", idx),
                   make("operator.attrgetter", "__init__.__globals__"),
                   make("operator.itemgetter", "system"),
                   make("operator.methodcaller", "__call__", f"touch {marker}")):
        it = f.rec("builtins.map", getter, it)
    return f, it


def consumed_by(site, f, lazy):
    """A record whose load step would iterate ``lazy`` if it trusted the file."""
    empty_t = f.rec("builtins.tuple")
    empty_d = f.rec("builtins.dict")
    fn = f.glob("builtins.len")
    if site == "partial-attrs":
        return f.rec("functools.partial", fn, empty_t, empty_d, lazy)
    if site == "partial-keywords":
        return f.rec("functools.partial", fn, empty_t, lazy, None)
    if site == "partial-args":
        return f.rec("functools.partial", fn, lazy, empty_d, None)
    if site == "exception-state":
        return f.rec("autosave.exception", "builtins.KeyError", empty_t, lazy, None, None, False)
    if site == "reduce-listitems":
        return f.rec("autosave.reduce", f.glob("operator.itemgetter"), False,
                     f.rec("builtins.tuple", 1), None, lazy, f.rec("builtins.list"))
    if site == "reduce-args":
        return f.rec("autosave.reduce", f.glob("operator.itemgetter"), False, lazy, None,
                     f.rec("builtins.list"), f.rec("builtins.list"))
    if site == "enumerate":
        return f.rec("builtins.list", f.rec("builtins.enumerate", lazy, 0))
    raise AssertionError(site)


SITES = ["partial-attrs", "partial-keywords", "partial-args", "exception-state",
         "reduce-listitems", "reduce-args", "enumerate"]


@pytest.mark.slow
@pytest.mark.parametrize("site", SITES)
def test_the_shell_gadget_runs_nothing(tmp_path, site):
    marker = tmp_path / "pwned"
    f, lazy = system_gadget(marker)
    consumed_by(site, f, lazy)
    report = run_child(tmp_path, f.bytes())
    assert not marker.exists()
    assert report["outcome"] == "refused"


def test_the_shell_gadget_appended_to_a_real_save_runs_nothing(tmp_path):
    """The attack rides in a real level: the level must not load with it."""
    marker = tmp_path / "pwned"
    f, lazy = system_gadget(marker)
    root = consumed_by("partial-attrs", f, lazy)
    f.rec("builtins.list", f.rec("builtins.list", 1, 2, 3), root)
    report = run_child(tmp_path, f.bytes())
    assert not marker.exists() and report["outcome"] == "refused"


def lazy_mutator(f, canary):
    """map(methodcaller("clear"), [canary]): would clear the canary when iterated."""
    clear = f.reduce(f.glob("operator.methodcaller"), ("clear",))
    return f.rec("builtins.map", clear, f.rec("builtins.list_iterator",
                                             f.rec("builtins.list", canary), 0))


@pytest.mark.parametrize("site", SITES)
def test_loaded_objects_are_never_mutated_by_the_file(site):
    """Refused, or loaded with the map stored unconsumed: the canary is intact."""
    import autosave
    f = Forge()
    canary = f.rec("builtins.list", 1, 2, 3)
    lazy = lazy_mutator(f, canary)
    f.rec("builtins.list", canary, consumed_by(site, f, lazy))
    try:
        loaded, _ = autosave.loads(f.bytes())
    except autosave.LoadError:
        return
    assert site == "enumerate" and loaded == [1, 2, 3]


def test_a_bound_method_from_a_save_is_never_called_during_the_load():
    import autosave
    f = Forge()
    canary = f.rec("builtins.list", 1, 2, 3)
    pop = f.rec("autosave.method", canary, "pop")
    f.rec("builtins.list", canary, pop,
          f.rec("builtins.map", pop, f.rec("builtins.list_iterator",
                                          f.rec("builtins.list", 0, 0), 0)))
    loaded, method, lazy = autosave.loads(f.bytes())
    assert loaded == [1, 2, 3] and method.__self__ is loaded
    assert loaded == [1, 2, 3]


@pytest.mark.parametrize("name", ["__subclasses__", "__init_subclass__", "__getattribute__",
                                  "__reduce_ex__", "__class__", "mro", "__globals__"])
def test_special_methods_outside_the_data_protocols_are_refused(name):
    import autosave
    for owner in ("builtins.object", "builtins.int"):
        f = Forge()
        f.rec("autosave.method", f.glob(owner), name)
        with pytest.raises(autosave.LoadError):
            autosave.loads(f.bytes())
    f = Forge()
    f.rec("autosave.method", f.rec("builtins.list", 1), name)
    with pytest.raises(autosave.LoadError):
        autosave.loads(f.bytes())


@pytest.mark.parametrize("cls, args", [
    ("operator.attrgetter", ("__class__",)),
    ("operator.attrgetter", ("real", "__globals__")),
    ("operator.attrgetter", ("a._private",)),
    ("operator.methodcaller", ("__call__",)),
    ("operator.methodcaller", ("_private",)),
])
def test_getters_and_callers_reach_public_attributes_only(cls, args):
    import autosave
    f = Forge()
    f.reduce(f.glob(cls), args)
    with pytest.raises(autosave.UntrustedTypeError):
        autosave.loads(f.bytes())


def test_public_getters_still_load():
    import operator

    import autosave
    f = Forge()
    f.rec("builtins.list", f.reduce(f.glob("operator.attrgetter"), ("real", "imag")),
          f.reduce(f.glob("operator.methodcaller"), ("count", 1)),
          f.reduce(f.glob("operator.itemgetter"), (0, "k")))
    a, m, i = autosave.loads(f.bytes())
    assert a(3) == (3, 0) and m([1, 1]) == 2 and i({0: 1, "k": 2}) == (1, 2)
    assert type(a) is operator.attrgetter


def test_a_loaded_hook_is_looked_up_on_the_class_never_the_instance():
    import autosave
    f = Forge()
    canary = f.rec("builtins.list", 1, 2, 3)
    pop = f.rec("autosave.method", canary, "pop")
    f.rec("builtins.list", canary,
          f.rec("test_safe_load.Hooked", pop, fields=["__autosave_loaded__"]))
    loaded, hooked = autosave.loads(f.bytes())
    assert loaded == [1, 2, 3] and hooked.hooked == 1


def test_setstate_is_looked_up_on_the_class():
    import autosave
    f = Forge()
    canary = f.rec("builtins.list", 1, 2, 3)
    pop = f.rec("autosave.method", canary, "pop")
    state = f.rec("builtins.dict", "__setstate__", pop)
    f.rec("builtins.list", canary, f.rec("autosave.reduce", f.glob("test_safe_load.Plain"),
                                         True, f.rec("builtins.tuple"), state,
                                         f.rec("builtins.list"), f.rec("builtins.list")))
    loaded, plain = autosave.loads(f.bytes())
    assert loaded == [1, 2, 3] and plain.__dict__["__setstate__"].__self__ is loaded


class Hooked:
    def __autosave_loaded__(self):
        self.hooked = getattr(self, "hooked", 0) + 1


class Plain:
    pass


import autosave as _autosave  # noqa: E402

_autosave.allow("test_safe_load")


# -- budgets ---------------------------------------------------------------------------

def iterator_bomb(kind):
    f = Forge()
    if kind == "list":
        f.rec("builtins.list_iterator", f.rec("builtins.list", 1, 2, 3), 10 ** 8)
    elif kind == "bytearray":
        f.rec("builtins.bytearray_iterator", f.rec("builtins.bytearray", b"abc"), 10 ** 9)
    elif kind == "reversed":
        f.rec("builtins.list_reverseiterator", f.rec("builtins.list", 1), 10 ** 8)
    return f.bytes()


def group_bomb():
    f = Forge()
    f.rec("autosave.exception", "builtins.ExceptionGroup",
          f.rec("builtins.tuple", "boom", f.rec("builtins.range", 0, 10 ** 9, 1)),
          None, None, None, False)
    return f.bytes()


def colliding_ints(n=20_000):
    f = Forge()
    big = [f.rec("builtins.int", (k * P61).to_bytes(16, "little", signed=True))
           for k in range(1, n)]
    f.rec("builtins.set", *big)
    return f.bytes()


def colliding_tuples(n=20_000):
    f = Forge()
    keys = [f.rec("builtins.tuple", f.rec("builtins.int", (k * P61).to_bytes(16, "little",
                                                                              signed=True)))
            for k in range(1, n)]
    f.rec("builtins.dict", *[x for k in keys for x in (k, None)])
    return f.bytes()


def huge_fraction():
    f = Forge()
    n = (3 ** 700_000).to_bytes(140_000, "little", signed=True)
    d = (7 ** 500_000).to_bytes(180_000, "little", signed=True)
    f.rec("fractions.Fraction", f.rec("builtins.int", n), f.rec("builtins.int", d))
    return f.bytes()


def deep_chain(kind, depth=200_000):
    f = Forge()
    if kind == "tuple-in-set":
        x = f.rec("builtins.tuple", 1)
        for _ in range(depth):
            x = f.rec("builtins.tuple", x)
        f.rec("builtins.set", x)
    elif kind == "deque":
        x = f.rec("collections.deque", None)
        for _ in range(depth):
            x = f.rec("collections.deque", None, x)
    elif kind == "defaultdict":
        x = f.rec("collections.defaultdict", None)
        for _ in range(depth):
            x = f.rec("collections.defaultdict", None, 1, x)
    elif kind == "deque-forward":
        refs = [f.placeholder() for _ in range(depth)]
        for i, r in enumerate(refs):
            nxt = refs[i + 1] if i + 1 < depth else None
            f.set(r, "collections.deque", None, nxt, cycle=nxt is not None)
        f.rec("builtins.list", refs[0])
    elif kind == "iterators":            # every iterator kind CPython frees by C recursion
        x = f.rec("builtins.list_iterator", f.rec("builtins.list"), 0)
        fn = f.glob("builtins.len")
        wraps = [
            lambda x: f.rec("builtins.enumerate", x, 0),
            lambda x: f.rec("builtins.zip", False, x),
            lambda x: f.rec("builtins.map", fn, x),
            lambda x: f.rec("builtins.filter", None, x),
            lambda x: f.rec("itertools.filterfalse", None, x),
            lambda x: f.rec("itertools.groupby", x, None, False),
            lambda x: f.rec("itertools._grouper", f.rec("itertools.groupby", x, None, True,
                                                        1, 1, 1), 1),
            lambda x: f.rec("itertools._tee", f.rec("itertools._tee_dataobject", x, None), 0),
            lambda x: f.rec("itertools.repeat", x, None),
            lambda x: f.rec("itertools.cycle", x, False),
            lambda x: f.rec("itertools.chain", x, None),
            lambda x: f.rec("itertools.islice", x, 0, None, 1, 0),
            lambda x: f.rec("itertools.takewhile", fn, x, None),
            lambda x: f.rec("itertools.dropwhile", fn, x, None),
            lambda x: f.rec("itertools.starmap", fn, x, None),
            lambda x: f.rec("itertools.compress", x, x, None),
            lambda x: f.rec("itertools.accumulate", x, None, None),
            lambda x: f.rec("itertools.zip_longest", x, None),
        ]
        for i in range(depth):
            x = wraps[i % len(wraps)](x)
    elif kind in ("staticmethod", "mappingproxy"):
        x = f.glob("builtins.len") if kind == "staticmethod" else f.rec("builtins.dict")
        for _ in range(depth):
            x = f.rec(f"builtins.{kind}", x)
    elif kind == "tuple-list":           # lists free through CPython's trashcan: loads
        x = f.rec("builtins.tuple", 1)
        for _ in range(depth // 2):
            x = f.rec("builtins.tuple", f.rec("builtins.list", x))
    return f.bytes()


def dag_key(depth=80):
    """A key whose hash visits 2**80 tuples, described in 80 records."""
    f = Forge()
    x = f.rec("builtins.tuple", 1)
    for _ in range(depth):
        x = f.rec("builtins.tuple", x, x)
    f.rec("builtins.frozenset", x)
    return f.bytes()


BOMBS = {
    "list-iterator-position": lambda: iterator_bomb("list"),
    "bytearray-iterator-position": lambda: iterator_bomb("bytearray"),
    "reverse-iterator-position": lambda: iterator_bomb("reversed"),
    "exception-group-range": group_bomb,
    "colliding-int-keys": colliding_ints,
    "colliding-tuple-keys": colliding_tuples,
    "huge-fraction": huge_fraction,
    "tuple-200k-deep-in-a-set": lambda: deep_chain("tuple-in-set"),
    "deque-200k-deep": lambda: deep_chain("deque"),
    "deque-200k-deep-by-forward-references": lambda: deep_chain("deque-forward"),
    "defaultdict-200k-deep": lambda: deep_chain("defaultdict"),
    "iterators-200k-deep": lambda: deep_chain("iterators"),
    "staticmethod-200k-deep": lambda: deep_chain("staticmethod"),
    "mappingproxy-200k-deep": lambda: deep_chain("mappingproxy"),
    "hash-of-a-shared-dag": dag_key,
}


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_resource_bombs_are_refused_within_budget(tmp_path, bomb):
    report = run_child(tmp_path, BOMBS[bomb]())
    assert report["outcome"] == "refused", report


@pytest.mark.slow
def test_deep_chains_of_types_cpython_frees_safely_still_load(tmp_path):
    report = run_child(tmp_path, deep_chain("tuple-list"))
    assert report["outcome"] == "loaded", report


@pytest.mark.slow
@pytest.mark.parametrize("key", ["../../../../etc/passwd", "/etc/localtime", "Nowhere/Atlantis",
                                 "UTC\x00", ""])
def test_zoneinfo_keys_import_nothing(tmp_path, key):
    f = Forge()
    f.rec("zoneinfo.ZoneInfo", key)
    report = run_child(tmp_path, f.bytes())
    assert report["outcome"] == "refused", report


def test_raw_msgpack_nesting_is_refused(tmp_path):
    """[types=[], records=[[0, [[[...100,000 deep...]]]]], root=[0]], written by hand."""
    body = b"\x93\x90\x91\x92\x00" + b"\x91" * 100_000 + b"\x01" + b"\x91\x00"
    report = run_child(tmp_path, b"\x89ASV\x01" + body)
    assert report["outcome"] == "refused", report
