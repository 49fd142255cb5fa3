"""The engine's per-reference loops, in Python, and in C when it was built.

Each function is a pass over a column (a save's references, a load's index
differences); ``new_memo`` makes the memo a save looks objects up in, which the C
keys by address (docs/speedups.md, "The memo"). The Python here is the definition; the extension ``autosave._speedups``
(built from ``csrc/``) does the same in one pass where Python makes several, and is
chosen once, below, when it was built and ``AUTOSAVE_PUREPYTHON`` is not set, as
``pickle`` picks ``_pickle``.
Both give the same results and raise the same exception classes: the contract, and
how the tests hold both to it, are in docs/speedups.md.
"""

import os
import re
import threading
from pathlib import Path
from collections import deque
from itertools import accumulate, chain, compress, islice, repeat
from operator import attrgetter, is_, is_not, itemgetter, sub
from types import MemberDescriptorType, SimpleNamespace
from typing import Any

from .sources import KERNEL_TABLE, sources_digest


def _sequence(objs):
    """objs as they are when a list or a tuple (a lookup may give them back as they
    are), else a list of them (read more than once)."""
    return objs if objs.__class__ is list or objs.__class__ is tuple else list(objs)


def kinds(column):
    """The set of the types of column's items."""
    return set(map(type, column))


def first_kinds(objs):
    """The distinct types of objs' items, in the order first met."""
    return list(dict.fromkeys(map(type, objs)))


def shapes(objs):
    """(distinct, which): the distinct tuples of the keys of the objs' ``__dict__``s,
    in the order first met, and the position in distinct of each obj's (None when
    there is one)."""
    # One shape is the common case: it needs no list of every object's keys.
    distinct = list(dict.fromkeys(map(tuple, map(vars, objs))))
    if len(distinct) < 2:
        return distinct, None
    keys = map(tuple, map(vars, objs))
    return distinct, list(map({k: i for i, k in enumerate(distinct)}.__getitem__, keys))


def slot_columns(descriptors, objs, absent):
    """One list per descriptor (a slot's member descriptor) of its value in each
    object, ``absent`` where the slot is unset."""
    if not all(map(MemberDescriptorType.__instancecheck__, descriptors)):
        raise TypeError("slot_columns reads slots: member descriptors")
    if not descriptors or not objs:
        return [[] for _ in descriptors]
    # A row per object, turned over: in Python, attrgetter reads every slot of an
    # object in one call, cheaper than a call per slot (a descriptor's __get__).
    get = attrgetter(*[d.__name__ for d in descriptors])
    try:
        rows = list(map(get, objs))
    except AttributeError:
        return [[_slot_or(d, obj, absent) for obj in objs] for d in descriptors]
    return [rows] if len(descriptors) == 1 else list(zip(*rows))


def _slot_or(descriptor, obj, absent):
    try:
        return descriptor.__get__(obj)
    except AttributeError:
        return absent


def dict_columns(objs, shape):
    """One list per key of ``shape``, of each object's value for it. ValueError unless
    each object's ``__dict__`` holds just those keys (they changed during the save)."""
    dicts = list(map(vars, objs))
    if dicts and set(map(len, dicts)) != {len(shape)}:
        raise ValueError("an object's attributes changed during the save")
    try:
        return [list(map(itemgetter(key), dicts)) for key in shape]
    except KeyError:
        raise ValueError("an object's attributes changed during the save") from None


def split(column, inline_types):
    """(mask, inline, refs): a mask byte 0 for each item whose type is in
    ``inline_types`` and 1 for any other, then the items of each kind, in order."""
    # compress takes the mask's bytes as they are, and its opposite made by translate:
    # no bool per item, and no second pass of type() or not_
    mask = bytes(map(dict.fromkeys(inline_types, 0).get, map(type, column), repeat(1)))
    return mask, list(compress(column, mask.translate(_FLIP))), list(compress(column, mask))


_FLIP = bytes([1, 0]) + bytes(254)


def look_up(table, objs):
    """(cells, missing): ``table.get(obj)`` for each obj, and the distinct objs the
    table does not hold, in the order first met; when it holds none of them, ``objs``
    itself (a list or tuple of them, else a list), repeats and all: ``file_all`` files
    each once. For a table keyed by the objects."""
    objs = _sequence(objs)
    cells = list(map(table.get, objs))
    if None not in cells:
        return cells, []
    if not any(map(is_not, cells, repeat(None))):        # all new
        return cells, objs
    return cells, list(dict.fromkeys(compress(objs, map(is_, cells, repeat(None)))))


