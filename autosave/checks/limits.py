"""Bounds on what a file's records can make a load compute, checked in one pass over
the records before any object is built (docs/security.md, "Budgets").

* **C recursion.** CPython frees a deque, a defaultdict, an iterator over an iterator
  (``enumerate``, ``itertools``...) or a staticmethod, and hashes a tuple or a slice, by
  recursing in C with no depth check: a chain of them some tens of thousands deep
  (numpy object arrays: some thousands) kills the process. Chains through those types
  (adapters with ``c_dealloc``) are refused past ``C_DEPTH`` (for tuples and slices
  only where the load would hash them).
* **Hash work.** Hashing a value-hashed object (tuple, frozen class...) recomputes the
  hash of everything it holds. Records may share parts, so a small file can describe a
  key whose hash takes 2**60 steps. The steps every hashed key costs are counted on
  the records and bounded by ``hash_budget``.
* **Collisions.** Keys crafted to share one hash make building a dict or set quadratic;
  ``check_flood`` refuses containers whose keys collide far beyond chance.
* **The whole file.** Each record's own bound holds, and so must their sum: a
  ``Budget`` per file, opened by whatever reads one (``loads``, a log's ``restore``,
  ``inspect``, ``diff``), is charged the memory and work the records declare before
  any of it is spent, and refuses the file once the total passes what its size allows.
"""

import enum
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from itertools import compress
from operator import itemgetter

from ..errors import FormatError
from ..format.forms import target

C_DEPTH = 3000

# -- the whole file's budget ---------------------------------------------------------

# docs/security.md, "What is promised": a file of N bytes within 64 MiB + 100 N bytes of
# memory and about 1 s + 2 us N of CPU. Decoding a byte and building what it describes
# takes up to ~80 bytes at the peak (a file of empty dicts: measured), charged as 90;
# what remains is for what records declare (an itertools size, an iterator's gap, a
# checkpoint's inflated bytes), less a reserve for the loader's own bookkeeping.
MEMORY_BASE = 64 << 20
MEMORY_PER_BYTE = 100
MEMORY_RESERVE = 8 << 20
DECODE_MEMORY_PER_BYTE = 90
# Work in steps of about 30-50 ns (an iterator advanced, a key compared or hashed): a
# byte decoded is charged its 2 us share, the base 2**24 steps (about 0.6 s) is what
# records may declare on top.
WORK_BASE = 1 << 24
WORK_PER_BYTE = 32


class OverBudget(Exception):
    """The file's records declare more than its budget. Not a LoadError: raised inside
    a record's build, the loader reports it as a FormatError naming that record; the
    readers outside the loader turn it into theirs (``FormatError``,
    ``CorruptLogError``) with the file and offset."""


class Budget:
    """What a file of ``size`` bytes may still make its reader allocate (bytes) and
    compute (steps)."""

    __slots__ = ("memory", "work", "size", "shared")

    def __init__(self, size: int, shared: bool = False) -> None:
        self.size, self.shared = size, shared
        self.memory = MEMORY_BASE - MEMORY_RESERVE + MEMORY_PER_BYTE * size
        self.work = WORK_BASE + WORK_PER_BYTE * size

    def charge(self, memory: int, work: int, what: str) -> None:
        """Take ``memory`` bytes and ``work`` steps for ``what``, before spending them;
        OverBudget (nothing taken) if the file has not that much left."""
        if memory > self.memory:
            raise OverBudget(f"{what} takes {memory:,} bytes of memory, more than the "
                             f"{max(self.memory, 0):,} a {self.size:,}-byte file has left "
                             f"(docs/security.md, Budgets)")
        if work > self.work:
            raise OverBudget(f"{what} takes {work:,} steps, more than the "
                             f"{max(self.work, 0):,} a {self.size:,}-byte file has left "
                             f"(docs/security.md, Budgets)")
        self.memory -= memory
        self.work -= work

    def decoding(self, size: int) -> None:
        self.charge(DECODE_MEMORY_PER_BYTE * size, WORK_PER_BYTE * size,
                    f"decoding {size:,} bytes")


