"""Pinned labels (`yield autosave.label(NAME, value)`) and reserved labels
(`@autosave.coroutine(reserved=...)`): the names a developer gives resume points, so
identical yields stay apart when one is inserted or removed (docs/coroutines.md)."""

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.coroutines import PRECOMPILED, spec_of, transform
from autosave.coroutines import labels as labels_mod
from autosave.errors import CoroutineError, IncompatibleSaveError
from modtools import fresh_name, load_module, unload
from test_coroutine_transform import build, drive, source_module

WAIT = labels_mod.base_label((), "yield 'wait'")

TWINS = '''
def scene(log):
    yield "title"
    {waits}
    log.append("spoke")
    yield "end"
'''


def scene(waits):
    return TWINS.format(waits="\n    ".join(waits))


def pin(label, value="'wait'"):
    return f"yield autosave.label({label!r}, {value})"


def labels_of(module, name="scene"):
    return [label for state, label in sorted(spec_of(getattr(module, name)).labels.items())
            if state > 0]


def test_a_pinned_yield_has_its_label_and_yields_its_value():
    body = scene(['yield "wait"', pin("pause"), 'got = yield autosave.label("ask")',
                  'log.append(got)', 'yield from autosave.label("sub", iter([1, 2]))'])
    native = build(body.replace("autosave.label(", "(lambda n, v=None: v)("))
    decorated = build("@autosave.coroutine" + body)
    assert labels_of(decorated) == [
        labels_mod.base_label((), "yield 'title'"), WAIT, "pause", "ask", "sub",
        labels_mod.base_label((), "yield 'end'")]
    ops = ["next"] * 4 + [("send", "x")] + ["next"] * 4
    log1, log2 = [], []
    assert drive(decorated.scene(log2), ops) == drive(native.scene(log1), ops)
    assert log1 == log2
    labels = labels_of(decorated)
    assert "pause" in labels and "ask" in labels and "sub" in labels


def test_pinned_labels_survive_a_save_and_a_twin_inserted_anywhere():
    name = fresh_name("coro_pins")
    autosave.allow(name)
    v1 = source_module(name, "import autosave\n@autosave.coroutine" + textwrap.dedent(
        scene([pin(WAIT), pin(WAIT + "#2"), pin(WAIT + "#3")])))
    log = []
    parked = []
    for k in range(2, 5):          # parked at each of the three waits
        g = v1.scene(log)
        for _ in range(k):
            next(g)
        parked.append(autosave.dumps(g))
    unload(name)
    for waits in ([pin(WAIT), 'yield "wait"', pin(WAIT + "#2"), pin(WAIT + "#3")],
                  ['yield "wait"', pin(WAIT), pin(WAIT + "#2"), pin(WAIT + "#3")],
                  [pin(WAIT), pin(WAIT + "#2"), pin(WAIT + "#3"), 'yield "wait"']):
        v2 = source_module(name, "import autosave\n@autosave.coroutine" + textwrap.dedent(
            scene(waits)))
        assert WAIT + "#4" in labels_of(v2)
        for k, data in enumerate(parked):
            # the rest of the scene: every wait after the pinned one, then "end"
            at = waits.index(pin(WAIT if k == 0 else f"{WAIT}#{k + 1}"))
            assert list(autosave.loads(data)) == ["wait"] * (len(waits) - at - 1) + ["end"]
        unload(name)


