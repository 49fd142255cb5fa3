"""The transform behind @autosave.coroutine: generator protocol, control flow, errors at
decoration time, labels, the codegen hook (same functions from generated source)."""

import collections.abc
import gc
import linecache
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.coroutines import labels as labels_mod
from autosave.coroutines import spec_of, transform
from modtools import fresh_name, load_module, unload


def build(source, name=None):
    """A fresh module from ``source`` (with ``import autosave`` prepended), whose
    functions ``inspect.getsource`` can read."""
    name = name or fresh_name("coro_t")
    autosave.allow(name)
    return source_module(name, "import autosave\n" + textwrap.dedent(source))


def source_module(name, source):
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    return load_module(name, source)


def drive(gen, ops):
    """Run ops ('next' | ('send', v) | ('throw', exc) | 'close') -> list of outcomes."""
    out = []
    for op in ops:
        try:
            if op == "next":
                out.append(("y", next(gen)))
            elif op == "close":
                out.append(("c", gen.close()))
            elif op[0] == "send":
                out.append(("y", gen.send(op[1])))
            else:
                exc = op[1]
                out.append(("y", gen.throw(exc() if isinstance(exc, type) else exc)))
        except StopIteration as e:
            out.append(("r", e.value))
        except Exception as e:  # noqa: BLE001
            out.append(("e", type(e).__name__, e.args))
    return out


BODY = '''
def walk(log, n):
    total = 0
    try:
        for i in range(n):
            try:
                got = yield i
            except KeyError as e:
                log.append(("key", e.args))
                got = yield "recovered"
            if got == "stop":
                break
            total += i if got is None else got
        else:
            log.append("done")
    finally:
        log.append("finally")
    return total
'''


@pytest.fixture(scope="module")
def pair():
    native = build(BODY)
    decorated = build(BODY.replace("def walk", "@autosave.coroutine\ndef walk"))
    yield native, decorated
    unload(native.__name__)
    unload(decorated.__name__)


SCRIPTS = [
    ["next"] * 6,
    ["next", ("send", 5), ("send", "stop"), "next"],
    ["next", ("throw", KeyError("k")), ("send", 7), "next", "next", "next"],
    ["next", ("throw", ValueError("v")), "next"],
    ["next", "close", "next"],
    [("send", 1)],
    [("throw", KeyError("early")), "next"],
    ["close", "next"],
]


@pytest.mark.parametrize("script", SCRIPTS)
def test_protocol_matches_a_native_generator(pair, script):
    native, decorated = pair
    ln, ld = [], []
    assert drive(decorated.walk(ld, 3), script) == drive(native.walk(ln, 3), script)
    assert ld == ln


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["next", ("send", 2), ("send", "stop"), ("send", None),
                                 ("throw", KeyError), "close"]), max_size=10),
       st.integers(0, 4))
def test_random_scripts_match_native(pair, script, n):
    native, decorated = pair
    ln, ld = [], []
    assert drive(decorated.walk(ld, n), script) == drive(native.walk(ln, n), script)
    gc.collect()   # a coroutine holding a caught exception is collected by the GC, not at once
    assert ld == ln


def test_generator_protocol_surface(pair):
    _, decorated = pair
    g = decorated.walk([], 2)
    assert iter(g) is g
    assert isinstance(g, collections.abc.Generator)
    assert hash(g) == hash(g) and g == g and g != decorated.walk([], 2)
    assert (g.gi_running, g.gi_suspended, g.label) == (False, False, "<start>")
    next(g)
    assert g.gi_suspended and g.label.startswith("got = (yield i)@")
    assert g.__name__ == "walk" and g.__qualname__ == "walk"
    g.close()
    assert g.gi_frame is None and g.label == "<done>"


def test_reentry_is_a_value_error():
    m = build('''
        @autosave.coroutine
        def me(box):
            yield next(box[0])
    ''')
    box = []
    g = m.me(box)
    box.append(g)
    with pytest.raises(ValueError, match="generator already executing"):
        next(g)


def test_yield_from_delegates_and_returns_the_result():
    m = build('''
        @autosave.coroutine
        def inner():
            got = yield "a"
            yield got
            return "result"

        @autosave.coroutine
        def outer(log):
            r = yield from inner()
            log.append(r)
            x = yield from [1, 2]
            log.append(x)
    ''')
    log = []
    g = m.outer(log)
    assert next(g) == "a"
    assert g.gi_yieldfrom is not None
    assert g.send("sent") == "sent"
    assert next(g) == 1 and next(g) == 2
    with pytest.raises(StopIteration):
        next(g)
    assert log == ["result", None]