_ACTIVE: ContextVar[Budget | None] = ContextVar("autosave_budget", default=None)


class file_budget:
    """The budget of the file being read, ``size`` bytes: a new one, or, inside a reader
    that opened a ``shared`` one (a log's restore loading its checkpoint: the bytes are
    the log's), that one. ``decoded``: the reader decodes ``size`` bytes, charged now
    (a log's reader decodes only parts of its file, and charges them). Raises
    OverBudget when it cannot be. A load run by game code during a load (a hook
    loading bytes of its own) gets a budget of its own. (A class, not a generator:
    entered at every load, it costs a fraction as much.)"""

    __slots__ = ("size", "decoded", "shared", "token")

    def __init__(self, size: int, decoded: bool = True, shared: bool = False) -> None:
        self.size, self.decoded, self.shared = size, decoded, shared
        self.token: Token[Budget | None] | None = None

    def __enter__(self) -> Budget:
        active = _ACTIVE.get()
        if active is not None and active.shared:
            active.shared = False    # the checkpoint's load; a hook's loads are its own
            if self.decoded:
                active.decoding(self.size)
            return active
        budget = Budget(self.size, self.shared)
        if self.decoded:
            budget.decoding(self.size)
        self.token = _ACTIVE.set(budget)
        return budget

    def __exit__(self, *exc: object) -> None:
        token = self.token
        if token is not None:
            self.token = None
            _ACTIVE.reset(token)


@contextmanager
def no_budget() -> Iterator[None]:
    """Within: no file is being read (``copy`` of the game's own graph), even inside a
    load's hook."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def charge(memory: int, work: int, what: str) -> None:
    """Charge the file being read, if any (a ``copy`` reads the game's own graph:
    no budget)."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.charge(memory, work, what)


def hash_budget(records):
    return (1 << 20) + 8 * len(records)


def _either(types):
    """Type indices as a record may hold them: as is, or marked as closing a cycle (a
    save's records, checked before they are written; a load's come unmarked)."""
    return types | {~t for t in types}


class Hashing(enum.IntEnum):
    """What hashing an object of a type visits: decides which records may wait for a
    key's fields and which chains of hashes the budgets bound (``limits``)."""
    NONE = 0           # nothing else: identity hash, or a value of its own
    C_RECURSIVE = 1    # its parts, by unchecked C recursion (tuples)
    BY_VALUE = 2       # its parts, otherwise (Python __hash__, frozen dataclasses)



def check_records(schedules, records, first=0, names=()):
    """Refuse, with the record index, a file whose records exceed the bounds above.
    ``schedules``: each type entry's ``Schedule`` (loading/protocol.py), ``names`` its
    stable name. ``first``: the index of the first record (the batch objects come
    before it; none of them is of a type these bounds are about, so references to them
    end a chain)."""
    # Only the records' own types can start or continue a chain (batch objects end
    # one): ``schedules`` may be a dict of those types' alone (a save's check plans
    # no other), or every type's, in a list.
    if not records:
        return
    kept = list(schedules.items() if type(schedules) is dict else enumerate(schedules))
    dealloc = _either({t for t, s in kept if s.c_dealloc_levels})
    hashing = _either({t for t, s in kept if s.hashes})
    if not (dealloc or hashing):
        return
    # The records of those types, in file order, found at C speed (a record's type
    # index is normalised and in range: decode checked it).
    found = list(compress(range(len(records)),
                          map((dealloc | hashing).__contains__, map(itemgetter(0), records))))
    n = len(records)
    if dealloc:
        chain = {}
        # a level of some types takes several deques' worth of C stack to free
        weights = {t: schedules[_plain(t)].c_dealloc_levels for t in dealloc}
        for i in found:
            if records[i][0] in dealloc and i not in chain and list in map(type, records[i]):
                d = _fold(i, records, dealloc, max, chain, n, first, weights)
                if d > C_DEPTH:
                    w = weights[records[i][0]]
                    raise _at(i, FormatError(
                        f"record {i} heads a chain of {-(-d // w)} nested "
                        f"{names[_plain(records[i][0])]} objects; CPython cannot free more "
                        f"than about {C_DEPTH // w} without crashing"))
    if not hashing:
        return
    by_value = {t for t, s in kept if s.hashing is not Hashing.NONE}
    if not by_value:
        return
    c_hash = _either({t for t in by_value if schedules[t].hashing is Hashing.C_RECURSIVE})
    by_value = _either(by_value)
    budget = hash_budget(records)
    depth, size = {}, {}
    spent = 0
    for i in found:
        rec = records[i]
        if rec[0] not in hashing:
            continue
        schedule = schedules[_plain(rec[0])]
        part = schedule.fill_finished or schedule.build_finished
        if part is None:
            continue
        for j in _refs(rec, part, i, n, first):
            if records[j][0] not in by_value:
                continue
            if list not in map(type, records[j]):    # a key of plain values: one step
                spent += 1
                continue
            if records[j][0] in c_hash and _fold(j, records, c_hash, max, depth, n, first) > C_DEPTH:
                raise _at(j, FormatError(f"record {i} hashes record {j}, a chain of more "
                                         f"than {C_DEPTH} nested tuples or slices; CPython "
                                         f"cannot hash it without crashing"))
            spent += _fold(j, records, by_value, _add_capped(budget), size, n, first)
        if spent > budget:
            raise _at(i, FormatError(f"record {i}: hashing its keys would take more than "
                                     f"{budget:,} steps (the keys share parts many times "
                                     f"over)"))


