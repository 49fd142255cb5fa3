"""Iterators over the standard containers, saved as the container and a position.

A ``for`` loop suspended in an ``@autosave.coroutine`` holds one; so may any object.
The container is saved by reference, so a loop over a list keeps running over *that*
list after a load (and sees later changes to it, as natively). Payloads:

* ``builtins.list_iterator`` / ``tuple_iterator`` / ``str_iterator`` /
  ``bytes_iterator`` / ``bytearray_iterator`` / ``reversed`` / ``list_reverseiterator``:
  ``[sequence, next index]``, or ``[None, 0]`` once exhausted (the sequence released);
* ``builtins.range_iterator``: ``[start, stop, step]`` of the range still to come;
* ``builtins.dict_iterator``: ``[kind, dict, items consumed]``; kind is ``keys``,
  ``values``, ``items`` or ``reversed-...``; consumed ``-1`` when the dict changed size
  under the iterator (its next step raises ``RuntimeError`` as natively); ``[kind,
  None, 0]`` once exhausted;
* ``builtins.dict_keys`` / ``dict_values`` / ``dict_items`` (the views): ``[dict]``;
* ``builtins.set_iterator``: ``[items still to come...]`` (a set has no positions);
* ``builtins.enumerate``: ``[iterator, next count]``; ``builtins.zip``: ``[strict,
  iterators...]``; ``builtins.map``: ``[function, iterators...]``; ``builtins.filter``:
  ``[function or None, iterator]``.

Building one never calls game code: functions of ``map``/``filter`` are only stored.
"""

import gc
from collections import deque
from collections.abc import Callable
from itertools import islice
from operator import le, lt
from typing import Any

from ...errors import FormatError
from ...format import kernels
from ...checks.limits import charge
from ...checks.loadcheck import MAX_ITERATOR_GAP
from ..registry import REGISTRY
from .base import Adapter, BatchOnlyPlan, register_adapter
from .containers import flood_checked


def _exhausted(it):
    for _ in it:
        pass
    return it


_BASES = (list, bytearray, tuple, str, bytes)


def _position(name: str, it: Any, seq: Any, index: int, reverse: bool) -> None:
    """Set iterator ``it`` over ``seq`` (a list or bytearray, or an immutable sequence) to
    ``index``, refusing a forged position. Natively a position outlives the sequence
    becoming shorter for a while; ``__setstate__`` clamps it to the length, so a list or
    bytearray is lengthened meanwhile (through its base type's own methods: a subclass's
    ``extend`` never runs)."""
    if type(index) is not int:
        raise ValueError("an iterator record holds an int position")
    if index < (-1 if reverse else 0):
        # a saved position is never below that (a reverse iterator over an empty
        # sequence, or one that gave its last item, is at -1): a forged file's
        raise FormatError(f"a {name} record's position {index} is negative")
    base = list if type(seq) is list else next((b for b in _BASES if isinstance(seq, b)), None)
    # the base type's length, as the iterator's own __setstate__ reads it
    short = index - (len(seq) if base is None else base.__len__(seq)) + (1 if reverse else 0)
    if short > MAX_ITERATOR_GAP:
        raise FormatError(f"a {name} record's position {index} lies {short} items "
                          f"past the end of its sequence (the loader's limit is "
                          f"{MAX_ITERATOR_GAP})")
    if short > 0 and (base is list or base is bytearray):
        charge((16 if base is list else 9) * short, short,
               f"a {name} {short:,} items past the end of its sequence")
        size = base.__len__(seq)
        base.extend(seq, (0,) * short if base is list else bytes(short))
        try:
            it.__setstate__(index)
        finally:
            base.__delitem__(seq, slice(size, None))
    else:
        it.__setstate__(index)


class SequenceIteratorAdapter(Adapter):
    build_finished = slice(1, 2)       # the position clamps to the filled sequence

    def __init__(self, name, types, make, empty, over):
        self.name, self.types, self.make, self.empty = name, types, make, empty
        self.over = over           # the exact sequence types it may iterate

    def parts(self, obj):
        rv = obj.__reduce__()
        if len(rv) < 3:
            return [None, 0]
        return [rv[1][0], rv[2]]

    def build(self, vals):
        seq, index = vals[1:]
        if type(index) is not int:
            raise ValueError("an iterator record holds an int position")
        if seq is None:
            return _exhausted(self.make(self.empty))
        if type(seq) not in self.over and not (
                (self.make is reversed or isinstance(seq, self.over))
                and REGISTRY.is_allowed_module(type(seq).__module__)):
            raise FormatError(f"a {self.name} record holds a {type(seq).__name__} as its "
                              f"sequence")
        it = self.make(seq)
        _position(self.name, it, seq, index, self.make is reversed)
        return it


