"""Saving and loading suspended @autosave.coroutine generators: mid-flight, after the
game's code changed (labels), against forged saves (trust), in cycles, by the thousand."""

import linecache
import textwrap

import msgpack
import pytest

import autosave
from autosave.format.wire import frame, unframe
from forge import coroutines_as_records
from helpers import roundtrip
from modtools import fresh_name, load_module, unload


def source_module(name, source):
    source = "import autosave\n" + textwrap.dedent(source)
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    return load_module(name, source)


@pytest.fixture
def game():
    """A fresh allowed module per test, rebuilt from new source by ``patch``."""
    name = fresh_name("coro_s")
    autosave.allow(name)
    made = {}

    def make(source):
        made["m"] = source_module(name, source)
        return made["m"]
    yield make
    unload(name)


GUARD = '''
class Guard:
    def __init__(self, name):
        self.name = name
        self.log = []
        self.brain = None

class Door:
    def __init__(self, log):
        self.log = log
    def __enter__(self):
        self.log.append("open")
        return self
    def __exit__(self, *exc):
        self.log.append(("close", exc[0].__name__ if exc[0] else None))

@autosave.coroutine
def patrol(guard, points):
    laps = 0
    while True:
        for i, p in enumerate(points):
            guard.log.append(("at", p))
            got = yield p
            if got == "rest":
                with Door(guard.log):
                    yield "resting"
        laps += 1
        if laps == 2:
            return laps
'''


def run(gen, n, value=None):
    out = []
    for _ in range(n):
        try:
            out.append(gen.send(value) if value is not None else next(gen))
        except StopIteration as e:
            out.append(("return", e.value))
            break
    return out


def test_a_suspended_coroutine_continues_after_a_load(game):
    m = game(GUARD)
    g = m.Guard("ann")
    g.brain = m.patrol(g, ["a", "b", "c"])      # a cycle: guard -> coroutine -> guard
    run(g.brain, 2)
    copy = roundtrip(g)
    assert copy.brain is not g.brain and copy.brain.gi_suspended
    assert run(copy.brain, 10) == run(g.brain, 10)
    assert copy.log == g.log


def test_shared_containers_and_open_with_blocks_survive(game):
    m = game(GUARD)
    points = ["a", "b"]
    g = m.Guard("bob")
    g.brain = m.patrol(g, points)
    next(g.brain)
    assert g.brain.send("rest") == "resting"
    world = {"guard": g, "points": points}
    copy = roundtrip(world)
    copy["points"].append("z")                  # the loop runs over the saved list itself
    out = run(copy["guard"].brain, 4)
    assert out == ["b", "z", "a", "b"]
    assert copy["guard"].log.count("open") == 1
    assert copy["guard"].log.count(("close", None)) == 1


def test_close_after_a_load_runs_exit_once(game):
    m = game(GUARD)
    g = m.Guard("cy")
    g.brain = m.patrol(g, ["a"])
    next(g.brain)
    g.brain.send("rest")
    copy = roundtrip(g)
    copy.brain.close()
    copy.brain.close()
    assert copy.log[-1] == ("close", "GeneratorExit")
    assert copy.log.count("open") == 1 and len([e for e in copy.log if e[0] == "close"]) == 1


def test_unstarted_and_finished_coroutines(game):
    m = game(GUARD)
    g = m.Guard("di")
    fresh = m.patrol(g, ["a"])
    done = m.patrol(g, ["a"])
    run(done, 10)
    copy = roundtrip([fresh, done])
    assert copy[0].label == "<start>" and next(copy[0]) == "a"
    assert copy[1].label == "<done>"
    with pytest.raises(StopIteration):
        next(copy[1])


def test_the_same_graph_gives_the_same_bytes_and_names_are_stable(game):
    m = game(GUARD)
    g = m.Guard("ed")
    g.brain = m.patrol(g, ["a", "b"])
    run(g.brain, 3)
    data = autosave.dumps(g)
    assert autosave.dumps(g) == data
    assert b"iter@" in data and b"got = (yield p)@" in data   # labels and names, not indices


def test_a_label_still_there_after_an_edit_loads(game):
    m = game(GUARD)
    g = m.Guard("fa")
    g.brain = m.patrol(g, ["a", "b"])
    run(g.brain, 2)
    data = autosave.dumps(g)
    # patch: statements added elsewhere, a new yield in another branch
    patched = GUARD.replace('''    laps = 0''', '''    laps = 0
    guard.log.append("patched")''').replace('''        laps += 1''', '''        if laps > 5:
            yield "tired"
        laps += 1''')
    m2 = game(patched)
    copy = autosave.loads(data)
    assert type(copy.brain).__module__ == m2.__name__
    assert run(copy.brain, 2) == ["a", "b"]


def test_a_label_that_no_longer_exists_is_an_incompatible_save(game):
    m = game(GUARD)
    g = m.Guard("gi")
    g.brain = m.patrol(g, ["a"])
    run(g.brain, 1)
    data = autosave.dumps(g)
    game(GUARD.replace("got = yield p", "got = yield (p, 'changed')"))
    with pytest.raises(autosave.IncompatibleSaveError) as e:
        autosave.loads(data)
    assert "patrol" in str(e.value) and "got = (yield p)@" in str(e.value)


