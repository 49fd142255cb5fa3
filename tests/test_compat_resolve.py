"""The gate's loader-derived verdicts (autosave/compat/resolve.py): a baseline's records
are handed to the loader's own decision functions, and `check` holds its rules to them."""

import importlib.util
import linecache
import sys

import autosave
from autosave.compat import resolve
from autosave.compat.check import compare
from autosave.compat.model import (ClassEntry, CoroutineEntry, FieldEntry, LabelEntry,
                                   LiveLocal, Snapshot)
from modtools import fresh_name

SOURCE = '''
import attrs, autosave

@autosave.save_root
@attrs.define
class Hero:
    name: str
    level: int

@autosave.coroutine
def walk(hero, steps):
    for i in range(steps):
        yield i
'''


def load(tmp_path, source):
    name = fresh_name("resolvegame")
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def hero_entry(module, *fields):
    return ClassEntry(path=f"{module.__name__}.Hero", version=1, strategy="instance",
                      fields=tuple(FieldEntry(f, "str") for f in fields))


def test_the_loader_decides_which_records_of_a_class_load(tmp_path):
    m = load(tmp_path, SOURCE)
    name = f"{m.__name__}.Hero"
    assert resolve.class_refusals(name, hero_entry(m, "name", "level")) == []
    assert resolve.class_refusals(name, hero_entry(m, "name", "level", "gone")) == []
    (refused,) = resolve.class_refusals(name, hero_entry(m, "name"))
    assert "'level'" in refused.message and "no default" in refused.message
    (refused,) = resolve.class_refusals(f"{m.__name__}.Villain", hero_entry(m, "name"))
    assert "Villain" in refused.message


def test_the_loader_decides_labels_and_locals_of_a_coroutine(tmp_path):
    m = load(tmp_path, SOURCE)
    function = f"{m.__name__}.walk"
    spec = resolve.resolve_coroutine(function)
    label = next(iter(spec.state_of.keys() - {"<start>", "<done>"}))
    def held(*names):
        return tuple(LiveLocal(n, True, True) for n in names)

    saved = [n for n, _ in spec.saved[spec.state_of[label]]]
    assert {"hero", "steps", "i"} <= set(saved)
    entry = CoroutineEntry(function, {label: LabelEntry(live=held(*saved))},
                           params=("hero", "steps"))
    assert resolve.coroutine_refusals(function, entry) == []
    gone = CoroutineEntry(function, {"yield x@000000": LabelEntry(live=held())},
                          params=("hero", "steps"))
    (refused,) = resolve.coroutine_refusals(function, gone)
    assert refused.member == "yield x@000000" and "no longer has" in refused.message
    hidden = [n for n in saved if "@" in n]        # the loop's iterator: needed to resume
    lacking = CoroutineEntry(function, {label: LabelEntry(live=held("hero", "i", "steps"))},
                             params=("hero", "steps"))
    (refused,) = resolve.coroutine_refusals(function, lacking)
    assert refused.member == f"{label}:{hidden[0]}"


def test_a_refusal_no_rule_explains_is_load_refused(tmp_path):
    m = load(tmp_path, SOURCE)
    name = f"{m.__name__}.Hero"
    # the baseline says the class had no fields: the rules see nothing new (a baseline
    # entry and a current one alike), yet its records would lack both fields
    entry = hero_entry(m)
    base = Snapshot(source="b", format=4, classes={name: entry}, assets=[], trusted=[])
    current = Snapshot(source="current", format=4, classes={name: entry}, assets=[],
                       trusted=[], live=True)
    findings = compare(base, current)
    refused = [f for f in findings if f.rule == "LOAD_REFUSED"]
    assert refused and refused[0].breaking and "no default" in refused[0].message
    assert autosave  # the package is imported: the loader sees the classes


def test_a_class_saved_through_reduce_is_judged_by_its_name_only(tmp_path):
    m = load(tmp_path, SOURCE + '''

class Point:
    def __init__(self, x):
        self.x = x

    def __reduce__(self):
        return (Point, (self.x,))
''')
    entry = ClassEntry(path=f"{m.__name__}.Point", version=1, strategy="reduce")
    assert resolve.class_refusals(f"{m.__name__}.Point", entry) == []
    assert resolve.class_refusals(f"{m.__name__}.Gone", entry)