class ListIteratorAdapter(Adapter):
    """``iter(a_list)`` and ``reversed(a_list)``: made over the list at once, positioned
    once the list is filled (docs/format.md, "Reading"). The iterator is made by
    ``list.__iter__`` / ``list.__reversed__`` themselves, so a list subclass's own
    methods never run, and only over a list; the position needs the list's length
    alone, so the fill waits for the list to be filled, not for what it holds.

    A loop suspended in a coroutine holds one over a list the coroutine also holds,
    commonly a batch object filled after every record: made here at once, the
    iterator lets the coroutine's record be made in its turn."""
    has_fill, reads_parts, shallow = True, False, True
    fill_finished = slice(1, 2)

    def __init__(self, name, types, make, reverse):
        self.name, self.types, self.make, self.reverse = name, types, make, reverse

    def parts(self, obj):
        rv = obj.__reduce__()
        if len(rv) < 3:
            return [None, 0]
        return [rv[1][0], rv[2]]

    def build(self, vals):
        seq, index = vals[1:]
        if type(seq) is list:               # the common case, checked in full below
            return self.make(seq)           # the position is checked by fill
        if type(index) is not int:
            raise ValueError("an iterator record holds an int position")
        if seq is None:
            return _exhausted(self.make([]))
        if not isinstance(seq, list) or not (
                type(seq) is list or REGISTRY.is_allowed_module(type(seq).__module__)):
            raise FormatError(f"a {self.name} record holds a {type(seq).__name__} as its "
                              f"sequence")
        return self.make(seq)

    def fill(self, obj, vals):
        seq, index = vals[1], vals[2]
        if type(seq) is list and type(index) is int and (
                0 <= index <= len(seq) if not self.reverse else -1 <= index < len(seq)):
            obj.__setstate__(index)         # within the list: nothing to check further
        elif seq is not None:
            _position(self.name, obj, seq, index, self.reverse)

    def create(self, rec, vals):
        obj = self.build(vals)
        self.fill(obj, vals)
        return obj

    def batch_row(self, obj):
        """An iterator over an exact list (always a batch object) goes in a batch
        (format 7): ``((), [list, position])``; one over anything else, or exhausted,
        is a record (None)."""
        rv = obj.__reduce__()
        return ((), [rv[1][0], rv[2]]) if len(rv) > 2 and type(rv[1][0]) is list else None

    def batch_plan(self, fields):
        return _batch_plan(self, fields, ListIteratorBatch)


class _IteratorBatch(BatchOnlyPlan):
    """The load plan of a batch of iterators (format 7; docs/format.md, "Batches"):
    built at the end of the batch objects' allocation from inline values and other
    batch objects, so every record finds them made. A record under its type entry is
    refused: the writer's records of the type have an entry of their own."""
    ncolumns = 0
    whole = False             # final once allocated (refers to nothing filled later)

    def __init__(self, adapter):
        self.adapter, self.name = adapter, adapter.name

    def columns(self, filler, batch, n, inline):
        """The batch's columns' values, each of n, all ints where ``inline`` says so."""
        out = []
        for column, ints in zip(islice(batch, 2, None), inline):
            values, index, absent = filler.resolve(column, n)
            if absent:
                raise FormatError(f"a {self.name} batch holds an unset-slot marker")
            if ints and (index is not None or not kernels.kinds(values) <= _INTS):
                raise FormatError(f"a {self.name} batch's {('positions', 'bounds')[self.whole]}"
                                  f" are ints")
            out.append((values, index))
        return out


_INTS = {int}


class ListIteratorBatch(_IteratorBatch):
    """Columns: the lists (references to exact lists, which are batch objects) and the
    positions (ints). Each is made over its list by ``list.__iter__`` /
    ``list.__reversed__`` as the batch objects are allocated, and given its position
    when the lists are filled (``finish_batch``), before any value still to come is
    taken out of them: the length is the saved one."""
    ncolumns = 2

    def build_batch(self, filler, objs, start, n, batch):
        (seqs, index), (positions, _) = self.columns(filler, batch, n, (False, True))
        if index is None or not kernels.kinds(seqs) <= {list}:
            raise FormatError(f"a {self.name} batch's sequences are lists of the save")
        objs[start:start + n] = map(self.adapter.make, seqs)
        self.pending.append((objs[start:start + n], seqs, positions))

    def finish_batch(self):
        """Position the iterators, now that their lists are filled: at C speed when
        every position lies within its list, else one by one with a record's checks."""
        adapter = self.adapter
        for its, seqs, positions in self.pending:
            lengths = list(map(len, seqs))       # exact lists: list.__len__
            if (min(positions) >= -adapter.reverse and
                    all(map(lt if adapter.reverse else le, positions, lengths))):
                deque(map(type(its[0]).__setstate__, its, positions), 0)
                continue
            for it, seq, position in zip(its, seqs, positions):
                _position(self.name, it, seq, position, adapter.reverse)
        self.pending = []


