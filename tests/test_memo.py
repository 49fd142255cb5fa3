"""A save's memo (docs/speedups.md, "The memo"): in C a ``Memo`` keyed by address, which
must behave as the dict keyed by ``id()`` it replaces, to Python and to the loops.

Generated sequences of operations run on a Memo and on a dict side by side; the loops
that take a memo must give the same cells and the same missing objects with either;
what a value's ``__del__`` may do to the memo while it is freed runs in a subprocess.
"""

import gc
import os
import subprocess
import sys
import textwrap
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from autosave.format import kernels
from helpers import assert_leaves_nothing

try:
    from autosave._speedups import Memo
    from autosave import _speedups
except ImportError:                    # no C compiler where autosave was installed
    Memo = None

pytestmark = pytest.mark.skipif(Memo is None, reason="autosave._speedups not built")
FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Node:
    pass


POOL = [Node() for _ in range(40)] + [[1], [1], (2,), "s", 3.5]
IDS = [id(o) for o in POOL]

operations = st.lists(st.one_of(
    st.tuples(st.just("set"), st.integers(0, len(POOL) - 1), st.integers()),
    st.tuples(st.just("get"), st.integers(0, len(POOL) - 1), st.none()),
    st.tuples(st.just("item"), st.integers(0, len(POOL) - 1), st.none()),
    st.tuples(st.just("update"), st.lists(st.integers(0, len(POOL) - 1), max_size=8),
              st.integers()),
    st.tuples(st.just("len"), st.none(), st.none()),
    st.tuples(st.just("items"), st.none(), st.none()),
    st.tuples(st.just("clear"), st.none(), st.none()),
), max_size=60)


def apply(table, op, a, b):
    if op == "set":
        table[IDS[a]] = [b]
    elif op == "get":
        return table.get(IDS[a]), table.get(IDS[a], "default")
    elif op == "item":
        try:
            return table[IDS[a]]
        except KeyError as e:
            return "KeyError", e.args
    elif op == "update":
        table.update([(IDS[i], (b, i)) for i in a])
    elif op == "len":
        return len(table)
    elif op == "items":
        return sorted(table.items())
    else:
        table.clear()


@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(operations)
def test_a_memo_behaves_as_a_dict_keyed_by_id(ops):
    memo, model = Memo(), {}
    for op in ops:
        assert apply(memo, *op) == apply(model, *op)
    assert sorted(memo.items()) == sorted(model.items())


@pytest.mark.slow
def test_a_memo_holds_many_entries_through_its_growth():
    objs = [Node() for _ in range(200_000)]
    memo = Memo()
    for i, o in enumerate(objs):
        memo[id(o)] = (i,)
    assert len(memo) == len(objs)
    assert all(memo[id(o)] == (i,) for i, o in enumerate(objs))
    assert memo.get(id(Node)) is None
    memo.clear()
    assert len(memo) == 0 and memo.get(id(objs[0])) is None
    memo[id(objs[5])] = "again"                 # usable after a clear
    assert memo.items() == [(id(objs[5]), "again")]


@pytest.mark.parametrize("key", [0, -1, -2**63, 2**64, 2**64 + 5, 2**200])
def test_an_int_no_id_gives_finds_nothing_and_cannot_be_set(key):
    memo = Memo()
    memo[id(POOL[0])] = "x"
    assert memo.get(key) is None and memo.get(key, 7) == 7
    with pytest.raises(KeyError):
        memo[key]
    with pytest.raises(ValueError):
        memo[key] = "y"
    assert len(memo) == 1


@pytest.mark.parametrize("key", ["1", 1.0, True, None, POOL[0]])
def test_a_key_that_is_not_an_int_is_a_type_error(key):
    memo = Memo()
    for attempt in (lambda: memo.get(key), lambda: memo[key],
                    lambda: memo.__setitem__(key, 1), lambda: memo.update([(key, 1)])):
        with pytest.raises(TypeError):
            attempt()


def test_entries_are_not_removed_one_by_one():
    memo = Memo()
    memo[id(POOL[0])] = "x"
    with pytest.raises(TypeError):
        del memo[id(POOL[0])]
    with pytest.raises(TypeError):
        Memo({})
    with pytest.raises(TypeError):
        memo.update([(id(POOL[0]),)])
    assert memo[id(POOL[0])] == "x"