def new_memo():
    """A save's memo: a mapping of ``id(obj)`` to obj's cell. In C, a ``Memo`` keyed by
    the object's address, which the C loops look objects up in without an id() each."""
    return {}


def look_up_ids(memo, objs):
    """(keys, cells, missing): ``memo.get(id(obj))`` for each obj, and the distinct objs
    (by identity) the memo does not hold, in the order first met, or, when it holds
    none of them, ``objs`` itself (as ``look_up``), repeats and all; keys, what
    ``fill_missing`` and ``file_all`` take: each ``id(obj)`` (in C, for a ``Memo``: the
    objs)."""
    objs = _sequence(objs)
    ids = list(map(id, objs))
    cells = list(map(memo.get, ids))
    if None not in cells:
        return ids, cells, []
    if not any(map(is_not, cells, repeat(None))):        # all new
        return ids, cells, objs
    new = list(map(is_, cells, repeat(None)))
    return ids, cells, list(dict(zip(compress(ids, new), compress(objs, new))).values())


def file_all(table, keys, objs, serial):
    """Give each distinct obj, in the order first met, its reference: the int
    ``-(serial + 1 + i)`` for the i-th, in table, under its key (``keys[j]`` is
    ``objs[j]``'s: the object itself, or what ``look_up_ids`` gives). The table holds
    none of the keys. None when objs are distinct; else the distinct objs, a list."""
    keys = _sequence(keys)
    if len(keys) != len(objs):
        raise ValueError("one key per object")
    # No list of the references, and no object per reference but its int: made as the
    # dict takes them. A repeat is told by the table's size, with no pass of its own.
    before = len(table)
    table.update(zip(keys, range(-serial - 1, -serial - len(keys) - 1, -1)))
    if len(table) - before == len(keys):
        return None
    # A repeat took its first's place and a later serial: each numbered again in order
    distinct = dict(zip(keys, objs))
    table.update(zip(distinct, range(-serial - 1, -serial - len(distinct) - 1, -1)))
    return list(distinct.values())


def fill_missing(table, keys, cells):
    """``[table[key] for key in keys]``: ``cells`` is an earlier lookup of the keys in
    table, whose cells (not None) the C takes as they are. KeyError for a key the table
    does not hold."""
    return list(map(table.__getitem__, keys))


def list_columns(lists):
    """[lengths, items]: each list's (or tuple's) length, and all their items one after
    the other."""
    return [list(map(len, lists)), list(chain.from_iterable(lists))]


_INLINE = frozenset((type(None), bool, int, float, str, bytes))    # format.INLINE_TYPES


def group_kinds(objs):
    """(kinds, groups): the distinct types of objs' items, in the order first met, and
    for each a list of the items of that type, in order."""
    groups = {}
    for obj in objs:
        group = groups.get(obj.__class__)
        if group is None:
            group = groups[obj.__class__] = []
        group.append(obj)
    return list(groups), list(groups.values())


def inline_keyed(dicts):
    """None when every dict's keys are all of inline types, else a list of each dict's
    answer. TypeError for anything but a dict."""
    dicts = _sequence(dicts)
    if not all(map(dict.__instancecheck__, dicts)):
        raise TypeError("inline_keyed reads dicts")
    # the common case, every key inline: one set of the types of all the keys
    if set(map(type, chain.from_iterable(dicts))) <= _INLINE:
        return None
    return [set(map(type, d)) <= _INLINE for d in dicts]


def dict_entries(dicts):
    """[lengths, keys, values]: each dict's length, then all their keys and all their
    values one after the other. TypeError for anything but a dict."""
    dicts = _sequence(dicts)
    if not all(map(dict.__instancecheck__, dicts)):
        raise TypeError("dict_entries reads dicts")
    return [list(map(len, dicts)), list(chain.from_iterable(dicts)),
            list(chain.from_iterable(map(dict.values, dicts)))]


def fill_dicts(dicts, lengths, keys, values, check=None, at_least=0):
    """Set each (empty) dict's run of entries, in order. The caller checks the lengths
    first (``format.check_lengths``) and that there is one value per key; the C checks
    them again, and raises ValueError, where what the Python does is left unsaid.
    TypeError unless every key is of an inline type. Then, given ``check``,
    ``check(its keys)`` for each dict of at least ``at_least`` entries, in order, before
    any is filled (the loader's hash-flood check; the C gives the keys as a tuple)."""
    if not set(map(type, keys)) <= _INLINE:
        raise TypeError("a dict's key is not an inline value")
    if check is not None:
        for d, k in compress(zip(range(len(lengths)), accumulate(lengths, initial=0)),
                             map(at_least.__le__, lengths)):
            check(keys[k:k + lengths[d]])
    keys_in, values_in = iter(keys), iter(values)
    deque(map(dict.update, compress(dicts, lengths),
              map(zip, map(islice, repeat(keys_in), compress(lengths, lengths)),
                  map(islice, repeat(values_in), compress(lengths, lengths)))), 0)


