"""Loading suspended coroutines in their turn (docs/format.md, "Reading"): a loop's list
iterator is made over its list at once and positioned once the list is filled, and a
coroutine's frame is filled as its record is read, never held back until the batch
objects are filled.

Differential: autosave coroutines against native generators played from the same
start, loaded with the C and the Python loops (same bytes, same play-through).
Adversarial: forged list iterators and coroutine records are refused with FormatError
and run nothing; code the game runs while a load is under way (a ``__setstate__``)
never sees an iterator before its position is set."""

import linecache
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import autosave
from autosave.errors import FormatError
from autosave.format.kernels import python_loops
from autosave.format.wire import decode, encode
from forge import Forge, coroutines_as_records
from modtools import fresh_name, load_module, unload

SCRIPT = '''
import autosave

CALLS = []

class Npc:
    __slots__ = ("name", "items", "extra", "brain")

    def __init__(self, name, items, extra):
        self.name, self.items, self.extra, self.brain = name, items, extra, None

def walk_native(items, extra):
    total = 0
    for i, x in enumerate(items):
        for y in reversed(extra):
            total += x * y
            yield (i, x, y, total)
        for k in range(2):
            yield ("look", k)
        for z in extra:
            yield ("z", z)
    return total

@autosave.coroutine
def walk(items, extra):
    total = 0
    for i, x in enumerate(items):
        for y in reversed(extra):
            total += x * y
            yield (i, x, y, total)
        for k in range(2):
            yield ("look", k)
        for z in extra:
            yield ("z", z)
    return total

class Probe:
    """Reads what it is given in __setstate__, as game code may while a load runs."""
    def __getstate__(self):
        return {"it": self.it, "seq": self.seq}

    def __setstate__(self, state):
        self.it, self.seq = state["it"], state["seq"]
        self.seen = (self.it.__reduce__(), list(self.seq))

@autosave.coroutine
def guarded():
    try:
        yield "body"
    finally:
        yield "cleanup"

class Eq:
    """Compares equal to nothing, and records that its __eq__ ran."""
    def __eq__(self, other):
        CALLS.append("eq")
        return False

    __hash__ = object.__hash__

class Sneaky(list):
    """A list whose own methods record that they ran."""
    def __iter__(self):
        CALLS.append("iter")
        return list.__iter__(self)

    def __reversed__(self):
        CALLS.append("reversed")
        return list.__reversed__(self)

    def extend(self, items):
        CALLS.append("extend")
        list.extend(self, items)

    def __len__(self):
        CALLS.append("len")
        return list.__len__(self)
'''


@pytest.fixture(scope="module")
def game():
    name = fresh_name("coroload")
    autosave.allow(name)
    source = textwrap.dedent(SCRIPT)
    linecache.cache[f"<{name}>"] = (len(source), None, source.splitlines(keepends=True),
                                    f"<{name}>")
    module = load_module(name, source)
    yield module
    unload(name)


def play(gen, limit=200):
    """What a generator yields until it returns (and its return value), at most
    ``limit`` steps."""
    out = []
    for _ in range(limit):
        try:
            out.append(next(gen))
        except StopIteration as e:
            out.append(("return", e.value))
            break
    return out