def test_a_memo_in_a_cycle_is_collected():
    class Cell(list):
        pass

    memo = Memo()
    cell = Cell([memo])                  # the memo holds the cell, the cell the memo
    memo[id(cell)] = cell
    gone = weakref.ref(cell)
    del memo, cell
    gc.collect()
    assert gone() is None


# -- the loops, on a Memo and on a dict ---------------------------------------------------

column = st.lists(st.sampled_from(POOL[:40] + POOL[40:43]), max_size=50)


@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(column, st.sets(st.integers(0, 42)), st.integers(0, 1000))
def test_the_loops_give_the_same_with_a_memo_and_a_dict(objs, known, serial):
    model = {IDS[i]: [i] for i in known}
    memo = Memo()
    memo.update(model.items())
    keys_py, cells_py, missing_py = kernels.PURE["look_up_ids"](model, objs)
    keys_c, cells_c, missing_c = _speedups.look_up_ids(memo, objs)
    assert cells_c == cells_py
    assert list(map(id, missing_c)) == list(map(id, missing_py))
    assert list(map(id, keys_c)) == list(map(id, objs))     # a Memo's keys: the objects
    if missing_py:                      # what meeting them does: each filed once
        assert kernels.PURE["file_all"](model, list(map(id, missing_py)), missing_py, serial) \
            == _speedups.file_all(memo, missing_c, missing_c, serial)
    assert sorted(memo.items()) == sorted(model.items())
    assert _speedups.fill_missing(memo, keys_c, cells_c) == \
        kernels.PURE["fill_missing"](model, keys_py, cells_py)
    # the Python loops take a Memo too: it is keyed by id() to them
    assert kernels.PURE["look_up_ids"](memo, objs)[1:] == (
        _speedups.look_up_ids(memo, objs)[1], _speedups.look_up_ids(memo, objs)[2])


def test_fill_missing_on_a_memo_names_the_object_it_lacks():
    memo, a, b = Memo(), Node(), Node()
    memo[id(a)] = [1]
    with pytest.raises(KeyError) as e:
        _speedups.fill_missing(memo, [a, b], [None, None])
    assert e.value.args[0] is b
    with pytest.raises(ValueError):
        _speedups.file_all(memo, [a], [a, b], 0)     # a key per object


def test_the_memo_loops_leave_nothing_behind():
    objs = [Node() for _ in range(60)]

    def once():
        memo = Memo()
        _speedups.file_all(memo, objs[:30], objs[:30], 0)
        keys, cells, missing = _speedups.look_up_ids(memo, objs)
        _speedups.file_all(memo, missing, missing, 30)
        _speedups.file_all(Memo(), objs + objs, objs + objs, 0)     # repeats
        _speedups.fill_missing(memo, keys, cells)
        memo[id(objs[0])] = [0]
        memo.items()
        try:
            _speedups.fill_missing(Memo(), keys, cells)
        except KeyError:
            pass
        memo.clear()

    assert_leaves_nothing(once)


def test_a_save_uses_the_memo_of_the_chosen_loops():
    walker = autosave.saving.walk.Walker()
    assert type(walker.memo) is (Memo if kernels.IMPLEMENTATION == "C" else dict)
    with kernels.python_loops():
        assert type(autosave.saving.walk.Walker().memo) is dict


def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_a_del_run_while_the_memo_frees_a_value_may_use_the_memo():
    """Replacing a value or clearing the memo frees values, whose __del__ may set,
    read and clear the same memo: it finds it consistent, never half-changed."""
    code = """
        from autosave._speedups import Memo
        memo = Memo()
        keep = [object() for _ in range(2000)]

        class Meddler:
            def __del__(self):
                for o in keep[1000:]:
                    memo[id(o)] = [1]
                assert memo.get(id(keep[1500])) == [1]
                memo.clear()
                memo[id(keep[0])] = ["after"]

        memo[id(keep[1])] = Meddler()
        memo[id(keep[1])] = "replaced"        # frees the Meddler
        print(len(memo), memo.get(id(keep[0])))
        memo[id(keep[2])] = Meddler()
        for o in keep[3:900]:
            memo[id(o)] = [2]
        memo.clear()                           # frees it again, mid-clear
        print(len(memo), memo.get(id(keep[0])), memo.get(id(keep[5])))
        """
    done = run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["1 ['after']", "1 ['after'] None"]
