"""A loaded coroutine's hidden locals are typed (docs/security.md): a loop's iterator,
a ``with`` manager, a ``yield from`` delegate and a pending exception are used by the
coroutine's own code the moment the game resumes it, so a file must not choose what
they are. Each test parks a coroutine, plants a wrong value in one hidden slot (what a
hostile file would hold there), saves, and checks the load refuses it naming the label,
and that nothing ran."""

import linecache
import pathlib
import re
import textwrap

import pytest

import autosave
from modtools import fresh_name, load_module, unload

SCRIPT = '''
import autosave

class Door:
    def __init__(self, log):
        self.log = log
    def __enter__(self):
        self.log.append("open")
        return self
    def __exit__(self, *exc):
        self.log.append("close")

class Noisy:
    """Has send/throw/close as instance data only: a delegate must be typed by class."""

SHOUTED = []

def shout(text):
    SHOUTED.append(text)
    return text

@autosave.coroutine
def loop(log, items):
    for x in items:
        yield x

@autosave.coroutine
def door(log):
    with Door(log):
        yield "inside"
    yield "out"

@autosave.coroutine
def inner():
    yield 1
    yield 2

@autosave.coroutine
def outer():
    got = yield from inner()
    yield got

@autosave.coroutine
def handler(log):
    try:
        raise KeyError("k")
    except KeyError:
        yield "handling"
    yield "after"

@autosave.coroutine
def finalizer(log):
    try:
        yield "body"
    finally:
        yield "cleanup"
'''


@pytest.fixture
def hostile_writer(monkeypatch):
    """autosave's writer refuses a hidden local its loader would refuse; a hostile file
    holds one anyway: the check is off while these tests write theirs."""
    import autosave.coroutines.adapter as adapter
    monkeypatch.setattr(adapter, "_check_saved_hidden", lambda *a: None)


@pytest.fixture
def script():
    name = fresh_name("hidden")
    autosave.allow(name)
    source = textwrap.dedent(SCRIPT)
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    module = load_module(name, source)
    yield module
    unload(name)


def hidden(coro, kind):
    """The frame attribute of coroutine ``coro``'s hidden local of ``kind``, at the
    point it is parked."""
    spec = coro._spec
    for saved, attr in spec.saved[coro._state]:
        if saved.partition("@")[0].rstrip("0123456789") == kind:
            return attr
    raise AssertionError(f"no {kind} hidden local at {coro.label}: {spec.saved[coro._state]}")


def parked(script, kind):
    kind = kind.partition("-")[0]
    if kind == "iter":
        c = script.loop([], [1, 2, 3])
        next(c)
    elif kind == "with":
        c = script.door([])
        next(c)
    elif kind == "from":
        c = script.outer()
        next(c)
    elif kind == "exc":
        c = script.handler([])
        next(c)
    else:
        c = script.finalizer([])
        next(c)
        assert c.throw(ValueError("v")) == "cleanup"     # the finally runs, pending
    return c


PLANTED = {
    "iter": lambda m, tmp: m.Door([]),                   # not an iterator
    "iter-map": lambda m, tmp: map(m.shout, iter(["boom"])),   # calls the game's code
    "with": lambda m, tmp: pathlib.Path(tmp),            # exit code outside the game
    "from": lambda m, tmp: m.Noisy(),                    # no protocol of its own
    "exc": lambda m, tmp: "not an exception",
    "pending": lambda m, tmp: ("return",),               # a return carries its value
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_planted_hidden_local_is_refused_naming_the_label(script, kind, tmp_path,
                                                             hostile_writer):
    c = parked(script, kind)
    autosave.loads(autosave.dumps(c))            # the honest save loads
    attr = hidden(c, kind.partition("-")[0])
    honest, c.__dict__[attr] = c.__dict__[attr], PLANTED[kind](script, tmp_path)
    try:
        with pytest.raises(autosave.FormatError,
                           match=rf"label {re.escape(repr(c.label))}.*{kind.partition('-')[0]}"):
            autosave.loads(autosave.dumps(c))
        assert script.SHOUTED == []
    finally:
        c.__dict__[attr] = honest        # closed on collection as it was parked


def test_a_delegate_is_driven_through_its_class_not_its_instance(script):
    """Instance attributes named send/throw/close on a delegate are data, never called."""
    c = script.outer()
    next(c)
    d = c.__dict__[hidden(c, "from")]
    calls = []
    d.__dict__["send"] = lambda v: calls.append(v)
    back = autosave.loads(autosave.dumps(c))
    assert back.send("x") == 2 and calls == []


def test_honest_hidden_locals_of_every_kind_still_load(script):
    for make in (lambda: script.loop([], range(5)), lambda: script.loop([], {"a": 1}),
                 lambda: script.loop([], enumerate("ab")), lambda: script.loop([], script.inner()),
                 lambda: script.door([]), lambda: script.outer(), lambda: script.handler([]),
                 lambda: script.finalizer([])):
        c = make()
        next(c)
        back = autosave.loads(autosave.dumps(c))
        assert list(back) == list(c)


def test_a_loop_over_a_game_function_map_is_refused_at_save_with_a_fix_that_works(script):
    c = script.loop([], map(script.shout, ["a", "b", "c"]))
    next(c)
    with pytest.raises(autosave.SaveError, match=r"iterate a list instead"):
        autosave.dumps(c)
    fixed = script.loop([], list(map(script.shout, ["a", "b", "c"])))   # the fix
    next(fixed)
    assert list(autosave.loads(autosave.dumps(fixed))) == ["b", "c"]
    pure = script.loop([], map(abs, [-1, -2, -3]))       # a pure function's map resumes
    next(pure)
    assert list(autosave.loads(autosave.dumps(pure))) == [2, 3]
