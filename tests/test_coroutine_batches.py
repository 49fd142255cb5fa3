"""Coroutines and loop iterators written in batches (format 7; docs/format.md,
"Batches"): saves of format 6, which wrote them as records, still load and play on as
the state they were made from; a re-save writes format 7, the same bytes as a save of
that state; the tools that read records (``records_of``) see the same coroutines in
both; the C and the Python loops write and read the same bytes."""

from collections import Counter
from pathlib import Path

import pytest

import autosave
import coroutine_v6_game as game
from autosave.format.kernels import python_loops
from autosave.format.expand import records_of
from autosave.format.wire import VERSION, decode

V6 = Path(__file__).parent / "data" / "format6" / "coroutines.sav"


def trace(state, steps=10):
    """What each coroutine of state yields from here, and how it ends."""
    brains = [g.brain for g in state["guards"]] + [e for _, e in state["errands"]] + \
        state["counters"] + state["shared"][:1]
    out = []
    for brain in brains:
        seen = []
        for _ in range(steps):
            try:
                seen.append(repr(next(brain)))
            except StopIteration as e:
                seen.append(("return", e.value))
                break
        out.append(seen)
    out.append([(g.name, g.x, g.steps) for g in state["guards"]])
    out.append([door.log for door, _ in state["errands"]])
    return out


@pytest.mark.parametrize("loops", ["C", "Python"])
def test_a_format_6_save_loads_and_plays_on(loops):
    data = V6.read_bytes()
    assert data[4] == 6
    if loops == "Python":
        with python_loops():
            loaded = autosave.loads(data)
    else:
        loaded = autosave.loads(data)
    assert loaded["shared"][0] is loaded["shared"][1]
    assert {type(g.brain) for g in loaded["guards"]} == {type(game.patrol(None, []))}
    assert trace(loaded) == trace(game.state())


def test_a_format_6_save_re_saved_is_the_format_7_save_of_its_state():
    fresh = autosave.dumps(game.state())
    assert fresh[4] == VERSION == 8
    assert autosave.dumps(autosave.loads(V6.read_bytes())) == fresh
    with python_loops():
        assert autosave.dumps(game.state()) == fresh
        assert autosave.dumps(autosave.loads(fresh)) == fresh


def test_format_7_writes_no_coroutine_or_loop_iterator_record():
    types, records, _, _, _, batches = decode(autosave.dumps(game.state()))
    kinds = {"autosave.coroutine", "builtins.list_iterator", "builtins.range_iterator"}
    assert not [r for r in records if types[r[0]][0] in kinds]
    assert kinds <= {types[b[0]][0] for b in batches}


def coroutine_records(data):
    """(function name, label, names, inline values) of every coroutine record
    ``records_of`` gives: what the compat tools read."""
    types, records, _ = records_of(data)
    out = Counter()
    for i, rec in enumerate(records):
        if types[rec[0]][0] != "autosave.coroutine":
            continue
        function = records[rec[1][0] if rec[1][0] >= 0 else i + rec[1][0]][1]
        names = tuple(rec[3::2])
        inline = tuple(v for v in rec[4::2] if type(v) is not list)
        out[function, rec[2], names, inline] += 1
    return out


def test_the_record_tools_see_the_same_coroutines_in_both_formats():
    old = coroutine_records(V6.read_bytes())
    assert sum(old.values()) == 12 + 2 + 9 + 3        # patrols, chases, errands, counters
    assert coroutine_records(autosave.dumps(game.state())) == old


def test_compat_verify_and_diff_read_a_format_7_save(tmp_path):
    from autosave.compat.diff import diff
    a = autosave.dumps(game.state())
    state = game.state()
    next(state["guards"][0].brain)
    result = diff(a, autosave.dumps(state))
    assert any(c.path.endswith(".x") or "<label>" in c.path or c.kind == "value"
               for c in result.changes)
    assert not diff(a, autosave.dumps(game.state())).changes


LATE = '''
import autosave

class Guard:
    __slots__ = ("name", "brain")

    def __init__(self, name):
        self.name, self.brain = name, None

class Badge:
    """Rebuilt by its constructor from the guard it names: a record that waits for
    the batch objects (its arguments are read), so a frame holding one is filled after
    the batches, when the badge is built."""
    def __init__(self, guard):
        self.guard, self.seen = guard, guard.name

    def __reduce__(self):
        return Badge, (self.guard,)

autosave.reconstructor(Badge)

@autosave.coroutine
def wear(guard):
    badge = Badge(guard)
    while True:
        yield badge.seen
'''


@pytest.fixture(scope="module")
def late():
    import linecache
    import textwrap
    from modtools import fresh_name, load_module, unload
    name = fresh_name("cobatch")
    autosave.allow(name)
    source = textwrap.dedent(LATE)
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    yield load_module(name, source)
    unload(name)


@pytest.mark.parametrize("loops", ["C", "Python"])
def test_a_frame_whose_local_is_built_after_the_batches_is_filled_then(late, loops,
                                                                        monkeypatch):
    from autosave.coroutines.batches import CoroutineBatchPlan
    late_fills = []
    fill_row = CoroutineBatchPlan.fill_row
    monkeypatch.setattr(CoroutineBatchPlan, "fill_row",
                        lambda self, obj, row: (late_fills.append(obj),
                                                fill_row(self, obj, row)))
    guards = []
    for i in range(4):
        g = late.Guard(f"g{i}")
        g.brain = late.wear(g)
        next(g.brain)
        guards.append(g)
    data = autosave.dumps(guards)
    types, records, _, _, _, batches = decode(data)
    assert any(types[b[0]][0] == "autosave.coroutine" for b in batches)
    assert any(types[r[0]][0] == "autosave.reduce" for r in records)
    if loops == "Python":
        with python_loops():
            loaded = autosave.loads(data)
    else:
        loaded = autosave.loads(data)
    assert late_fills == [g.brain for g in loaded]      # each filled once its badge was
    assert [next(g.brain) for g in loaded] == ["g0", "g1", "g2", "g3"]
    assert all(type(g.brain).__name__ == "wear" for g in loaded)
    badges = [g.brain.__dict__[a] for g in loaded for a in g.brain.__dict__
              if type(g.brain.__dict__[a]).__name__ == "Badge"]
    assert [b.guard for b in badges] == loaded
    assert autosave.dumps(loaded) == data


@pytest.mark.parametrize("make", [lambda: [[1, 2], iter([1, 2])], lambda: [iter(range(3))]],
                         ids=["list iterator", "range iterator"])
def test_a_record_naming_an_iterator_batch_entry_is_refused(make):
    """A loop iterator batch's type entry is for batches only: a record naming it (a
    forged file) is refused, whichever step of the load reaches it first."""
    from autosave import FormatError
    from autosave.format.wire import encode
    types, records, root, _, closes, batches = decode(autosave.dumps(make()))
    assert not any(closes)
    t = next(b[0] for b in batches if types[b[0]][0].endswith("iterator"))
    records.insert(0, [t, 0, 1, 2])
    root = [root[0] + 1] if type(root) is list else root
    with pytest.raises(FormatError, match="type entry of a batch"):
        autosave.loads(encode(types, records, root, batches))