def _at(index, error):
    """error, noting the record it is about (a save names that record's object)."""
    error.record = index
    return error


def _plain(t):
    return t if t >= 0 else ~t


def _add_capped(budget):
    def add(a, b):
        return min(a + b, budget + 1)
    return add


def _fold(root, records, members, combine, memo, n, first, weights=None):
    """1 + combine(...) of the same over the references of record ``root`` to records
    whose type is in ``members`` (others count 1 for a sum, 0 for a max), memoised in
    ``memo``, iteratively; for a max, ``weights`` may give a type's records a weight
    other than 1. A reference back to a record being folded (a cycle) counts
    as a leaf: a hash around a cycle fails by Python's own recursion limit."""
    is_max = combine is max
    stack = [(root, False)]
    while stack:
        j, expanded = stack.pop()
        if expanded:
            acc = 0
            for k in _refs(records[j], _ALL, j, n, first):
                if records[k][0] in members:
                    v = memo.get(k) or 1
                elif is_max:
                    continue
                else:
                    v = 1
                acc = max(acc, v) if is_max else combine(acc, v)
            memo[j] = combine(1, acc) if not is_max else acc + (
                weights[records[j][0]] if weights else 1)
            continue
        if j in memo:
            continue
        memo[j] = None                       # being folded
        stack.append((j, True))
        for k in _refs(records[j], _ALL, j, n, first):
            if k not in memo and records[k][0] in members:
                stack.append((k, False))
    return memo[root]


_ALL = slice(1, None)


def _refs(rec, part, here, n, first):
    """Record numbers of the in-range references to records in rec[part], rec being
    record number ``here`` (index ``first + here``)."""
    out = []
    for v in rec[part]:
        if v.__class__ is list and v and v[0].__class__ is int:
            j = target(v[0], here + first) - first
            if 0 <= j < n:
                out.append(j)
    return out


FLOOD_MIN = 64


def check_flood(keys, what):
    """Refuse a container of many keys whose hashes collide far beyond chance (a file
    crafted so that building it takes time quadratic in its size). ``keys`` are built
    objects; only called for containers of at least FLOOD_MIN keys."""
    counts = Counter(map(hash, keys))
    if len(counts) * 2 >= len(keys):
        return
    pairs = sum(g * (g - 1) // 2 for g in counts.values())
    if pairs > 16 * len(keys) + 2048:
        worst = max(counts.values())
        raise FormatError(f"{what} holds {len(keys)} keys of which {worst} share one hash "
                          f"value; a file whose keys collide like this would take "
                          f"quadratic time to load")
