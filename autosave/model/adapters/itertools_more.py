"""The rest of itertools' stateful iterators: ``filterfalse``, ``groupby`` and its
groups, ``tee``, and the combinatoric ones (``product``, ``permutations``,
``combinations``, ``combinations_with_replacement``).

Each is saved from the state itertools itself describes (``__reduce__``, read without
pickling) and rebuilt from it with itertools' own ``__setstate__``, after every part's
exact type is checked. Iterators inside must be iterators and are never advanced,
functions are stored and never called, pools must be plain tuples: nothing is consumed
or run during a load. ``itertools.pairwise`` is not here: CPython exposes no way to set
its state, so a load would have to consume its source (docs/types.md says what to use).
"""

import itertools

from ...errors import FormatError
from ...checks.limits import charge
from ...checks.loadcheck import exact
from .base import Adapter, register_adapter
from .iterators import iter_only
from .stdlib_more import _reduce, _setstate

# Longest result tuple a combinatoric record may ask for: itertools allocates r index
# slots up front, even when r exceeds the pool and nothing is ever produced.
MAX_COMBINATION_SIZE = 1 << 16

_GROUPER = type(next(itertools.groupby("a"))[1])
_TEE: type = type(itertools.tee(())[0])
_TEE_DATA: type = type(_reduce(itertools.tee(())[0])[2][0])
TEE_LINK = 57          # items per tee data link (CPython's LINKCELLS)


def _function(value, what, none_ok=True):
    if not callable(value) and not (none_ok and value is None):
        raise FormatError(f"{what} holds a function{' or None' if none_ok else ''}, the "
                          f"save holds a {type(value).__name__}")
    return value


def _indices(value, length, what):
    """A plain tuple of ``length`` exact ints (itertools clamps their values)."""
    exact(value, tuple, what)
    if len(value) != length or any(type(i) is not int for i in value):
        raise FormatError(f"{what} must be {length} ints")
    return value


class FilterFalseAdapter(Adapter):
    """[function or None, iterator]"""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.filterfalse", (itertools.filterfalse,)

    def parts(self, obj):
        func, it = _reduce(obj)[1]
        return [func, it]

    def build(self, vals):
        func, it = vals[1:]
        return itertools.filterfalse(_function(func, "an itertools.filterfalse record"),
                                     iter_only(it))


class GroupByAdapter(Adapter):
    """[iterator, key function or None, started, current key, current value, target
    key] (the last three only once started)."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.groupby", (itertools.groupby,)

    def parts(self, obj):
        rv = _reduce(obj)
        it, key = rv[1]
        return [it, key, True, *rv[2]] if len(rv) > 2 else [it, key, False]

    def build(self, vals):
        it, key, started, *state = vals[1:]
        if type(started) is not bool or len(state) != (3 if started else 0):
            raise FormatError("an itertools.groupby record holds its started flag and, "
                              "once started, three keys and values")
        out = itertools.groupby(iter_only(it), _function(key, "an itertools.groupby record"))
        if started:
            _setstate(out, tuple(state))
        return out


class GrouperAdapter(Adapter):
    """[groupby, target key] -- the group a groupby handed out last; [None, None] for
    an older group, which natively yields nothing more."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools._grouper", (_GROUPER,)

    def parts(self, obj):
        rv = _reduce(obj)
        if rv[0] is not _GROUPER:        # no longer its groupby's current group
            return [None, None]
        return list(rv[1])

    def build(self, vals):
        parent, key = vals[1:]
        if parent is None:
            spent = itertools.groupby(())
            out = _GROUPER(spent, None)
            _GROUPER(spent, None)        # a newer group of the same groupby: out is done
            return out
        if type(parent) is not itertools.groupby:
            raise FormatError(f"an itertools._grouper record holds its groupby, the save "
                              f"holds a {type(parent).__name__}")
        return _GROUPER(parent, key)     # becomes the groupby's current group, as saved