def framed(encode, value, prefix, checksum):
    """A save's bytes: ``prefix`` (magic and version, 5 bytes), the body's length (u64
    little-endian), ``checksum(header, body)`` (u64 little-endian; the header is the
    13 bytes before it), then the body, ``encode(value)``. The C grows the encoder's
    result in place instead of copying it. TypeError for a prefix of another size or
    an encoder that gives something else than bytes."""
    if prefix.__class__ is not bytes or len(prefix) != 5:
        raise TypeError("framed: the prefix is 5 bytes")
    body = encode(value)
    if body.__class__ is not bytes:
        raise TypeError("framed: the encoder gave no bytes")
    head = prefix + len(body).to_bytes(8, "little")
    return b"".join((head, checksum(head, body).to_bytes(8, "little"), body))


def writable(items, holder, index):
    """A writeable buffer of the bytes ``items[index]``, for an array to use without
    another copy: here a copy (a bytearray). The C hands out the bytes' own memory
    instead when nothing but ``items`` and ``holder`` (at the same index) holds them,
    and sets both entries to None: a caller reads neither afterwards. TypeError unless
    items and holder are lists and the item bytes; IndexError out of range."""
    if items.__class__ is not list or holder.__class__ is not list \
            or index.__class__ is not int:
        raise TypeError("writable(items, holder, index): two lists, an int")
    if not 0 <= index < len(items):
        raise IndexError("writable: index out of range")
    data = items[index]
    if data.__class__ is not bytes:
        raise TypeError("writable: the item is not bytes")
    return bytearray(data)


def code_strings(values, limit):
    """(strings, codes): the distinct strings of a column of strs, in the order first
    met, and each value's position among them; None when there are more than ``limit``
    distinct ones (the C stops there). TypeError for a value not an exact str (the C:
    one met before the limit is)."""
    values = _sequence(values)
    code = {}
    codes = list(map(code.setdefault, values, map(len, repeat(code))))
    if code and len(code) > limit:
        stop = values.index(list(code)[max(limit, 0)])      # where the C stops
        if not set(map(type, values[:stop + 1])) <= {str}:
            raise TypeError("code_strings codes strs")
        return None
    if not set(map(type, values)) <= {str}:
        raise TypeError("code_strings codes strs")
    return list(code), codes


def decode_codes(strings, codes):
    """``[strings[c] for c in codes]``: a coded column's values, read from a file.
    TypeError unless the strings are all exact strs; ValueError unless every code is an
    exact int (not a bool) from 0 to ``len(strings) - 1``."""
    if not set(map(type, strings)) <= {str}:
        raise TypeError("a coded column's strings are strs")
    if codes and (not set(map(type, codes)) <= {int} or min(codes) < 0
                  or max(codes) >= len(strings)):
        raise ValueError("a code outside the strings")
    return list(map(strings.__getitem__, codes))


def differences(cells, tail):
    """The differences of the indices the cells name, in order. A cell is a batch
    object's reference, an int v naming ``tail[v]`` (``-serial``: the save's tail maps
    it to the object's index), or a record's, the list ``[v]`` naming ``tail[v]`` (a
    record's index: the tail maps it to itself)."""
    if cells.__class__ is not list:
        cells = list(cells)         # read twice when a record's cell is among them
    try:
        index = list(map(tail.__getitem__, cells))
    except TypeError:               # a record's cell among them: a pass that opens it
        index = [tail[c[0] if c.__class__ is list else c] for c in cells]
    return list(map(sub, index, chain((0,), index)))


def resolve_refs(diffs, objs):
    """(indices, objects) of a column's reference differences: their running sums and
    ``objs[i]`` of each. TypeError if a difference is not an int (msgpack's true and
    false count as 1 and 0, as in Python); else IndexError if an index falls outside
    objs, negative ones included."""
    try:
        index = list(accumulate(diffs))
        refs = list(map(objs.__getitem__, index))
    except (IndexError, TypeError):
        if not all(map(isinstance, diffs, repeat(int))):
            raise TypeError("a reference difference is not an int") from None
        raise IndexError("a reference outside the objects") from None   # or too big
    if index and min(index) < 0:
        raise IndexError("a reference outside the objects")
    if index and index[0].__class__ is bool:
        # accumulate hands the first item on as it is: a lone true must be the int
        # 1, as every later sum is and as the C gives it
        index[0] = int(index[0])
    return index, refs