class RangeIteratorBatch(_IteratorBatch):
    """Columns: start, stop and step of the ranges still to come, ints: built whole."""
    ncolumns, whole = 3, True

    def build_batch(self, filler, objs, start, n, batch):
        (starts, _), (stops, _), (steps, _) = self.columns(filler, batch, n, (True,) * 3)
        try:
            objs[start:start + n] = map(iter, map(range, starts, stops, steps))
        except ValueError:
            raise FormatError(f"a {self.name} batch holds a step of 0") from None


def _batch_plan(adapter, fields, kind):
    if fields:
        raise FormatError(f"type entry {adapter.name} must not list fields")
    plan = kind(adapter)
    plan.pending = []
    return plan


class RangeIteratorAdapter(Adapter):
    reads_parts = False               # ints only
    name = "builtins.range_iterator"
    types = (type(iter(range(0))), type(iter(range(2 ** 64))))

    def parts(self, obj):
        rv = obj.__reduce__()
        r = rv[1][0]
        index = rv[2] if len(rv) > 2 and rv[2] is not None else 0
        rest = r[index:]
        return [rest.start, rest.stop, rest.step]

    def build(self, vals):
        start, stop, step = vals[1:]
        if type(start) is not int or type(stop) is not int or type(step) is not int:
            raise ValueError("a range iterator record holds ints")
        return iter(range(start, stop, step))

    def batch_row(self, obj):
        """Every range iterator goes in a batch (format 7): ``((), [start, stop,
        step])`` of the range still to come."""
        return (), self.parts(obj)

    def batch_plan(self, fields):
        return _batch_plan(self, fields, RangeIteratorBatch)


_DICT_KINDS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    type(iter({})): ("keys", lambda d: iter(d)),
    type(iter({}.values())): ("values", lambda d: iter(d.values())),
    type(iter({}.items())): ("items", lambda d: iter(d.items())),
    type(reversed({})): ("reversed-keys", lambda d: reversed(d)),
    type(reversed({}.values())): ("reversed-values", lambda d: reversed(d.values())),
    type(reversed({}.items())): ("reversed-items", lambda d: reversed(d.items())),
}
_DICT_MAKERS = dict(_DICT_KINDS.values())


class _SizeMarker:
    """A key no game can hold: added and removed to make a changed-size iterator."""
    __slots__ = ()


class DictIteratorAdapter(Adapter):
    name = "builtins.dict_iterator"
    types = tuple(_DICT_KINDS)
    build_finished = slice(2, 3)

    def parts(self, obj):
        kind = _DICT_KINDS[type(obj)][0]
        owners = [r for r in gc.get_referents(obj) if type(r) is dict or isinstance(r, dict)]
        if not owners:
            return [kind, None, 0]
        d = owners[0]
        try:
            obj.__reduce__()
        except RuntimeError:           # the dict changed size under the iterator
            return [kind, d, -1]
        return [kind, d, len(d) - obj.__length_hint__()]

    def build(self, vals):
        kind, d, consumed = vals[1:]
        make = _DICT_MAKERS.get(kind)
        if make is None or type(consumed) is not int:
            raise ValueError("malformed dict iterator record")
        if d is None:
            return _exhausted(make({}))
        if not isinstance(d, dict):
            raise ValueError("a dict iterator record holds a dict")
        if consumed > dict.__len__(d):
            raise ValueError("a dict iterator's position lies past the end of its dict")
        if consumed < 0:
            marker = _SizeMarker()
            dict.__setitem__(d, marker, None)
            it = make(d)
            dict.__delitem__(d, marker)
            return it
        # advanced item by item: records sharing one big dict declare work its bytes
        # do not hold
        charge(0, consumed, f"a {self.name} {consumed:,} items into its dict")
        it = make(d)
        for _ in islice(it, consumed):
            pass
        return it