def test_yields_inside_expressions_keep_evaluation_order():
    m = build('''
        def note(log, v):
            log.append(v)
            return v

        @autosave.coroutine
        def exprs(log):
            a = note(log, 1) + (yield "first") * note(log, 2)
            b = note(log, 0) or (yield "second")
            c = [note(log, "x"), (yield "third"), note(log, "y")]
            d = {"k": (yield "fourth")} if a else None
            e = f"{(yield 'fifth')}!"
            return a, b, c, d, e
    ''')
    log = []
    g = m.exprs(log)
    out = [next(g), g.send(10), g.send("S"), g.send("T"), g.send("U")]
    with pytest.raises(StopIteration) as stop:
        g.send("V")
    assert out == ["first", "second", "third", "fourth", "fifth"]
    assert stop.value.value == (21, "S", ["x", "T", "y"], {"k": "U"}, "V!")
    assert log == [1, 2, 0, "x", "y"]


def test_augmented_assignments_read_their_local_across_yields():
    m = build('''
        @autosave.coroutine
        def laps(n):
            count = 0
            while count < n:
                yield count
                count += 1
            return count
    ''')
    assert list(m.laps(3)) == [0, 1, 2]


def test_closures_see_later_assignments_across_yields():
    m = build('''
        @autosave.coroutine
        def counter():
            count = 0
            get = lambda: count
            def bump():
                nonlocal count
                count += 10
            while True:
                count += 1
                yield get
                bump()
    ''')
    g = m.counter()
    get = next(g)
    assert get() == 1
    next(g)
    assert get() == 12


def test_methods_super_and_mangled_names():
    m = build('''
        class Base:
            def step(self):
                return "base"

        class Guard(Base):
            def __init__(self):
                self.__secret = "s"

            @autosave.coroutine
            def patrol(self, n=2):
                for i in range(n):
                    yield (super().step(), self.__secret, i)
    ''')
    assert list(m.Guard().patrol()) == [("base", "s", 0), ("base", "s", 1)]


def test_tracebacks_point_at_the_users_lines():
    m = build('''
        @autosave.coroutine
        def fails():
            yield 1
            raise KeyError("here")
    ''')
    g = m.fails()
    next(g)
    with pytest.raises(KeyError) as e:
        next(g)
    last = e.traceback[-1]
    assert last.frame.code.raw.co_filename == m.__file__
    assert "raise KeyError" in str(last.statement)


REFUSED = {
    "a yield inside match": '''
        def f(x):
            match x:
                case 1:
                    yield 1
    ''',
    "async": '''
        async def f():
            yield 1
    ''',
    "not a generator function": '''
        def f():
            return 1
    ''',
    "a yield inside a for/with target": '''
        def f(xs):
            for xs[(yield)] in xs:
                pass
    ''',
}


@pytest.mark.parametrize("reason", sorted(REFUSED))
def test_what_cannot_be_resumed_is_refused_with_file_and_line(reason):
    source = textwrap.dedent(REFUSED[reason])
    m = build(source)
    with pytest.raises(autosave.CoroutineError) as e:
        autosave.coroutine(m.f)
    assert reason.split()[0] in str(e.value) or reason in str(e.value)
    assert e.value.filename == m.__file__ and e.value.lineno >= 2
    assert f"{m.__file__}:{e.value.lineno}:" in str(e.value)


def test_a_function_without_source_is_refused_clearly():
    namespace = {}
    exec("def f():\n    yield 1\n", namespace)
    with pytest.raises(autosave.CoroutineError, match="source is not available"):
        autosave.coroutine(namespace["f"])


# -- labels ------------------------------------------------------------------------------

def _points(*entries):
    return [labels_mod.PointInfo(ctx, text) for ctx, text in entries]


def test_labels_depend_on_content_not_position():
    a = labels_mod.assign(_points((("while",), "yield 1"), (("while", "if"), "x = yield 2")))
    b = labels_mod.assign(_points((("for",), "yield 0"), (("while",), "yield 1"),
                                  (("while", "if"), "x = yield 2")))
    assert a == b[1:]
    assert a[0].startswith("yield 1@")
    twice = labels_mod.assign(_points((("while",), "yield"), (("while",), "yield")))
    assert twice[1] == twice[0] + "#2"


