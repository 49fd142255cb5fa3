"""The gadget audit (docs/security.md): every name a save can resolve with nothing
allowed, put in every place the format lets a file put a callable, never runs during a
load; and the names a save can resolve are exactly the documented ones."""

import builtins
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import autosave
from autosave.model.adapters.callables import adapter_class_names
from autosave.model.registry import REGISTRY, SAFE_STDLIB_NAMES
from forge import Forge

HERE = Path(__file__).parent

BUILTIN_EXCEPTIONS = {f"builtins.{n}" for n, v in vars(builtins).items()
                      if isinstance(v, type) and issubclass(v, BaseException)}
DOCUMENTED = SAFE_STDLIB_NAMES | set(adapter_class_names())

UNIVERSE_MODULES = ["builtins", "math", "operator", "random", "collections", "os", "sys",
                    "functools", "itertools", "types", "importlib", "subprocess", "pathlib",
                    "shutil", "pickle", "copyreg", "io", "codecs", "gc", "ctypes", "socket"]


def universe():
    names = set()
    for module in UNIVERSE_MODULES:
        mod = __import__(module)
        names.update(f"{module}.{attr}" for attr in dir(mod))
    return sorted(names | DOCUMENTED)


def resolves(name):
    f = Forge()
    f.glob(name)
    try:
        autosave.loads(f.bytes())
    except autosave.LoadError:
        return False
    return True


def test_what_a_save_can_name_with_nothing_allowed_is_the_documented_list():
    assert not any(REGISTRY.is_allowed_module(m) for m in UNIVERSE_MODULES)
    found = {name for name in universe() if resolves(name)}
    assert found <= DOCUMENTED, sorted(found - DOCUMENTED)
    assert "builtins.getattr" not in found and "builtins.__import__" not in found
    assert "os.system" not in found and "builtins.eval" not in found


POSITIONS = 13


def callable_position(f, fn, p):
    """Record shape ``p`` of those through which a file can hand the loader a callable,
    built with the callable ``fn``; returns (record, canary list)."""
    canary = f.rec("builtins.list", 1, 2, 3)
    it = f.rec("builtins.list_iterator", canary, 0)
    args = f.rec("builtins.tuple", canary)
    if p in (0, 1):
        return f.rec("autosave.reduce", fn, p == 1, args, None, f.rec("builtins.list"),
                     f.rec("builtins.list")), canary
    make = {
        2: lambda: f.rec("builtins.map", fn, it),
        3: lambda: f.rec("builtins.filter", fn, it),
        4: lambda: f.rec("functools.partial", fn, args, f.rec("builtins.dict"), None),
        5: lambda: f.rec("collections.defaultdict", fn, 1, canary),
        6: lambda: f.rec("autosave.method", canary, fn),
        7: lambda: f.rec("builtins.enumerate", f.rec("builtins.map", fn, it), 0),
        8: lambda: f.rec("builtins.zip", False, f.rec("builtins.map", fn, it)),
        9: lambda: f.rec("autosave.coroutine", fn, "<start>"),
        10: lambda: f.rec("builtins.sorted" and "builtins.list", f.rec(
            "builtins.filter", fn, f.rec("builtins.list_iterator", canary, 1))),
        11: lambda: f.rec("itertools.groupby", it, fn, False),
        12: lambda: f.rec("itertools.filterfalse", fn, it),
    }
    return make[p](), canary


AUDIT_CHILD = textwrap.dedent('''
    import builtins, json, sys, types
    sys.path.insert(0, sys.argv[1])
    import autosave
    from autosave.model.registry import SAFE_STDLIB_NAMES
    from forge import Forge
    from test_gadget_audit import callable_position, POSITIONS

    calls, wrapped = [], []

    def traced(name, fn):
        wrapped.append(name)
        def wrapper(*a, **k):
            calls.append(name)
            return fn(*a, **k)
        wrapper.__module__, wrapper.__qualname__ = fn.__module__, fn.__qualname__
        return wrapper

    # Every resolvable function reaches the loader as a wrapper that records any call.
    from autosave.model.registry import REGISTRY
    functions = []
    for name in sorted(SAFE_STDLIB_NAMES):
        module, _, attr = name.rpartition(".")
        if isinstance(getattr(sys.modules[module], attr), types.BuiltinFunctionType):
            functions.append(name)
    resolve = REGISTRY.resolve

    def traced_resolve(name, what="type"):
        found = resolve(name, what)
        return traced(name, found) if isinstance(found, types.BuiltinFunctionType) else found
    REGISTRY.resolve = traced_resolve
    outcomes = {}
    for name in functions + sorted(n for n in SAFE_STDLIB_NAMES if n not in functions):
        for p in range(POSITIONS):
            f = Forge()
            record, canary = callable_position(f, f.glob(name), p)
            f.rec("builtins.list", canary, record)
            try:
                loaded = autosave.loads(f.bytes())
                outcome = "loaded" if loaded[0] == [1, 2, 3] else "canary changed"
            except autosave.LoadError as e:
                outcome = "refused"
            except Exception as e:
                outcome = f"crashed: {type(e).__name__}: {e}"
            outcomes[f"{name}@{p}"] = outcome
    print(json.dumps({"calls": calls, "functions": functions, "outcomes": outcomes,
                      "wrapped": len(wrapped)}))
''')


@pytest.mark.slow
def test_no_resolvable_function_runs_during_a_load_in_any_callable_position(tmp_path):
    proc = subprocess.run([sys.executable, "-c", AUDIT_CHILD, str(HERE)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert len(report["functions"]) > 50
    assert report["wrapped"] >= len(report["functions"])    # the wrappers were in place
    assert any(report["outcomes"][f"builtins.len@{p}"] == "loaded" for p in (2, 3, 4))
    assert report["calls"] == [], report["calls"][:20]
    bad = {k: v for k, v in report["outcomes"].items() if v not in ("loaded", "refused")}
    assert not bad, bad
    # constructing a resolvable class is refused, except the three inert getters
    constructed = {k.split("@")[0] for k, v in report["outcomes"].items()
                   if v == "loaded" and k.endswith(("@0", "@1"))}
    assert constructed <= {"operator.itemgetter", "operator.attrgetter",
                           "operator.methodcaller"}, constructed
