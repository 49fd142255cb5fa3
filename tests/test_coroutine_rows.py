"""A column of suspended coroutines is read a resume point at a time
(``CoroutineAdapter.batch_rows``, what the save's walk calls): the same rows, names
tuples and errors as reading each frame on its own (``batch_row``), whatever mix of
functions, resume points, unbound locals and hidden locals the column holds, and the
same bytes from the C and the Python loops."""

import gc

from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.coroutines.adapter import COROUTINE
from autosave.format.kernels import python_loops
import coroutine_rows_game as GAME


MAKERS = [
    lambda k: GAME.walker([1, 2, 3][: 1 + k % 3]),
    lambda k: GAME.nested(1 + k % 2, ["p", "q"]),
    lambda k: GAME.outer(1 + k % 3),
    lambda k: GAME.own_iterator(1 + k % 4),
]
SENDS = [None, 0, "seen"]


def parked(which, steps, send):
    co = MAKERS[which](steps)
    try:
        next(co)
        for _ in range(steps):
            co.send(send)
    except StopIteration:
        pass
    return co


def outcome(read):
    try:
        return "rows", read()
    except autosave.SaveError as e:                  # compared: the same class and message
        return "error", type(e), str(e)


FRAMES = st.lists(st.tuples(st.integers(0, len(MAKERS) - 1), st.integers(0, 6),
                            st.sampled_from(SENDS)), min_size=1, max_size=24)


@settings(max_examples=150, deadline=None)
@given(FRAMES, st.data())
def test_a_column_reads_as_its_frames_one_by_one(specs, data):
    objs = [parked(*spec) for spec in specs]
    loops = [(o, a) for o in objs for a, v in vars(o).items()
             if a.startswith("h_") and type(v).__name__.endswith("iterator")]
    if loops and data.draw(st.booleans()):  # what a hostile frame holds: not an iterator
        obj, attr = data.draw(st.sampled_from(loops))
        vars(obj)[attr] = 42
    if len(objs) > 1:                       # the same frame twice in a column
        objs.append(objs[data.draw(st.integers(0, len(objs) - 1))])
    together = outcome(lambda: COROUTINE.batch_rows(objs))
    alone = outcome(lambda: list(map(COROUTINE.batch_row, objs)))
    assert together == alone
    if together[0] == "rows":               # the names tuples themselves: batches by id
        assert [names for names, _ in together[1]] == [names for names, _ in alone[1]]
        assert all(a is b for (a, _), (b, _) in zip(together[1], alone[1]))


@settings(max_examples=40, deadline=None)
@given(FRAMES)
def test_saves_of_generated_columns_agree_across_loops(specs):
    state = [parked(*spec) for spec in specs]
    data = autosave.dumps(state)
    with python_loops():
        assert autosave.dumps(state) == data
    assert autosave.dumps(autosave.loads(data)) == data


def garbage_after(operation):
    """How many objects the cyclic collector finds after ``operation`` alone."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        operation()
        return gc.collect()
    finally:
        if was_enabled:
            gc.enable()


def test_saves_and_loads_of_row_batches_leave_no_cycles():
    """Every kind of row batch (coroutines, list and range iterators, small numpy
    arrays where numpy is installed) is filed by a filer made for the save: none of
    them may outlive it in a cycle, on either side."""
    state = [parked(which, 3, None) for which in range(len(MAKERS))]
    state += [iter([1, 2, 3]), iter(range(5))]
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        state += [np.arange(3), np.float64(2.5)]
    data = autosave.dumps(state)
    assert garbage_after(lambda: autosave.dumps(state)) == 0
    assert garbage_after(lambda: autosave.loads(data)) == 0
    with python_loops():
        assert garbage_after(lambda: autosave.dumps(state)) == 0
