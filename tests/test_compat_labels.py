"""The gate on labels a developer names: twins, pinned labels, reserved labels.

Each test imports real code (two releases of one module, in this process), takes the
first release's snapshot as the baseline and judges the second with the checker and
the loader, as `autosave compat check` does (tests/test_compat_groundtruth.py plays the
same cases against saves)."""

import ast

import pytest

import autosave
from autosave.compat import describe, model
from autosave.compat.check import compare
from autosave.compat.twins import pinned_text
from autosave.coroutines import labels as labels_mod
from modtools import fresh_name, unload
from test_coroutine_transform import source_module

WAIT = labels_mod.base_label((), "yield 'wait'")


def scene(waits, decorator="@autosave.coroutine"):
    lines = ["import autosave", decorator, "def scene(log):", '    yield "title"']
    return "\n".join(lines + ["    " + w for w in waits] + ['    yield "end"', ""])


def judge(old, new):
    """The findings of release ``new`` against release ``old`` (module sources)."""
    name = fresh_name("gate_labels")
    autosave.allow(name)
    source_module(name, old)
    # through the manifest document, as a baseline file is read
    base = model.loads(model.dumps(describe.snapshot([name])), "1.0.json")
    unload(name)
    source_module(name, new)
    try:
        return compare(base, describe.snapshot([name]))
    finally:
        unload(name)


def rules(findings, severity=None):
    return sorted((f.rule, f.member) for f in findings
                  if severity is None or f.severity == severity)


def pin(label):
    return f"yield autosave.label({label!r}, 'wait')"


def test_an_unpinned_twin_inserted_is_breaking_and_pinned_it_is_not():
    old = scene(['yield "wait"'] * 2)
    (f,) = [f for f in judge(old, scene(['yield "wait"'] * 3)) if f.breaking]
    assert f.rule == "COROUTINE_TWINS_CHANGED" and f.member == WAIT
    statement = pinned_text("yield 'wait'", WAIT)
    assert f"`{statement}`" in f.fix
    pinned = scene(['yield "wait"', pin(WAIT), pin(WAIT + "#2")])
    findings = judge(old, pinned)
    assert not [f for f in findings if f.breaking], findings
    assert ("COROUTINE_LABEL_ADDED", WAIT + "#3") in rules(findings)


def test_twins_pinned_in_the_baseline_stay_apart():
    old = scene([pin("a"), pin("b")])
    assert not [f for f in judge(old, scene([pin("a"), 'yield "wait"', pin("b")]))
                if f.breaking]
    breaking = [f for f in judge(old, scene([pin("b")])) if f.breaking]
    assert {(f.rule, f.member) for f in breaking} == {("COROUTINE_LABEL_REMOVED", "a")}
    assert "reserved=('a',)" in breaking[0].fix


def test_a_removed_twin_unpinned_carries_the_pin_fix_on_every_finding():
    findings = judge(scene(['yield "wait"'] * 3), scene(['yield "wait"'] * 2))
    breaking = [f for f in findings if f.breaking]
    assert {f.rule for f in breaking} == {"COROUTINE_TWINS_CHANGED", "COROUTINE_LABEL_REMOVED"}
    assert all(f.fix.startswith("pin the labels saves may be parked at") for f in breaking)


def test_a_reserved_label_reused_and_released():
    # release 1 removed `yield "x"` and reserved its label; release 2 adds it back
    x = labels_mod.base_label((), "yield 'x'")
    reserving = f"@autosave.coroutine(reserved=({x!r},))"
    old = scene(['yield "wait"'], reserving)
    reused = judge(old, scene(['yield "wait"', 'yield "x"']))
    assert rules(reused, "breaking") == [("RESERVED_NAME_REUSED", x)]
    (reuse,) = [f for f in reused if f.rule == "RESERVED_NAME_REUSED"]
    assert reuse.fix.startswith(f"keep {x!r} in reserved= of @autosave.coroutine")
    # the fix as written: the yield takes another label, nothing is reused
    fixed = judge(old, scene(['yield "wait"', 'yield "x"'], reserving))
    assert not [f for f in fixed if f.severity != "info"], fixed
    assert ("COROUTINE_LABEL_ADDED", x + "#2") in rules(fixed)
    released = judge(old, scene(['yield "wait"']))
    assert rules(released, "warning") == [("RESERVED_NAME_RELEASED", x)]
    (rel,) = [f for f in released if f.rule == "RESERVED_NAME_RELEASED"]
    assert rel.fix.startswith(f"keep @autosave.coroutine(reserved=({x!r}, ...))")
    # a pinned label that reuses it is refused where it is written
    with pytest.raises(autosave.CoroutineError, match="is reserved"):
        judge(old, scene(['yield "wait"', pin(x)], reserving))


def test_pins_and_reservations_round_trip_through_the_manifest():
    name = fresh_name("gate_labels")
    autosave.allow(name)
    source_module(name, scene([pin("p"), 'yield "wait"'],
                              "@autosave.coroutine(reserved=('gone',))"))
    try:
        snap = describe.snapshot([name])
    finally:
        unload(name)
    again = model.loads(model.dumps(snap), "x.json")
    (entry,) = again.coroutines.values()
    assert entry.reserved == ("gone",) and entry.labels["p"].pinned
    assert not entry.labels[WAIT].pinned


@pytest.mark.parametrize("text, label, expected", [
    ("yield 'wait'", "L", "yield autosave.label('L', 'wait')"),
    ("got = yield", "L", "got = yield autosave.label('L')"),
    ("paid = yield from haggle(m, i)", "L", "paid = yield from autosave.label('L', haggle(m, i))"),
    ("f((yield a), (yield b)) |2", "L", "f((yield a), (yield autosave.label('L', b)))"),
])
def test_pinned_text_pins_the_right_yield(text, label, expected):
    assert ast.dump(ast.parse(pinned_text(text, label))) == ast.dump(ast.parse(expected))


def test_labels_without_their_text_are_grouped_by_label():
    def doc(labels):
        return model.parse({"autosave_manifest": 1, "packages": ["g"], "classes": {},
                            "external": [],
                            "coroutines": {"g.f": {"labels": {
                                label: {"index": i} for i, label in enumerate(labels)}}}},
                           "x.json")
    findings = compare(doc(["w@1", "w@1#2", "t@2"]), doc(["w@1", "w@1#2", "w@1#3", "t@2"]))
    assert ("COROUTINE_TWINS_CHANGED", "w@1") in rules(findings, "breaking")
    assert not [f for f in compare(doc(["w@1", "t@2"]), doc(["w@1", "t@2", "u@3"]))
                if f.rule == "COROUTINE_TWINS_CHANGED"]