def npcs(game, spec):
    """Npcs with an autosave coroutine each, and native generators in lockstep over
    copies of their lists. ``spec``: (items, extra, shared, steps, grow) per npc."""
    shared_items, shared_extra = [1, 2, 3], [5, 7]
    state, natives = [], []
    for n, (items, extra, shared, steps, grow) in enumerate(spec):
        if shared:
            items, extra = shared_items, shared_extra
        npc = game.Npc(f"n{n}", items, extra)
        native_items, native_extra = list(items), list(extra)
        npc.brain = game.walk(items, extra)
        native = game.walk_native(native_items, native_extra)
        for _ in range(steps):
            a, b = next(npc.brain, None), next(native, None)
            assert a == b
        if grow and not shared:
            # a loop's position may lie past its list's end for a while
            del items[len(items) // 2:]
            del native_items[len(native_items) // 2:]
            extra.extend(grow)
            native_extra.extend(grow)
        state.append(npc)
        natives.append(native)
    return state, natives


NPC = st.tuples(st.lists(st.integers(-5, 5), max_size=4), st.lists(st.integers(-5, 5), max_size=3),
                st.booleans(), st.integers(0, 12), st.lists(st.integers(0, 3), max_size=2))


@given(spec=st.lists(NPC, min_size=1, max_size=6))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
def test_loaded_coroutines_play_on_as_native_generators(game, spec):
    state, natives = npcs(game, spec)
    data = autosave.dumps(state)
    with python_loops():
        assert autosave.dumps(state) == data       # the Python loops write the same bytes
        by_python = autosave.loads(data)
    by_c = autosave.loads(data)
    expected = [play(g) for g in natives]
    assert [play(n.brain) for n in by_c] == expected
    assert [play(n.brain) for n in by_python] == expected
    assert [play(n.brain) for n in state] == expected     # the saved ones, unchanged


def list_batch(data):
    """Whether the save writes lists in a batch."""
    types, _, _, _, _, batches = decode(data)
    return any(types[b[0]][0] == "builtins.list" for b in batches)


def test_the_loops_lists_are_batch_objects(game):
    """The case this file is about: the lists the loops iterate are written in a batch
    (filled after every record), and the coroutines still load in their turn."""
    state, natives = npcs(game, [([1, 2], [3], False, 2, [])] * 3)
    data = autosave.dumps(state)
    assert list_batch(data)
    loaded = autosave.loads(data)
    assert [play(n.brain) for n in loaded] == [play(g) for g in natives]


def test_a_setstate_never_sees_an_iterator_before_its_position(game):
    """A __setstate__ reaching a list iterator over a batch list runs once the list is
    filled and the iterator positioned (it counts as not finished until then)."""
    items = [10, 20, 30, 40]
    it = iter(items)
    next(it), next(it)
    probe = game.Probe()
    probe.it, probe.seq = it, items
    npc = game.Npc("a", items, [1], )
    npc.brain = game.walk(items, [1])
    next(npc.brain)
    data = autosave.dumps([npc, probe])
    assert list_batch(data)
    loaded = autosave.loads(data)
    seen_it, seen_seq = loaded[1].seen
    assert seen_seq == [10, 20, 30, 40]
    assert seen_it[2] == 2
    assert next(loaded[1].it) == 30


# -- forged list iterators ---------------------------------------------------------------

@pytest.mark.parametrize("kind", ["builtins.list_iterator", "builtins.list_reverseiterator"])
@pytest.mark.parametrize("seq", ["tuple", "dict", "str", "bytes", "set", "int", "iterator"])
def test_a_list_iterator_over_anything_but_a_list_is_refused(kind, seq):
    f = Forge()
    target = {"tuple": lambda: f.rec("builtins.tuple", 1, 2),
              "dict": lambda: f.rec("builtins.dict", "a", 1),
              "str": lambda: "abc",
              "bytes": lambda: b"abc",
              "set": lambda: f.rec("builtins.set", 1, 2),
              "int": lambda: 5,
              "iterator": lambda: f.rec("builtins.list_iterator",
                                        f.rec("builtins.list", 1), 0)}[seq]()
    f.rec(kind, target, 0)
    with pytest.raises(FormatError, match="as its sequence"):
        autosave.loads(f.bytes())


@pytest.mark.parametrize("kind", ["builtins.list_iterator", "builtins.list_reverseiterator",
                                  "builtins.tuple_iterator", "builtins.bytearray_iterator"])
@pytest.mark.parametrize("position", [-1, -2, -(2 ** 40), 1.0, "0", None])
def test_a_forged_position_is_refused(kind, position):
    f = Forge()
    seq = {"builtins.tuple_iterator": lambda: f.rec("builtins.tuple", 1, 2),
           "builtins.bytearray_iterator": lambda: f.rec("builtins.bytearray", b"ab")}.get(
        kind, lambda: f.rec("builtins.list", 1, 2))()
    f.rec(kind, seq, position)
    if position == -1 and kind == "builtins.list_reverseiterator":
        assert list(autosave.loads(f.bytes())) == []   # reversed([]) is saved so
        return
    with pytest.raises(FormatError):
        autosave.loads(f.bytes())


@pytest.mark.parametrize("seq, steps", [((), 0), ([], 0), ([1], 1)])
def test_reverse_iterators_saved_at_minus_one_load(seq, steps):
    """A reverse iterator over an empty sequence, or a list's that gave its last item,
    may be saved at position -1: the one negative position a save holds."""
    r = reversed(seq)
    for _ in range(steps):
        next(r)
    reduced = r.__reduce__()
    # until 3.13 a list's reverse iterator kept its list at -1; 3.13 releases it
    assert reduced[2] == -1 if len(reduced) > 2 else reduced[1] in (((),), ([],))
    assert list(autosave.loads(autosave.dumps(r))) == []


@pytest.mark.parametrize("position", [0, 2, 5, 9])
@pytest.mark.parametrize("kind", ["builtins.list_iterator", "builtins.list_reverseiterator"])
def test_a_list_subclass_is_iterated_without_its_own_methods(game, kind, position):
    """Made by list.__iter__ / list.__reversed__, positioned (past the end too) by
    list's own extend: nothing of the subclass runs."""
    f = Forge()
    seq = f.rec(f"{game.__name__}.Sneaky", 1, 2, 3, fields=())
    f.rec(kind, seq, position)
    game.CALLS.clear()
    it = autosave.loads(f.bytes())
    assert game.CALLS == []
    rest = list(it)
    reverse = kind.endswith("reverseiterator")
    # natively, a reverse iterator whose position lies past its list's end gives nothing
    expected = ([3, 2, 1][2 - position:] if position < 3 else []) if reverse else \
        [1, 2, 3][position:]
    assert rest == expected


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("position", [10 ** 9, -1, -5])
def test_a_list_iterator_over_a_batch_list_far_past_its_end_is_refused(game, batched,
                                                                        position):
    """The position is checked when it is set, once the list is filled: in a record,
    and in a batch of list iterators (format 7)."""
    items = [1, 2, 3]
    npc = game.Npc("a", items, [1])
    npc.brain = game.walk(items, [1])
    next(npc.brain)
    if batched:
        data = autosave.dumps([npc])
    else:
        with coroutines_as_records():
            data = autosave.dumps([npc])
    types, records, root, unset, closes, batches = decode(data)
    iterator = types.index(["builtins.list_iterator", 1, []])
    if batched:
        batch = next(b for b in batches if b[0] == iterator)
        batch[3] = [0, [position]]
    else:
        rec = next(r for r in records if r[0] == iterator)
        rec[2] = position
    for i, c in enumerate(closes):
        if c:
            records[i][0] = ~records[i][0]
    with pytest.raises(FormatError, match="past the end" if position > 0 else "negative"):
        autosave.loads(encode(types, records, root, batches))


@pytest.mark.parametrize("column, value", [(2, 5), (2, None), (2, "abc"), (2, [0]),
                                           (3, 1.0), (3, "0"), (3, None), (3, True)])
def test_a_forged_list_iterator_batch_is_refused(game, column, value):
    """A batch of list iterators whose sequence is not a list of the save's batches,
    or whose position is not an int."""
    items = [1, 2, 3]
    npc = game.Npc("a", items, [1])
    npc.brain = game.walk(items, [1])
    next(npc.brain)
    types, records, root, unset, closes, batches = decode(autosave.dumps([npc]))
    batch = next(b for b in batches if types[b[0]][0] == "builtins.list_iterator")
    if type(value) is list:                        # the npc: a batch object, not a list
        value = [sum(b[1] for b in batches[:next(
            k for k, b in enumerate(batches) if types[b[0]][0].endswith(".Npc"))])]
    batch[column] = as_column([value])
    for i, c in enumerate(closes):
        if c:
            records[i][0] = ~records[i][0]
    with pytest.raises(FormatError, match="list_iterator"):
        autosave.loads(encode(types, records, root, batches))


@pytest.mark.parametrize("bounds", [(0, 5, 0), (0, 5.0, 1), ("0", 5, 1), (None, 1, 1),
                                    (0, [0], 1)])
def test_a_forged_range_iterator_batch_is_refused(bounds):
    it = iter(range(3))
    data = autosave.dumps([it])
    types, records, root, unset, closes, batches = decode(data)
    batch = next(b for b in batches if types[b[0]][0] == "builtins.range_iterator")
    batch[2:] = [as_column([v]) for v in bounds]
    with pytest.raises(FormatError, match="range_iterator"):
        autosave.loads(encode(types, records, root, batches))


# -- forged coroutine records ------------------------------------------------------------

def coroutine_record(game, **change):
    """A real save of a parked coroutine, its record changed: (types, records, root,
    batches, the record)."""
    items = [1, 2, 3]
    npc = game.Npc("a", items, [4])
    npc.brain = game.walk(items, [4])
    next(npc.brain)
    with coroutines_as_records():
        data = autosave.dumps([npc])
    types, records, root, unset, closes, batches = decode(data)
    t = types.index(["autosave.coroutine", 1, []])
    rec = next(r for r in records if r[0] == t)
    for i, c in enumerate(closes):
        if c:
            records[i][0] = ~records[i][0]
    return types, records, root, batches, rec


class Hashed:
    pass


@pytest.mark.parametrize("where", ["name", "label"])
@pytest.mark.parametrize("value", [5, None, b"items", 2.5, True])
def test_a_coroutine_record_with_names_not_str_is_refused(game, where, value):
    types, records, root, batches, rec = coroutine_record(game)
    if where == "name":
        rec[3] = value
    else:
        rec[2] = value
    with pytest.raises(FormatError, match="string"):
        autosave.loads(encode(types, records, root, batches))


def test_a_coroutine_record_naming_an_object_as_a_local_runs_no_hash(game):
    """The names are checked to be str before they are looked up (hashed)."""
    types, records, root, batches, rec = coroutine_record(game)
    types.append([f"{game.__name__}.Npc", 1, ["name", "items", "extra", "brain"]])
    records.append([len(types) - 1, "x", None, None, None])
    rec[3] = [len(records) - 1]
    with pytest.raises(FormatError, match="string"):
        autosave.loads(encode(types, records, root, batches))


@pytest.mark.parametrize("late", [False, "marked", "unmarked"])
def test_a_local_saved_as_a_cell_gets_the_cells_contents(game, late):
    """A save may hold a cell where a plain local is now (the local was captured by a
    closure when it was saved): the local gets its contents once the load completes,
    also when the cell is filled after the coroutine's record (a cycle)."""
    f = Forge()
    fn = f.glob(f"{game.__name__}.walk")
    items = f.rec("builtins.list", 2, 3)
    if late:
        cell = f.placeholder()
        # a reference ahead, marked as the writer marks it or not (a reader resolves
        # both)
        coro = f.rec("autosave.coroutine", fn, "<start>", "extra", cell, "items", items,
                     cycle=late == "marked")
        extra = f.rec("builtins.list", 10, coro)
        f.set(cell, "autosave.cell", extra)
        f.rec("builtins.list", coro, cell)
    else:
        extra = f.rec("builtins.list", 10)
        cell = f.rec("autosave.cell", extra)
        f.rec("builtins.list", f.rec("autosave.coroutine", fn, "<start>", "extra", cell,
                                     "items", items))
    loaded = autosave.loads(f.bytes())
    coro = loaded[0]
    extra = coro.__dict__["v_extra"]
    assert type(extra) is list
    if late:
        assert extra[0] == 10 and extra[1] is coro and loaded[1].cell_contents is extra
    else:
        assert extra == [10]
        assert play(coro) == play(game.walk_native([2, 3], [10]))


def test_loading_many_coroutines_defers_none_of_them(game, monkeypatch):
    """The load's waiting machinery is not entered for coroutines over batch lists."""
    from autosave.loading import rebuild
    state, natives = npcs(game, [([1, 2, 3], [4, 5], True, k, []) for k in range(8)])
    entered = []
    monkeypatch.setattr(rebuild.Loader, "finish_deferred",
                        lambda self, deferred, hooks: entered.append(list(deferred)))
    loaded = autosave.loads(autosave.dumps(state))
    assert entered == []
    assert [play(n.brain) for n in loaded] == [play(g) for g in natives]


# -- forged mutations of a real save -----------------------------------------------------

JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 2 ** 40), st.floats(allow_nan=False),
                 st.text(max_size=12), st.binary(max_size=4),
                 st.sampled_from(["<start>", "<done>", "iter@", "with@1", "v_total", "total"]),
                 st.integers(-40, 40).map(lambda i: [i]))      # a reference, maybe bad