def test_matching_keeps_old_labels_through_edits():
    old_points = _points((("while",), "yield 1"), (("while",), "x = yield wait(3)"),
                         (("while",), "yield 3"))
    old = labels_mod.manifest(old_points, labels_mod.assign(old_points))
    # a yield added in front, the second one edited a little and moved into an if
    new_points = _points((("while",), "yield 0"), (("while",), "yield 1"),
                         (("while", "if"), "x = yield wait(4)"), (("while",), "yield 3"))
    new = labels_mod.match(old, new_points)
    assert new[1:] == list(old)
    assert new[0] not in old
    assert len(set(new)) == 4


@given(st.lists(st.sampled_from(["yield", "yield 1", "x = yield", "yield y"]), max_size=8),
       st.integers(0, 8), st.sampled_from(["yield", "yield 9", "z = yield"]))
def test_an_inserted_point_never_takes_an_existing_label(texts, at, inserted):
    old_points = _points(*[(("while",), t) for t in texts])
    old = labels_mod.manifest(old_points, labels_mod.assign(old_points))
    at = min(at, len(texts))
    new_points = old_points[:at] + _points((("while",), inserted)) + old_points[at:]
    new = labels_mod.match(old, new_points)
    assert len(set(new)) == len(new)
    assert set(old) <= set(new)


def test_labels_survive_edits_elsewhere_in_the_function():
    before = build('''
        def patrol(guard):
            while True:
                x = yield guard
                yield x
    ''')
    after = build('''
        def patrol(guard):
            guard = guard or "g"          # a statement added
            print_me = None
            while True:
                if print_me:              # a new block elsewhere
                    yield "new"
                x = yield guard
                yield x
    ''')
    old = transform.transform(before.patrol)[1]["labels"]
    new = transform.transform(after.patrol)[1]["labels"]
    assert set(old) < set(new)


# -- codegen -----------------------------------------------------------------------------

def test_state_machine_source_is_deterministic_and_registers_a_machine(pair):
    native, _ = pair
    source, labels = transform.state_machine_source(native.walk)
    again, _ = transform.state_machine_source(native.walk)
    assert source == again
    assert "register_precompiled(" in source and "def _as_step" in source
    assert all(isinstance(k, str) for k in labels)
    compile(source, "<generated>", "exec")


def test_a_precompiled_machine_is_used_without_reading_the_source(monkeypatch):
    source = '''
        def walk(log, n):
            for i in range(n):
                log.append(i)
                yield i
            return "end"
    '''
    plain = build(source)
    generated = transform.module_source([plain.walk])
    gen_name = fresh_name("coro_gen")
    # the generated module names the plain module's function: register it for a module
    # of the same text made below
    target = fresh_name("coro_target")
    generated = generated.replace(plain.__name__, target)
    load_module(gen_name, generated)
    import inspect

    def no_source(*args, **kwargs):
        raise AssertionError("the precompiled machine must be used")
    monkeypatch.setattr(inspect, "getsourcelines", no_source)
    autosave.allow(target)
    decorated = source_module(target, "import autosave\n" + textwrap.dedent(source).replace(
        "def walk", "@autosave.coroutine\ndef walk"))
    monkeypatch.undo()
    log = []
    assert list(decorated.walk(log, 3)) == [0, 1, 2] and log == [0, 1, 2]
    # same saved bytes as a machine made at run time from the same text
    g1 = decorated.walk([], 3)
    next(g1)
    precompiled_bytes = autosave.dumps(g1)
    from autosave.coroutines import PRECOMPILED
    del PRECOMPILED[f"{target}.walk"]
    runtime = build(textwrap.dedent(source).replace("def walk", "@autosave.coroutine\ndef walk"),
                    target)
    g2 = runtime.walk([], 3)
    next(g2)
    assert autosave.dumps(g2) == precompiled_bytes
    unload(gen_name)


def test_a_stale_precompiled_machine_is_not_used():
    m = build('''
        def f():
            yield "old"
    ''')
    transform_src = transform.module_source([m.f])
    name = m.__name__
    load_module(fresh_name("coro_gen"), transform_src)
    unload(name)
    m2 = source_module(name, "import autosave\n@autosave.coroutine\ndef f():\n    yield 'new'\n")
    assert list(m2.f()) == ["new"]


def test_spec_of_the_decorated_function(pair):
    _, decorated = pair
    spec = spec_of(decorated.walk)
    assert spec.qualified_name.endswith(".walk")
    assert spec.labels[0] == "<start>" and len(spec.labels) >= 4


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.12 deprecates throw(type, value)")
def test_three_argument_throw_warns_like_native():
    m = build('''
        @autosave.coroutine
        def f():
            yield 1
    ''')
    g = m.f()
    next(g)
    with pytest.warns(DeprecationWarning), pytest.raises(KeyError):
        g.throw(KeyError, KeyError("k"), None)