class SetIteratorAdapter(Adapter):
    name = "builtins.set_iterator"
    types = (type(iter(set[Any]())),)
    build_finished, hashes = slice(1, None), True

    def parts(self, obj):
        rv = obj.__reduce__()
        return list(rv[1][0])

    def build(self, vals):
        flood_checked(vals, 1, 1, "a set iterator")
        return iter(set(islice(vals, 1, None)))


class _WrappingAdapter(Adapter):
    """An iterator over other iterators (enumerate, zip, map, filter): the scheduling
    facts they share."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    reads_parts = False       # keeps references; reads their types only (iter_only)


class EnumerateAdapter(_WrappingAdapter):
    name, types = "builtins.enumerate", (enumerate,)

    def parts(self, obj):
        inner, count = obj.__reduce__()[1]
        return [inner, count]

    def build(self, vals):
        inner, count = vals[1:]
        if type(count) is not int:
            raise ValueError("an enumerate record holds an int count")
        return enumerate(iter_only(inner), count)


class ZipAdapter(_WrappingAdapter):
    name, types = "builtins.zip", (zip,)

    def parts(self, obj):
        rv = obj.__reduce__()
        return [bool(rv[2]) if len(rv) > 2 else False, *rv[1]]

    def build(self, vals):
        strict, *its = vals[1:]
        if type(strict) is not bool:
            raise ValueError("a zip record starts with its strict flag")
        return zip(*map(iter_only, its), strict=strict)


class MapAdapter(_WrappingAdapter):
    name, types = "builtins.map", (map,)

    def parts(self, obj):
        func, *its = obj.__reduce__()[1]
        return [func, *its]

    def build(self, vals):
        func, *its = vals[1:]
        if not callable(func) or not its:
            raise ValueError("a map record holds a function and iterators")
        return map(func, *map(iter_only, its))


class FilterAdapter(_WrappingAdapter):
    name, types = "builtins.filter", (filter,)

    def parts(self, obj):
        func, it = obj.__reduce__()[1]
        return [func, it]

    def build(self, vals):
        func, it = vals[1:]
        if func is not None and not callable(func):
            raise ValueError("a filter record holds a function or None")
        return filter(func, iter_only(it))


class DictViewAdapter(Adapter):
    """``d.keys()``, ``d.values()``, ``d.items()``: [dict] -- the view of that dict."""

    def __init__(self, name, cls, make):
        self.name, self.types, self.make = name, (cls,), make

    def parts(self, obj):
        owners = [r for r in gc.get_referents(obj) if isinstance(r, dict)]
        if len(owners) != 1:
            raise LookupError(f"the dict behind this {type(obj).__name__} cannot be found")
        return [owners[0]]

    def build(self, vals):
        (d,) = vals[1:]
        if not isinstance(d, dict):
            raise ValueError("a dict view record holds a dict")
        return self.make(d)


def iter_only(it):
    """An iterator from a record; anything else is malformed (never iterate a
    container the file claims is an iterator: that could be a dict of a million keys)."""
    if not hasattr(type(it), "__next__"):
        raise ValueError(f"expected an iterator, found {type(it).__name__}")
    return it


register_adapter(ListIteratorAdapter("builtins.list_iterator", (type(iter([])),),
                                     list.__iter__, False))
register_adapter(ListIteratorAdapter("builtins.list_reverseiterator", (type(reversed([])),),
                                     list.__reversed__, True))
_SEQUENCES = [
    ("builtins.tuple_iterator", (type(iter(())),), iter, (), (tuple,)),
    ("builtins.str_iterator", tuple({type(iter("")), type(iter("\u20ac"))}), iter, "", (str,)),
    ("builtins.bytes_iterator", (type(iter(b"")),), iter, b"", (bytes,)),
    ("builtins.bytearray_iterator", (type(iter(bytearray())),), iter, bytearray(), (bytearray,)),
    # reversed() of a tuple, a str, or a sequence class of the game's own
    ("builtins.reversed", (reversed,), reversed, (), (tuple, str, bytes, bytearray)),
]

for _name, _types, _make, _empty, _over in _SEQUENCES:
    register_adapter(SequenceIteratorAdapter(_name, _types, _make, _empty, _over))
for _name, _cls, _make in (("builtins.dict_keys", type({}.keys()), dict.keys),
                           ("builtins.dict_values", type({}.values()), dict.values),
                           ("builtins.dict_items", type({}.items()), dict.items)):
    register_adapter(DictViewAdapter(_name, _cls, _make))
for _adapter in (RangeIteratorAdapter, DictIteratorAdapter, SetIteratorAdapter,
                 EnumerateAdapter, ZipAdapter, MapAdapter, FilterAdapter):
    register_adapter(_adapter())