def outcome(data, calls):
    """What loading ``data`` gives: ('ok', what the loaded coroutines play) or
    ('refused', the error's class); any other exception escapes (a defect). ``calls``
    must stay empty while the load runs: no method of the game's runs."""
    from autosave.errors import LoadError
    calls.clear()
    try:
        loaded = autosave.loads(data)
    except LoadError as e:
        assert calls == []
        return ("refused", type(e).__name__)
    assert calls == []
    plays = []
    for npc in loaded if type(loaded) is list else ():
        brain = getattr(npc, "brain", None)
        if type(brain).__name__ == "walk":
            try:
                plays.append(play(brain, 30))
            except Exception as e:         # the game's own code on what the file holds
                plays.append(type(e).__name__)
    return ("ok", repr(plays))


@given(edits=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 30), JUNK),
                      min_size=1, max_size=4))
@settings(max_examples=120, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_forged_coroutine_and_iterator_records_are_refused_or_load_alike(game, edits):
    """Random values planted in the coroutine and iterator records of a real save: the
    load refuses them with a LoadError or loads, the same way with the C and the Python
    loops, and no method of the game's list subclass (or any code) runs meanwhile."""
    items = game.Sneaky([1, 2, 3])
    npc = game.Npc("a", items, [4, 5])
    npc.brain = game.walk(items, [4, 5])
    for _ in range(3):
        next(npc.brain)
    with coroutines_as_records():
        data = autosave.dumps([npc])
    types, records, root, unset, closes, batches = decode(data)
    kinds = {i for i, t in enumerate(types) if t[0] in (
        "autosave.coroutine", "builtins.list_iterator", "builtins.list_reverseiterator",
        "builtins.enumerate", "builtins.range_iterator")}
    targets = [r for r in records if r[0] in kinds]
    for i, c in enumerate(closes):
        if c:
            records[i][0] = ~records[i][0]
    for which, pos, junk in edits:
        rec = targets[which % len(targets)]
        rec[1 + pos % (len(rec) - 1)] = junk
    data = encode(types, records, root, batches)
    by_c = outcome(data, game.CALLS)
    with python_loops():
        assert outcome(data, game.CALLS) == by_c


def played(npc, limit=8):
    """What npc's coroutine yields from here (npc itself shown as "npc"), and how it
    ends: its return, or the type of the exception it raises."""
    out = []
    for _ in range(limit):
        try:
            value = next(npc.brain)
        except StopIteration as e:
            out.append(("return", e.value))
            break
        except Exception as e:
            out.append(type(e).__name__)
            break
        out.append(repr(value).replace(repr(npc), "npc"))
    return out


@pytest.mark.parametrize("steps", [0, 1, 2, 3])
def test_a_loop_over_a_list_holding_its_own_coroutine(game, steps):
    """The list a loop iterates holds the coroutine's owner (a cycle through the
    iterator): it loads, and plays on as the saved one does."""
    items = []
    npc = game.Npc("a", items, [2])
    npc.brain = game.walk(items, [2])
    items.extend([1, 3, npc])
    for _ in range(steps):
        next(npc.brain)
    loaded = autosave.loads(autosave.dumps([npc, items]))
    assert loaded[0].items is loaded[1] and loaded[1][2] is loaded[0]
    assert played(loaded[0], 12) == played(npc, 12)


def test_a_forged_pending_jump_is_refused_without_comparing_it(game, monkeypatch):
    """A pending finally outcome whose jump kind is an object of the game's: refused
    before it is compared with the kinds (its class's __eq__ never runs)."""
    import autosave.coroutines.adapter as adapter
    c = game.guarded()
    next(c)
    assert c.throw(ValueError("v")) == "cleanup"
    attr = next(a for saved, a in c._spec.saved[c._state] if saved.startswith("pending"))
    c.__dict__[attr] = (game.Eq(),)
    monkeypatch.setattr(adapter, "_check_saved_hidden", lambda *a: None)   # a hostile writer
    data = autosave.dumps([c])
    game.CALLS.clear()
    with pytest.raises(FormatError, match="pending"):
        autosave.loads(data)
    assert game.CALLS == []


# -- forged coroutine batches (format 7) ---------------------------------------------------

def column_values(column):
    """A decoded column's values, references as absolute ``[index]`` arrays."""
    from autosave.format.expand import _column_values
    return _column_values(0, column)


def as_column(values):
    """The column a writer would give for values (references as ``[index]``), its mask
    a byte per value as ``decode`` hands it on (``encode`` packs it)."""
    refs = [v[0] for v in values if type(v) is list]
    if not refs:
        return [0, values]
    return [2, bytes(type(v) is list for v in values), [v for v in values if type(v) is not list],
            [b - a for a, b in zip([0, *refs], refs)]]


def coroutine_batch(game, steps=1):
    """A real save of parked coroutines in a batch: (types, records, root, batches, the
    batch, its names), the records' cycle marks kept."""
    npcs = []
    for k in range(3):
        items = [1, 2, 3]
        npc = game.Npc("a", items, [4])
        npc.brain = game.walk(items, [4])
        for _ in range(steps):
            next(npc.brain)
        npcs.append(npc)
    types, records, root, unset, closes, batches = decode(autosave.dumps(npcs))
    for i, c in enumerate(closes):
        if c:
            records[i][0] = ~records[i][0]
    batch = next(b for b in batches if types[b[0]][0] == "autosave.coroutine")
    return types, records, root, batches, batch, types[batch[0]][2]


@pytest.mark.parametrize("value", [5, None, b"label", 2.5, True, "no such label"])
def test_a_forged_label_in_a_batch_is_refused(game, value):
    types, records, root, batches, batch, names = coroutine_batch(game)
    labels = column_values(batch[3])
    labels[1] = value
    batch[3] = as_column(labels)
    error = autosave.IncompatibleSaveError if type(value) is str else FormatError
    with pytest.raises(error, match="label"):
        autosave.loads(encode(types, records, root, batches))


def test_a_label_that_is_an_object_runs_no_hash(game):
    """A label column referring to an object of the game's: refused as not a str,
    before anything is hashed (the class's __hash__ would record a call)."""
    types, records, root, batches, batch, names = coroutine_batch(game)
    labels = column_values(batch[3])
    labels[0] = [0]                   # the first batch object: an Npc or a list
    batch[3] = as_column(labels)
    game.CALLS.clear()
    with pytest.raises(FormatError, match="string"):
        autosave.loads(encode(types, records, root, batches))
    assert game.CALLS == []


@pytest.mark.parametrize("value", [5, None, "game.walk", [0]])
def test_a_forged_function_in_a_batch_is_refused(game, value):
    """The function column holding anything but a coroutine function: refused (a
    reference resolves only to objects of the save, each checked)."""
    types, records, root, batches, batch, names = coroutine_batch(game)
    functions = column_values(batch[2])
    functions[2] = value
    batch[2] = as_column(functions)
    with pytest.raises(autosave.errors.LoadError):
        autosave.loads(encode(types, records, root, batches))


@pytest.mark.parametrize("value", [5, "x", [0]])
def test_a_forged_loop_iterator_in_a_batch_is_refused(game, value):
    types, records, root, batches, batch, names = coroutine_batch(game)
    pos = next(i for i, name in enumerate(names) if name.startswith("iter@"))
    values = column_values(batch[4 + pos])
    values[1] = value
    batch[4 + pos] = as_column(values)
    with pytest.raises(FormatError, match="loop iterator"):
        autosave.loads(encode(types, records, root, batches))


def test_forged_batch_shapes_are_refused(game):
    types, records, root, batches, batch, names = coroutine_batch(game)
    for forged in ([*batch, [0, [1, 2, 3]]], batch[:-1]):         # a column more, less
        batches[batches.index(batch)] = forged
        with pytest.raises(FormatError, match="columns"):
            autosave.loads(encode(types, records, root, batches))
        batches[batches.index(forged)] = batch
    names.append(7)                                                # a name not a str
    with pytest.raises(FormatError, match="type entry"):
        autosave.loads(encode(types, records, root, batches))
    names.pop()
    from autosave.format.wire import ABSENT
    values = column_values(batch[4])
    values[0] = ABSENT                                             # an unset slot
    batch[4] = as_column(values)
    with pytest.raises(FormatError, match="unset"):
        autosave.loads(encode(types, records, root, batches))


def test_a_record_under_a_batch_s_type_entry_is_refused(game):
    types, records, root, batches, batch, names = coroutine_batch(game)
    records.append([batch[0], [-1], "<start>", *names])
    with pytest.raises(FormatError, match="batches only"):
        autosave.loads(encode(types, records, root, batches))


def test_a_version_6_file_holding_a_coroutine_batch_is_refused(game):
    from autosave.format.wire import frame, unframe
    types, records, root, batches, batch, names = coroutine_batch(game)
    data = bytearray(encode(types, records, root, batches))
    _, body = unframe(bytes(data))
    import autosave.format.wire as wire
    head = wire.HEAD.pack(wire.MAGIC, 6, len(body))
    old = head + wire.CHECKSUM.pack(wire.checksum(head, body)) + bytes(body)
    assert autosave.loads(frame(bytes(body))) is not None
    with pytest.raises(FormatError, match="version 6"):
        autosave.loads(old)


@given(edits=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 6), JUNK),
                      min_size=1, max_size=4), steps=st.integers(0, 6))
@settings(max_examples=120, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_forged_coroutine_batches_are_refused_or_load_alike(game, edits, steps):
    """Random values planted in the columns of a real save's coroutine batches (the
    function, the label, any local): the load refuses them with a LoadError or loads,
    the same way with the C and the Python loops, and no code of the game's runs."""
    types, records, root, batches, batch, names = coroutine_batch(game, steps)
    mine = [b for b in batches if types[b[0]][0] == "autosave.coroutine"]
    for which, at, junk in edits:
        b = mine[which % len(mine)]
        c = 2 + which // len(mine) % (len(b) - 2)
        values = column_values(b[c])
        values[at % len(values)] = junk
        b[c] = as_column(values)
    data = encode(types, records, root, batches)
    by_c = outcome(data, game.CALLS)
    with python_loops():
        assert outcome(data, game.CALLS) == by_c