def merge_mixed(mask, inline, refs):
    """A mixed column's values in order: for each mask byte, the next inline value (0)
    or the next reference (1). ValueError if the mask does not match them."""
    if mask.count(1) != len(refs) or mask.count(0) != len(inline) or \
            len(mask) != len(refs) + len(inline):
        raise ValueError("the mask does not match the values")
    return list(map(next, map((iter(inline), iter(refs)).__getitem__, mask)))


def fill_slots(descriptors, objs, columns):
    """``descriptors[j].__set__(objs[i], columns[j][i])`` for every object and column:
    each descriptor a slot's (a member descriptor), each column as long as objs."""
    if len(descriptors) != len(columns):
        raise ValueError("one column per descriptor")
    if not all(map(MemberDescriptorType.__instancecheck__, descriptors)):
        raise TypeError("fill_slots sets slots: member descriptors")
    if any(len(column) != len(objs) for column in columns):
        raise ValueError("a column is not as long as the objects")
    cls = _one_plain_class(objs)
    if cls is not None and all(_type_lookup(cls, d.__name__) is d for d in descriptors):
        # setattr reaches the same descriptor, and calls it a quarter faster than the
        # descriptor's own method-wrapper does
        for descriptor, column in zip(descriptors, columns):
            deque(map(setattr, objs, repeat(descriptor.__name__), column), 0)
        return
    for descriptor, column in zip(descriptors, columns):
        deque(map(descriptor.__set__, objs, column), 0)


def fill_attributes(objs, fields, columns):
    """``vars(objs[i])[fields[j]] = columns[j][i]`` for every object and field, in the
    order of fields: each column as long as objs."""
    if len(fields) != len(columns):
        raise ValueError("one column per field")
    if any(len(column) != len(objs) for column in columns):
        raise ValueError("a column is not as long as the objects")
    if not fields:                    # nothing to set: no object is touched
        return
    cls = _one_plain_class(objs)
    if cls is not None and cls.__dictoffset__ and all(
            type(f) is str and not _is_data_descriptor(_type_lookup(cls, f)) for f in fields):
        # setattr then stores in the __dict__ (no descriptor or __setattr__ of the
        # class's intervenes), with no dict built per object: a third faster
        for field, column in zip(fields, columns):
            deque(map(setattr, objs, repeat(field), column), 0)
        return
    dicts = map(dict, map(zip, repeat(fields), zip(*columns)))
    deque(map(dict.update, map(vars, objs), dicts), 0)


def fill_frames(objs, template, fields, columns):
    """Give every object a copy of ``template`` (a dict) as its ``__dict__``, then
    ``vars(objs[i])[fields[j]] = columns[j][i]`` for every object and field: each
    column as long as objs, each field a str the template holds already (so no entry is
    added and no table grows), each object of a class with a ``__dict__`` and no
    ``__setattr__`` of its own (a loading coroutine's frame)."""
    if type(template) is not dict:
        raise TypeError("fill_frames copies a dict")
    if len(fields) != len(columns):
        raise ValueError("one column per field")
    if any(len(column) != len(objs) for column in columns):
        raise ValueError("a column is not as long as the objects")
    if not all(type(f) is str and f in template for f in fields):
        raise ValueError("a field the template does not hold")
    if not all(map(_frame_class, set(map(type, objs)))):
        raise TypeError("fill_frames fills objects with a __dict__ and no __setattr__")
    dicts = list(map(dict.copy, repeat(template, len(objs))))
    deque(map(object.__setattr__, objs, repeat("__dict__"), dicts), 0)
    cls = _one_plain_class(objs)
    if cls is not None and not any(_is_data_descriptor(_type_lookup(cls, f)) for f in fields):
        # setattr then writes the __dict__ (object's own __setattr__, no descriptor
        # named like a field): a third faster than dict.__setitem__ through map
        for field, column in zip(fields, columns):
            deque(map(setattr, objs, repeat(field), column), 0)
        return
    for field, column in zip(fields, columns):
        deque(map(dict.__setitem__, dicts, repeat(field), column), 0)


def _frame_class(cls):
    return bool(cls.__dictoffset__) and cls.__setattr__ is object.__setattr__


_NOTHING = object()