@pytest.mark.parametrize("body, message", [
    ([pin("a"), pin("a")], "pinned on two yields"),
    (["x = autosave.label('a', 1)", "yield x"], "names a yield"),
    (["n = 'a'", "yield autosave.label(n, 1)"], "string literal"),
    ([pin("<start>")], "autosave's own"),
    (["yield from autosave.label('a')"], "needs the iterable"),
    (["yield autosave.label('a', 1, 2)"], "takes (NAME, value)"),
])
def test_a_malformed_pin_is_refused_when_decorated(body, message):
    with pytest.raises(CoroutineError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build("@autosave.coroutine" + scene(body))


def test_a_pin_is_recognised_by_what_it_resolves_to():
    m = build("from autosave import label as L\nimport autosave as a\n"
              "@autosave.coroutine" + scene(["yield L('x', 'wait')", "yield a.label('y')"]))
    assert {"x", "y"} <= set(labels_of(m))
    # a local function named label is not the marker: its call is a plain operand
    m = build("@autosave.coroutine" + scene(["label = lambda n, v: n", "yield label('z', 1)"]))
    assert "z" not in labels_of(m) and list(m.scene([]))[1] == "z"


def test_reserved_labels_are_never_taken():
    m = build(f"@autosave.coroutine(reserved=({WAIT + '#2'!r},))" + scene(['yield "wait"'] * 3))
    assert [label for label in labels_of(m) if label.startswith(WAIT)] == [
        WAIT, WAIT + "#3", WAIT + "#4"]
    assert spec_of(m.scene).data["reserved"] == [WAIT + "#2"]
    with pytest.raises(CoroutineError, match="is reserved"):
        build("@autosave.coroutine(reserved=('p',))" + scene([pin("p")]))
    with pytest.raises(CoroutineError, match="not one string"):
        build("@autosave.coroutine(reserved='p')" + scene(['yield "wait"']))


def test_a_save_parked_at_a_reserved_label_is_refused():
    name = fresh_name("coro_res")
    autosave.allow(name)
    v1 = source_module(name, "import autosave\n@autosave.coroutine" + textwrap.dedent(
        scene(['yield "wait"'] * 3)))
    g = v1.scene([])
    for _ in range(4):
        next(g)            # parked at the third wait
    data = autosave.dumps(g)
    unload(name)
    source_module(name, f"import autosave\n@autosave.coroutine(reserved=({WAIT + '#3'!r},))"
                  + textwrap.dedent(scene(['yield "wait"'] * 3)))
    with pytest.raises(IncompatibleSaveError, match="#3"):
        autosave.loads(data)
    unload(name)


def test_generated_machines_keep_pins_and_reservations_and_give_the_same_bytes():
    body = scene(['yield "wait"', pin("p"), 'yield "wait"'])
    reserved = f"@autosave.coroutine(reserved=({WAIT!r},))"
    runtime = build(reserved + body)
    target = runtime.__name__
    generated = transform.module_source([runtime.scene])
    assert "'reserved'" in generated or '"reserved"' in generated
    gen_name = fresh_name("coro_gen")
    g1 = runtime.scene([])
    for _ in range(3):
        next(g1)
    runtime_bytes = autosave.dumps(g1)
    runtime_labels = labels_of(runtime)
    unload(target)
    PRECOMPILED.pop(f"{target}.scene", None)
    load_module(gen_name, generated)
    assert f"{target}.scene" in PRECOMPILED
    pre = source_module(target, "import autosave\n" + reserved + textwrap.dedent(body))
    assert spec_of(pre.scene).data is PRECOMPILED[f"{target}.scene"][2]
    assert labels_of(pre) == runtime_labels
    g2 = pre.scene([])
    for _ in range(3):
        next(g2)
    assert autosave.dumps(g2) == runtime_bytes
    unload(target)
    # the same code with other reservations does not use the machine
    other = source_module(target, "import autosave\n@autosave.coroutine" + textwrap.dedent(body))
    assert spec_of(other.scene).data is not PRECOMPILED[f"{target}.scene"][2]
    # made from its source, keeping the previous build's labels where it can
    assert labels_of(other) == runtime_labels
    unload(target)
    unload(gen_name)


def test_no_pins_no_reservations_labels_as_before():
    # The benchmark's and every existing save's labels: content labels, #n in order.
    points = [labels_mod.PointInfo((), "yield 'wait'") for _ in range(3)]
    assert labels_mod.assign(points) == [WAIT, WAIT + "#2", WAIT + "#3"]


keys = st.tuples(st.sampled_from([(), ("while",), ("if",)]),
                 st.sampled_from(["yield 'a'", "yield 'b'", "x = yield"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(keys, st.booleans()), max_size=12),
       st.lists(st.sampled_from(["r1", WAIT, WAIT + "#2", "yield 'a'@0a0a0a#2"]),
                max_size=3),
       st.booleans())
def test_assigned_labels_are_unique_and_keep_pins_and_reservations(spec, reserved, prev):
    points = [labels_mod.PointInfo(ctx, text, i, f"pin{i}" if pinned else None)
              for i, ((ctx, text), pinned) in enumerate(spec)]
    reserved = [r for r in reserved if r not in {p.pinned for p in points}]
    previous = None
    if prev:
        plain = [labels_mod.PointInfo(p.context, p.text, p.line) for p in points[::-1]]
        previous = labels_mod.manifest(plain, labels_mod.assign(plain))
    labels = labels_mod.assign(points, previous, reserved)
    assert len(set(labels)) == len(labels)
    assert not set(labels) & set(reserved)
    for p, label in zip(points, labels):
        if p.pinned is not None:
            assert label == p.pinned
    if not reserved and not any(p.pinned for p in points) and not prev:
        assert labels == labels_mod.content_labels(points)
