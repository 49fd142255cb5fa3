"""The coroutines the coroutine benchmarks run: each exists twice with the same body, a
plain generator (``*_native``) and an ``@autosave.coroutine`` one."""

import autosave

autosave.allow(__name__)


class Guard:
    __slots__ = ("name", "x", "y", "speed", "alert", "steps", "brain")

    def __init__(self, name, x=0.0, y=0.0, speed=1.0):
        self.name, self.x, self.y, self.speed = name, x, y, speed
        self.alert = False
        self.steps = 0
        self.brain = None

    def step_toward(self, tx, ty):
        """Move at most ``speed`` toward (tx, ty); True once there."""
        dx, dy = tx - self.x, ty - self.y
        dist = (dx * dx + dy * dy) ** 0.5
        self.steps += 1
        if dist <= self.speed:
            self.x, self.y = tx, ty
            return True
        self.x += dx / dist * self.speed
        self.y += dy / dist * self.speed
        return False


WAYPOINTS = [(0.0, 0.0), (6.0, 0.0), (6.0, 4.0), (0.0, 4.0)]


@autosave.coroutine
def patrol(guard, waypoints):
    """A guard's patrol: one step toward the next waypoint per frame, a look around at
    each waypoint, a chase when alerted."""
    laps = 0
    while True:
        for wx, wy in waypoints:
            while not guard.step_toward(wx, wy):
                seen = yield guard.steps
                if seen is not None:
                    guard.alert = True
                    yield from chase(guard, seen)
            for _ in range(2):
                yield "look"
        laps += 1


@autosave.coroutine
def chase(guard, target):
    while not guard.step_toward(*target):
        yield "chase"
    guard.alert = False
    return target


def patrol_native(guard, waypoints):
    laps = 0
    while True:
        for wx, wy in waypoints:
            while not guard.step_toward(wx, wy):
                seen = yield guard.steps
                if seen is not None:
                    guard.alert = True
                    yield from chase_native(guard, seen)
            for _ in range(2):
                yield "look"
        laps += 1


def chase_native(guard, target):
    while not guard.step_toward(*target):
        yield "chase"
    guard.alert = False
    return target


@autosave.coroutine
def counter(n):
    """The least a step can do: the cost of the machinery alone."""
    while True:
        n += 1
        yield n


def counter_native(n):
    while True:
        n += 1
        yield n


def guards(count, make=patrol):
    """``count`` guards, each with a patrol suspended somewhere along it."""
    out = []
    for i in range(count):
        g = Guard(f"g{i}", speed=1.0 + (i % 3) * 0.5)
        g.brain = make(g, WAYPOINTS)
        for _ in range(1 + i % 11):
            next(g.brain)
        out.append(g)
    return out