def _one_plain_class(objs):
    """The class of every obj when they share one whose instances set attributes as
    ``object`` does (no ``__setattr__`` of its own); else None."""
    if not objs:
        return None
    cls = type(objs[0])
    if cls.__setattr__ is not object.__setattr__ or not all(
            map(is_, map(type, objs), repeat(cls))):
        return None
    return cls


def _type_lookup(cls, name):
    """What attribute lookup on an instance of cls finds for name on the class (its
    MRO, as ``object.__setattr__`` searches it), or _NOTHING."""
    for klass in cls.__mro__:
        namespace = klass.__dict__
        if name in namespace:
            return namespace[name]
    return _NOTHING


def _is_data_descriptor(attribute):
    kind = type(attribute)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


def fill_lists(lists, lengths, items):
    """Extend each list by its length's run of items, in order. The caller checks the
    lengths first (``format.check_lengths``: ints >= 0 adding up to ``len(items)``);
    the C checks them again, as it must not read past the items, and raises
    ValueError, where what the Python does is left unsaid."""
    it = iter(items)
    # the empty ones (a quarter, in games' lists) untouched, as no slice is made for them
    deque(map(list.extend, compress(lists, lengths), map(islice, repeat(it),
                                                         compress(lengths, lengths))), 0)


def _kernel_names() -> list[str]:
    """The kernels the C replaces: the one list of them (kernels.def), which the C
    method table and declarations are made from too."""
    table = (Path(__file__).parent / "kernels.def").read_text()
    return re.findall(r"^KERNEL_\w+\((\w+),", table, re.M)


NAMES = _kernel_names()
PURE = {name: globals()[name] for name in ("new_memo", *NAMES)}


def build_problem(speedups: Any) -> str | None:
    """Why a built extension must not run, or None: it lacks a kernel, or it was built
    in place, in a checkout (an editable install), whose sources changed since: it
    would run C that no longer matches them."""
    missing = sorted(name for name in (*NAMES, "Memo") if not hasattr(speedups, name))
    root = Path(speedups.__file__).resolve().parent.parent
    stale = ((root / "csrc").is_dir() and (root / KERNEL_TABLE).is_file()
             and getattr(speedups, "SOURCES", "") != sources_digest(root))
    if not (missing or stale):
        return None
    return (f"{speedups.__file__} was built from other sources than "
            f"{root if stale else 'this autosave'}"
            f"{' (it lacks ' + ', '.join(missing) + ')' if missing else ''}; rebuild it "
            f"(pip install -e .) or set AUTOSAVE_PUREPYTHON=1 to run the Python loops")

try:
    if os.environ.get("AUTOSAVE_PUREPYTHON"):
        raise ImportError("AUTOSAVE_PUREPYTHON is set")
    from autosave import _speedups  # type: ignore[attr-defined]
except ImportError:
    _speedups = None
else:
    _problem = build_problem(_speedups)
    if _problem is not None:
        raise ImportError(_problem)
    globals().update({name: getattr(_speedups, name) for name in NAMES})
    new_memo = _speedups.Memo

#: Which implementation the engine runs: "C" or "Python".
IMPLEMENTATION = "Python" if _speedups is None else "C"
#: The types of the buffers ``writable`` hands out besides bytearray: the C's
#: OwnedBytes (a fresh bytes of two bytes, which only the list holds, is taken)
OWNERS: tuple[type, ...] = () if _speedups is None else (
    type(_speedups.writable([bytes(2)], [], 0)),)


CHOSEN = {name: globals()[name] for name in PURE}
_inside = 0                      # python_loops blocks open, in any thread
_lock = threading.Lock()


# The two sets of loops a save may be handed, made once (read-only by convention: a
# save only reads them); which one is current is ``_inside``'s to say.
_LOOPS = {False: SimpleNamespace(**CHOSEN), True: SimpleNamespace(**PURE)}


def loops():
    """The loops chosen now, as attributes (``loops().look_up``): a save takes them
    once, when it starts, so a ``python_loops`` block opened meanwhile in another
    thread cannot hand it the other implementation half-way (its memo is made by
    one, and read by that one's loops only). Each set is one namespace, made at
    import: taking it costs a lookup, not a copy of every kernel per save."""
    return _LOOPS[_inside > 0]


class python_loops:
    """Inside the block the engine runs the Python loops above, whichever the import
    chose: what the tests and benchmarks compare the C loops with. Blocks may nest and
    overlap across threads; the import's choice is back once none is open."""

    def __enter__(self):
        global _inside
        with _lock:
            _inside += 1
            globals().update(PURE)

    def __exit__(self, *exc):
        global _inside
        with _lock:
            _inside -= 1
            if not _inside:
                globals().update(CHOSEN)