class TeeAdapter(Adapter):
    """[data link, index] -- one of the iterators ``tee`` made; iterators of the same
    tee share their links, so they stay in step with each other."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools._tee", (_TEE,)

    def parts(self, obj):
        data, index = _reduce(obj)[2]
        return [data, index]

    def build(self, vals):
        data, index = vals[1:]
        if type(data) is not _TEE_DATA:
            raise FormatError(f"an itertools._tee record holds a tee data link, the save "
                              f"holds a {type(data).__name__}")
        if type(index) is not int or not 0 <= index <= TEE_LINK:
            raise FormatError(f"an itertools._tee record's index lies in 0..{TEE_LINK}")
        out = _TEE(())
        _setstate(out, (data, index))
        return out


class TeeDataAdapter(Adapter):
    """[source iterator, next link or None, values...] -- items read from the source
    that some iterator of the tee has not reached yet."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools._tee_dataobject", (_TEE_DATA,)

    def parts(self, obj):
        it, values, link = _reduce(obj)[1]
        return [it, link, *values]

    def build(self, vals):
        it, link, *values = vals[1:]
        if link is not None and type(link) is not _TEE_DATA:
            raise FormatError("an itertools._tee_dataobject record's next link is a link "
                              "or None")
        if len(values) > TEE_LINK or (link is not None and len(values) != TEE_LINK):
            raise FormatError(f"an itertools._tee_dataobject record holds at most "
                              f"{TEE_LINK} values, exactly {TEE_LINK} when another follows")
        return _TEE_DATA(iter_only(it), values, link)


def _pool(value, what):
    exact(value, tuple, what)
    return value


def _size(r, pool, what):
    if type(r) is not int or not 0 <= r <= max(len(pool), MAX_COMBINATION_SIZE):
        raise FormatError(f"{what}'s size must be an int from 0 to "
                          f"{MAX_COMBINATION_SIZE} (or its pool's length)")
    return r


class ProductAdapter(Adapter):
    """[indices or None, pools...] (each pool a tuple, repeats written out)."""
    name, types = "itertools.product", (itertools.product,)

    def parts(self, obj):
        rv = _reduce(obj)
        return [rv[2] if len(rv) > 2 else None, *rv[1]]

    def build(self, vals):
        indices, *pools = vals[1:]
        for pool in pools:
            _pool(pool, "an itertools.product pool")
        out = itertools.product(*pools)
        if indices is not None:
            _setstate(out, _indices(indices, len(pools), "an itertools.product's indices"))
        return out


class CombinatoricAdapter(Adapter):
    """[pool, r, state or None] -- ``combinations`` and ``combinations_with_replacement``:
    the state is the indices into the pool; ``permutations``: [pool, r, indices, cycles]
    or [pool, r, None, None]."""

    def __init__(self, cls):
        self.cls, self.types = cls, (cls,)
        self.name = f"itertools.{cls.__name__}"
        self.pairs = cls is itertools.permutations

    def parts(self, obj):
        rv = _reduce(obj)
        pool, r = rv[1]
        if self.pairs:
            return [pool, r, *(rv[2] if len(rv) > 2 else (None, None))]
        return [pool, r, rv[2] if len(rv) > 2 else None]

    def build(self, vals):
        pool, r, *state = vals[1:]
        what = f"an {self.name} record"
        _size(r, _pool(pool, f"{what}'s pool"), what)
        if len(state) != (2 if self.pairs else 1):
            raise FormatError(f"{what} holds its pool, size and state")
        # itertools allocates r index slots and an r-tuple result (permutations: also
        # one slot per pool item), whatever the pool: records sharing one empty pool
        # declare memory the file's bytes do not hold.
        charge(16 * r + (8 * len(pool) if self.pairs else 0), 0, f"{what} of size {r:,}")
        out = self.cls(pool, r)
        if self.pairs and state != [None, None]:
            indices, cycles = state
            _setstate(out, (_indices(indices, len(pool), f"{what}'s indices"),
                            _indices(cycles, r, f"{what}'s cycles")))
        elif not self.pairs and state[0] is not None:
            _setstate(out, _indices(state[0], r, f"{what}'s indices"))
        return out


for _adapter in (FilterFalseAdapter(), GroupByAdapter(), GrouperAdapter(), TeeAdapter(),
                 TeeDataAdapter(), ProductAdapter(),
                 *map(CombinatoricAdapter, (itertools.permutations, itertools.combinations,
                                            itertools.combinations_with_replacement))):
    register_adapter(_adapter)