def test_a_local_the_resume_point_needs_must_be_in_the_save(game):
    m = game(GUARD)
    g = m.Guard("ha")
    g.brain = m.patrol(g, ["a"])
    run(g.brain, 1)
    with coroutines_as_records():
        data = autosave.dumps(g)
    types_, records, root, batches = msgpack.unpackb(unframe(data)[1], raw=False)
    rec = next(r for r in records if types_[r[0] if r[0] >= 0 else ~r[0]][0] == "autosave.coroutine")
    i = rec.index("laps")
    del rec[i:i + 2]
    forged = frame(msgpack.packb([types_, records, root, batches], use_bin_type=True))
    with pytest.raises(autosave.IncompatibleSaveError, match="needs the local 'laps'"):
        autosave.loads(forged)


def test_a_local_the_resume_point_needs_must_be_in_the_batch(game):
    """The same, for a coroutine of a batch (format 7): the name gone from its type
    entry, and its column with it."""
    m = game(GUARD)
    g = m.Guard("ha")
    g.brain = m.patrol(g, ["a"])
    run(g.brain, 1)
    types_, records, root, batches = msgpack.unpackb(unframe(autosave.dumps(g))[1],
                                                     raw=False)
    batch = next(b for b in batches if types_[b[0]][0] == "autosave.coroutine")
    names = types_[batch[0]][2]
    del batch[2 + 2 + names.index("laps")]
    names.remove("laps")
    forged = frame(msgpack.packb([types_, records, root, batches], use_bin_type=True))
    with pytest.raises(autosave.IncompatibleSaveError, match="needs the local 'laps'"):
        autosave.loads(forged)


def test_a_forged_function_name_is_refused(game):
    m = game(GUARD)
    g = m.patrol(m.Guard("io"), ["a"])
    next(g)
    data = autosave.dumps(g)
    name = f"{m.__name__}.patrol"
    assert msgpack.packb(name) in data
    for forged_name, error in [("os.system", autosave.UntrustedTypeError),
                               (f"{m.__name__}.Door", autosave.IncompatibleSaveError)]:
        forged = frame(bytes(unframe(data)[1]).replace(msgpack.packb(name), msgpack.packb(forged_name)))
        with pytest.raises(error):
            autosave.loads(forged)


def test_a_running_coroutine_cannot_be_saved(game):
    m = game('''
@autosave.coroutine
def saver(box):
    yield autosave.dumps(box)
''')
    box = []
    g = m.saver(box)
    box.append(g)
    with pytest.raises(autosave.SaveError, match="running"):
        next(g)


def test_exceptions_held_by_a_coroutine_are_saved(game):
    m = game('''
class Oops(Exception):
    pass

@autosave.coroutine
def handler(log):
    try:
        yield "start"
        raise Oops("first", 1)
    except Oops as e:
        e.add_note("noted")
        yield "handling"
        log.append(("still", e.args, e.__notes__))
        raise
''')
    log = []
    g = m.handler(log)
    next(g)
    assert next(g) == "handling"
    copy = roundtrip({"g": g, "log": log})
    with pytest.raises(m.Oops) as e:
        next(copy["g"])
    assert e.value.args == ("first", 1)
    assert copy["log"] == [("still", ("first", 1), ["noted"])]


def test_iterators_of_every_supported_kind_resume(game):
    m = game('''
@autosave.coroutine
def each(xs):
    for x in xs:
        yield x
''')
    d = {"a": 1, "b": 2, "c": 3}
    iterables = [[1, 2, 3], (1, 2, 3), range(5, 11, 2), "abc", b"ab", d, d.keys(), d.values(),
                 d.items(), reversed([1, 2, 3]), enumerate("xyz", 3), zip([1, 2], "ab"),
                 reversed(d), map(abs, [-1, -2, -3]), filter(None, [0, 1, 2, 0, 3])]
    for it in iterables:
        expected = list(it if not hasattr(it, "__next__") else [])
        g = m.each(it)
        first = next(g)
        copy = roundtrip(g)
        rest = list(copy)
        if expected:
            assert [first] + rest == expected, it
        else:
            assert rest, it


@pytest.mark.slow
def test_ten_thousand_suspended_coroutines(game):
    m = game(GUARD)
    guards = [m.Guard(f"g{i}") for i in range(10_000)]
    points = ["a", "b", "c"]
    for i, g in enumerate(guards):
        g.brain = m.patrol(g, points)
        run(g.brain, 1 + i % 3)
    copy = autosave.loads(autosave.dumps(guards))
    assert [next(g.brain) for g in copy[:6]] == [next(g.brain) for g in guards[:6]]
    assert copy[5].brain.gi_frame is not None
    shared = {id(g.brain._spec) for g in copy}
    assert len(shared) == 1


def test_plain_generators_are_still_refused():
    def plain():
        yield 1
    with pytest.raises(autosave.SaveError, match="plain generator"):
        autosave.dumps([plain()])
