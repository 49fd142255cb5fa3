"""The gadget audit over the libraries a game allows (docs/security.md).

With numpy, pandas, mesa and networkx all passed to ``autosave.allow``, every class and
function of those packages that a save can name is put in the places a file can hand
the loader a callable, one place per file: a reduce record's constructor (with no
arguments, with a path and a write mode, with small ints), an allocation (``__new__``
with and without a path), a ``map``, a ``partial``, a ``defaultdict`` factory. In a
process of its own, with an audit hook armed during each load, the test checks that
nothing opened a file, imported a module, started a process or opened a socket, that
the library functions (wrapped to record calls) were never called, and that the only
constructions were allocations with no arguments or went through the reconstructor
registry.

CI runs a seeded sample of the names; ``AUTOSAVE_AUDIT_ALL=1`` runs every one.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow       # a child process importing four libraries (~10 s)

HERE = Path(__file__).parent
LIBRARIES = ("numpy", "pandas", "mesa", "networkx")

CHILD = textwrap.dedent('''
    import importlib, json, os, random, sys, types
    sys.path.insert(0, sys.argv[1])
    victim, sample = sys.argv[2], int(sys.argv[3])
    libraries = sys.argv[4:]
    for name in libraries:
        importlib.import_module(name)
    import autosave
    from autosave.model.reconstructors import entry_for
    from autosave.model.registry import REGISTRY
    from forge import Forge
    for name in libraries:
        autosave.allow(name)

    names = set()
    for modname, module in list(sys.modules.items()):
        if modname.partition(".")[0] not in libraries or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("__") or not (isinstance(value, type)
                                             or callable(value)):
                continue
            home = getattr(value, "__module__", None)
            qual = getattr(value, "__qualname__", None)
            if not isinstance(home, str) or not isinstance(qual, str) or "<" in qual:
                continue
            if home.partition(".")[0] in libraries:
                names.add(f"{home}.{qual}")
    names = sorted(names)
    if sample and len(names) > sample:
        names = sorted(random.Random(1).sample(names, sample))

    events, armed, current = [], [False], [None]
    # File system, imports, processes, sockets, ctypes. Not exec/compile: allocating a
    # networkx graph (cls.__new__, as pickle's __newobj__ does) runs networkx's dispatch
    # decorator, which compiles its own wrapper from a fixed template on first use --
    # the library's code, with nothing from the file in it.
    WATCHED = ("open", "import", "os.", "subprocess", "socket", "shutil", "ctypes")

    def hook(event, args):
        if armed[0] and event.startswith(WATCHED):
            events.append(f"{current[0]}: {event} {str(args)[:80]}")
    sys.addaudithook(hook)

    calls = []
    resolve = REGISTRY.resolve

    def traced_resolve(name, what="type"):
        found = resolve(name, what)
        if isinstance(found, (types.FunctionType, types.BuiltinFunctionType)):
            def wrapper(*a, **k):
                calls.append(name)
                return found(*a, **k)
            wrapper.__module__, wrapper.__qualname__ = found.__module__, found.__qualname__
            return wrapper
        return found
    REGISTRY.resolve = traced_resolve

    def position(f, fn, label):
        """The one record of shape ``label`` handing the loader ``fn``: a file holding
        the others too would be refused for them, and test nothing of this one."""
        empty = lambda: f.rec("builtins.list")
        it = lambda: f.rec("builtins.list_iterator", f.rec("builtins.list", victim), 0)

        def reduce(newobj, *args):
            return f.rec("autosave.reduce", fn, newobj, f.rec("builtins.tuple", *args),
                         None, empty(), empty())
        return {
            "reduce()": lambda: reduce(False),
            "reduce(path, w+)": lambda: reduce(False, victim, "w+"),
            "reduce(2, 3)": lambda: reduce(False, 2, 3),
            "newobj(path)": lambda: reduce(True, victim),
            "newobj()": lambda: reduce(True),
            "map": lambda: f.rec("builtins.map", fn, it()),
            "partial": lambda: f.rec("functools.partial", fn, f.rec("builtins.tuple", victim),
                                     f.rec("builtins.dict"), None),
            "defaultdict": lambda: f.rec("collections.defaultdict", fn, 1, empty()),
        }[label]()

    outcomes, called = {}, {}
    for name in names:
        for label in ("reduce()", "reduce(path, w+)", "reduce(2, 3)", "newobj(path)",
                      "newobj()", "map", "partial", "defaultdict"):
            f = Forge()
            record = position(f, f.glob(name), label)
            f.rec("builtins.list", record)
            data = f.bytes()
            before = set(sys.modules)
            current[0] = f"{name}@{label}"
            armed[0] = True
            try:
                autosave.loads(data)
                outcome = "loaded"
            except autosave.LoadError:
                outcome = "refused"
            except MemoryError:
                outcome = "crashed: MemoryError"
            except Exception as e:
                outcome = f"crashed: {type(e).__name__}: {str(e)[:100]}"
            armed[0] = False
            if set(sys.modules) - before:
                outcome += " +imported " + ",".join(sorted(set(sys.modules) - before))
            outcomes[f"{name}@{label}"] = outcome
    # which of the loaded reduce records went through which gate
    gates = {}
    for key, outcome in outcomes.items():
        name, _, label = key.partition("@")
        if outcome == "loaded" and label.startswith(("reduce", "newobj")):
            fn = resolve(name, "global")
            nargs = {"reduce()": 0, "reduce(path, w+)": 2, "reduce(2, 3)": 2,
                     "newobj(path)": 1, "newobj()": 0}[label]
            entry = entry_for(fn, label.startswith("newobj"), nargs)
            gates[key] = "allocate" if entry is None else entry.source
    loaded = sum(v == "loaded" for v in outcomes.values())
    print(json.dumps({"names": len(names), "calls": calls, "events": events,
                      "outcomes": outcomes, "gates": gates, "loaded": loaded}))
''')


def test_allowed_libraries_expose_no_gadget(tmp_path):
    present = [name for name in LIBRARIES if _importable(name)]
    if not present:
        pytest.skip("none of the audited libraries is installed")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    sample = 0 if os.environ.get("AUTOSAVE_AUDIT_ALL") else 150
    proc = subprocess.run([sys.executable, "-c", CHILD, str(HERE), str(victim), str(sample),
                           *present], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["names"] >= min(sample or 1, 100), report["names"]
    # the records that hand the loader a callable without calling it do load: the audit
    # put the names where they would run if the loader ran them
    assert report["loaded"] >= report["names"], report["loaded"]
    assert victim.read_bytes() == b"precious"
    assert report["events"] == [], report["events"][:20]
    assert report["calls"] == [], report["calls"][:20]
    bad = {k: v for k, v in report["outcomes"].items()
           if v not in ("loaded", "refused")}
    assert not bad, dict(list(bad.items())[:20])
    # a library's constructor runs only through an entry autosave registered (its own
    # __reduce__ does not make it constructible: it is not the game's); an allocation
    # takes no arguments
    for key, gate in report["gates"].items():
        assert gate in ("allocate", "autosave"), (key, gate)


def _importable(name):
    import importlib.util
    return importlib.util.find_spec(name) is not None
