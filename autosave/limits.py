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
"""

from collections import Counter
from itertools import compress
from operator import itemgetter

from .errors import FormatError
from .format import target

C_DEPTH = 3000


def hash_budget(records):
    return (1 << 20) + 8 * len(records)


def _either(types):
    """Type indices as a record may hold them: as is, or marked as closing a cycle (a
    save's records, checked before they are written; a load's come unmarked)."""
    return types | {~t for t in types}


def check_records(plans, records, first=0):
    """Refuse, with the record index, a file whose records exceed the bounds above.
    ``first``: the index of the first record (the batch objects come before it; none
    of them is of a type these bounds are about, so references to them end a chain)."""
    dealloc = _either({t for t, p in enumerate(plans) if getattr(p, "c_dealloc", False)})
    hashing = _either({t for t, p in enumerate(plans) if p.hashes})
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
        weights = {t: int(plans[t if t >= 0 else ~t].c_dealloc) for t in dealloc}
        for i in found:
            if records[i][0] in dealloc and i not in chain and list in map(type, records[i]):
                d = _fold(i, records, dealloc, max, chain, n, first, weights)
                if d > C_DEPTH:
                    w = weights[records[i][0]]
                    raise _at(i, FormatError(
                        f"record {i} heads a chain of {-(-d // w)} nested "
                        f"{plans[_plain(records[i][0])].name} objects; CPython cannot free more "
                        f"than about {C_DEPTH // w} without crashing"))
    if not hashing:
        return
    by_value = {t for t, p in enumerate(plans) if getattr(p, "hash_kind", 0)}
    if not by_value:
        return
    c_hash = _either({t for t in by_value if plans[t].hash_kind == 1})
    by_value = _either(by_value)
    budget = hash_budget(records)
    depth, size = {}, {}
    spent = 0
    for i in found:
        rec = records[i]
        if rec[0] not in hashing:
            continue
        plan = plans[_plain(rec[0])]
        part = plan.fill_finished or plan.build_finished
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
