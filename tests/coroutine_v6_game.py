"""Coroutines saved by format version 6 (one record each) in tests/data/format6/: the
game those files name, and the state they hold (``state()``), built the same way by
every process. tests/test_coroutine_batches.py loads the files, plays them against a
fresh ``state()`` and checks that a re-save gives the bytes of the fresh state's save.

Do not edit the coroutines: their labels and locals are what the files hold. To make
the files again (with an autosave writing version 6), from tests/:
``python -c "import coroutine_v6_game as m; m.write()"``.
"""

import autosave

autosave.allow(__name__)


class Guard:
    __slots__ = ("name", "x", "steps", "brain")

    def __init__(self, name, x=0):
        self.name, self.x, self.steps, self.brain = name, x, 0, None

    def step_toward(self, target):
        self.steps += 1
        self.x += (target > self.x) - (target < self.x)
        return self.x == target


class Door:
    """A with-statement manager of the game's own."""

    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("open")
        return self

    def __exit__(self, *exc):
        self.log.append("shut")
        return False


@autosave.coroutine
def patrol(guard, waypoints):
    laps = 0
    while True:
        for w in waypoints:
            while not guard.step_toward(w):
                seen = yield guard.steps
                if seen is not None:
                    yield from chase(guard, seen)
            for _ in range(2):
                yield "look"
        laps += 1


@autosave.coroutine
def chase(guard, target):
    while not guard.step_toward(target):
        yield "chase"
    return target


@autosave.coroutine
def errands(door, table, names):
    done = []
    with door:
        for key, value in table.items():
            yield (key, value)
            done.append(key)
    try:
        for i, name in enumerate(names):
            yield (i, name)
            if i == 1:
                raise KeyError(name)
    except KeyError as e:
        yield ("caught", e.args[0])
    finally:
        done.append("finally")
    bump = lambda: len(done) + len(names)     # noqa: E731 - a closure over two locals
    total = bump() + ((yield "total") or 0)
    return total


@autosave.coroutine
def counter(n, step=1):
    while True:
        n += step
        yield n


def state():
    """The graph the files hold: guards with patrols parked at different points (one
    inside a chase), errands parked all along, counters at <start> and <done>."""
    waypoints = [3, -2, 4]
    guards = []
    for i in range(12):
        g = Guard(f"g{i}", i % 3)
        g.brain = patrol(g, waypoints)
        for k in range(1 + i % 7):
            value = next(g.brain)
        if i in (5, 6):
            g.brain.send(40)              # into chase: a yield-from delegate
        guards.append(g)
    errands_ = []
    for steps in range(9):
        door = Door()
        e = errands(door, {"a": 1, "b": 2}, ["x", "y", "z"])
        try:
            for _ in range(steps):
                next(e)
        except StopIteration:
            pass
        errands_.append((door, e))
    fresh, finished = counter(5), counter(1)
    next(finished)
    finished.close()
    shared = counter(10, 2)
    next(shared)
    return {"guards": guards, "errands": errands_, "counters": [fresh, finished],
            "shared": [shared, shared], "value": value}


def write():
    import pathlib
    out = pathlib.Path(__file__).parent / "data" / "format6"
    out.mkdir(exist_ok=True)
    (out / "coroutines.sav").write_bytes(autosave.dumps(state()))
