"""Coroutines for tests/test_coroutine_rows.py: every mix of resume points, unbound
locals and hidden locals a column of them can hold."""
import autosave

autosave.allow(__name__)


class Steps:
    """An iterator of the game's own: a hidden local its check does not pass outright."""
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        return self
    def __next__(self):
        if self.n <= 0:
            raise StopIteration
        self.n -= 1
        return self.n


@autosave.coroutine
def walker(items):
    for x in items:
        seen = yield x
        if seen:
            extra = seen
            yield extra
    after = yield "end"
    yield after


@autosave.coroutine
def nested(n, items):
    for i in range(n):
        for j in items:
            yield (i, j)
    for k in {"a": 1, "b": 2}:
        yield k


@autosave.coroutine
def inner(n):
    for i in range(n):
        yield i
    return n


@autosave.coroutine
def outer(n):
    got = yield from inner(n)
    yield got


@autosave.coroutine
def own_iterator(n):
    for x in Steps(n):
        yield x
