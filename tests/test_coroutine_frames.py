"""Coroutine frames that tolerate ordinary edits: every local bound at a yield is saved
(parameters always), a parameter added with a default gets it on load, and saves of an
earlier autosave (which held only the live locals) still load."""

import os
import subprocess
import sys
from pathlib import Path

import autosave
from autosave.format.expand import records_of
from modtools import fresh_name


def load_module(name, source, directory):
    """Execute ``source`` from a file (a coroutine needs its source) as module ``name``."""
    import importlib.util
    import linecache
    path = directory / f"{name}.py"
    path.write_text(source)
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    autosave.allow(name)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

ROOT = Path(__file__).resolve().parent.parent

V1 = '''
import autosave

@autosave.coroutine
def greet(owner, guard, times=2):
    label = owner.upper()
    for i in range(times):
        got = yield i
    yield "bye"
'''

# after the first yield the patch reads the parameter and the earlier local, which are
# dead there in release 1
V2 = '''
import autosave

@autosave.coroutine
def greet(owner, guard, times=2, loud=False):
    label = owner.upper()
    for i in range(times):
        got = yield i
        if loud:
            print(guard, label)
    yield (label, guard, owner)
'''


def coroutine_locals(data):
    types, records, _ = records_of(data)
    names = [t[0] for t in types]
    out = []
    for rec in records:
        if names[rec[0]] == "autosave.coroutine":
            out.append((rec[2], rec[3::2]))
    return out


def test_every_local_bound_at_the_yield_is_saved_by_name(tmp_path):
    m = load_module(fresh_name("frames"), V1, tmp_path)
    g = m.greet("ann", "bob")
    next(g)
    [(label, names)] = coroutine_locals(autosave.dumps(g))
    assert {"owner", "guard", "times", "label", "i"} <= set(names), names
    assert "got" not in names       # bound by the yield itself: not yet


def test_a_patch_reading_earlier_locals_and_a_new_defaulted_parameter_loads(tmp_path):
    name = fresh_name("frames")
    m = load_module(name, V1, tmp_path)
    parked = [m.greet("ann", "bob") for _ in range(3)]
    next(parked[1])
    next(parked[2]), parked[2].send("x")
    data = autosave.dumps(parked)
    load_module(name, V2, tmp_path)
    loaded = autosave.loads(data)
    assert list(loaded[0]) == [0, 1, ("ANN", "bob", "ann")]          # from <start>
    assert list(loaded[1]) == [1, ("ANN", "bob", "ann")]
    assert list(loaded[2]) == [("ANN", "bob", "ann")]


def test_a_save_holding_only_the_live_locals_still_loads_and_plays():
    # made by the release-1 shop of examples/compat with an autosave that saved only
    # the locals live at each yield
    code = ("import sys, autosave, shop\n"
            "talk = autosave.load(sys.argv[1]).talks[0]\n"
            "print(talk.send(None), talk.send(None))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    path = ROOT / "tests" / "data" / "shop_later_live_locals_only.sav"
    done = subprocess.run([sys.executable, "-c", code, str(path)],
                          cwd=ROOT / "examples" / "compat" / "release1", env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["10", "9"]      # haggle(12) was parked at 11
    [(_, names)] = coroutine_locals(path.read_bytes())
    assert "start_price" not in names and "price" in names      # the live ones only


def test_diff_shows_a_coroutine_s_label_and_locals_by_name(tmp_path):
    from autosave.compat.diff import diff
    m = load_module(fresh_name("frames"), V1, tmp_path)
    a, b = m.greet("ann", "bob", 3), m.greet("ann", "bob", 3)
    next(a)
    next(b), b.send("x")
    result = diff(autosave.dumps(a), autosave.dumps(b))
    changes = {c.path: (c.kind, c.a, c.b) for c in result.changes}
    at = next(p for p in changes if p.endswith("}.i")).rsplit(".", 1)[0]
    assert at.startswith("root{at 'got = (yield i)")
    assert changes[f"{at}.i"] == ("value", 0, 1)
    assert changes[f"{at}.got"] == ("local added", None, "x")
    c = autosave.dumps(m.greet("ann", "bob", 3))
    result = diff(c, autosave.dumps(a))
    assert any(ch.path == "root.<label>" and ch.a == "<start>" for ch in result.changes)
