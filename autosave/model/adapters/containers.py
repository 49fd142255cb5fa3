"""Builtin and collections containers.

Payloads: items in order; dict-likes alternate key, value. Sets whose members are all
strings, all numbers or all bytes are written sorted, so the bytes do not depend on hash
order (string hashing is randomised per process).
"""

import collections
import types as pytypes
from collections.abc import Callable
from itertools import islice
from typing import Any

from ...checks.limits import FLOOD_MIN, check_flood
from ..schema import schema_of
from .base import Adapter, register_adapter


def flood_checked(vals, start, step, what):
    """Check the keys vals[start::step] of a big container for crafted collisions."""
    if len(vals) > start + FLOOD_MIN * step:
        check_flood(list(islice(vals, start, None, step)), what)


def ordered_members(s, written_index=None, structural_index=None):
    """Set members in an order that depends on the graph, not on hashing.

    All strings, all bytes or all numbers: sorted. Otherwise members already written
    come first, by record index; the rest by a shallow signature of their contents
    (type name and plain field values); members tied on that by ``structural_index``
    (their place in the graph reached without going through sets). Members still tied
    are interchangeable: nothing reachable tells them apart.
    """
    kinds = {type(x) for x in s}
    if len(kinds) == 1 and (str in kinds or bytes in kinds):
        return sorted(s)
    if kinds and kinds <= {int, float} and all(x == x for x in s):
        return sorted(s)

    def key(x):
        index = written_index(x) if written_index is not None else None
        if index is not None:
            return (0, index, "")
        return (1, 0, signature(x))
    keyed = sorted(((key(x), x) for x in s), key=lambda kx: kx[0])
    keys = [k for k, _ in keyed]
    if structural_index is not None and len(set(keys)) < len(keys):
        keyed.sort(key=lambda kx: (kx[0], structural_index(kx[1])))
    return [x for _, x in keyed]


_SIMPLE = (type(None), bool, int, float, str, bytes)


def signature(x, depth=2):
    """A deterministic text for x from its type and plain values, a few levels deep."""
    cls = type(x)
    if cls in _SIMPLE:
        return f"{cls.__name__}:{x!r}"
    name = f"{cls.__module__}.{cls.__qualname__}"
    if depth == 0:
        return name
    if isinstance(x, (tuple, list)):
        inner = [signature(v, depth - 1) for v in x]
    elif isinstance(x, (set, frozenset)):
        inner = sorted(signature(v, depth - 1) for v in x)
    elif isinstance(x, dict):
        inner = sorted(f"{signature(k, depth - 1)}={signature(v, depth - 1)}" for k, v in x.items())
    else:
        fields = {s: getattr(x, s) for s in schema_of(cls).saved_slots if hasattr(x, s)}
        fields.update(getattr(x, "__dict__", {}))
        inner = [f"{k}={signature(v, depth - 1)}" for k, v in fields.items()]
    return f"{name}({','.join(inner)})"


def pairs(vals, start=1):
    it = islice(vals, start, None)
    return zip(it, it)


def flat_items(d):
    out = []
    for k, v in d.items():
        out.append(k)
        out.append(v)
    return out


class ListAdapter(Adapter):
    reads_parts = False       # keeps references only
    name, types, mutable, has_fill = "builtins.list", (list,), True, True

    def parts(self, obj):
        return obj

    def allocate(self, rec):
        return []

    def fill(self, obj, vals):
        obj.extend(islice(vals, 1, None))

    def create(self, rec, vals):
        del vals[0]           # vals is the loader's own list: it becomes the list
        return vals


class TupleAdapter(Adapter):
    reads_parts = False       # keeps references only
    name, types, hash_kind = "builtins.tuple", (tuple,), 1

    def parts(self, obj):
        return obj

    def build(self, vals):
        return tuple(islice(vals, 1, None))


class DictAdapter(Adapter):
    reads_parts = False       # keeps references only
    name, mutable, has_fill = "builtins.dict", True, True
    types: tuple[type, ...] = (dict,)
    fill_finished: slice | None = slice(1, None, 2)   # the keys
    hashes = True
    factory: Callable[..., Any] = dict

    def parts(self, obj):
        return flat_items(obj)

    def allocate(self, rec):
        if len(rec) % 2 != 1:
            raise ValueError("a dict record holds key/value pairs")
        return self.factory()

    def fill(self, obj, vals):
        flood_checked(vals, 1, 2, "a dict")
        dict.update(obj, pairs(vals))

    def create_filled(self, rec, vals):
        if len(rec) % 2 != 1:
            raise ValueError("a dict record holds key/value pairs")
        flood_checked(vals, 1, 2, "a dict")
        return dict(pairs(vals))

    create: Callable[..., Any] | None = create_filled


class OrderedDictAdapter(DictAdapter):
    name, types, factory = "collections.OrderedDict", (collections.OrderedDict,), collections.OrderedDict
    create = None

    def fill(self, obj, vals):
        flood_checked(vals, 1, 2, "an OrderedDict")
        obj.update(pairs(vals))


class CounterAdapter(DictAdapter):
    name, types, factory = "collections.Counter", (collections.Counter,), collections.Counter
    create = None


class DefaultDictAdapter(DictAdapter):
    """Payload: default_factory, then keys and values."""
    name, types = "collections.defaultdict", (collections.defaultdict,)
    fill_finished = slice(2, None, 2)   # the keys, after the factory
    create, c_dealloc = None, True

    def parts(self, obj):
        return [obj.default_factory, *flat_items(obj)]

    def allocate(self, rec):
        if len(rec) % 2 != 0:
            raise ValueError("a defaultdict record holds a factory and key/value pairs")
        return collections.defaultdict()

    def fill(self, obj, vals):
        factory = vals[1]
        if factory is not None and not callable(factory):
            raise ValueError(f"a defaultdict factory must be callable, the save holds a "
                             f"{type(factory).__name__}")
        obj.default_factory = factory
        flood_checked(vals, 2, 2, "a defaultdict")
        dict.update(obj, pairs(vals, 2))


class SimpleNamespaceAdapter(DictAdapter):
    name, types = "types.SimpleNamespace", (pytypes.SimpleNamespace,)
    fill_finished, hashes, create = None, False, None
    factory = pytypes.SimpleNamespace

    def parts(self, obj):
        return flat_items(obj.__dict__)

    def fill(self, obj, vals):
        for k, v in pairs(vals):
            if type(k) is not str:
                raise ValueError("SimpleNamespace attribute names are strings")
            obj.__dict__[k] = v


class SetAdapter(Adapter):
    reads_parts = False       # keeps references only
    name, types, mutable, has_fill = "builtins.set", (set,), True, True
    fill_finished, hashes = slice(1, None), True

    def parts(self, obj):
        return ordered_members(obj)

    def allocate(self, rec):
        return set()

    def fill(self, obj, vals):
        flood_checked(vals, 1, 1, "a set")
        obj.update(islice(vals, 1, None))


class FrozenSetAdapter(Adapter):
    reads_parts = False       # keeps references only
    name, types = "builtins.frozenset", (frozenset,)
    build_finished, hashes = slice(1, None), True

    def parts(self, obj):
        return ordered_members(obj)

    def build(self, vals):
        flood_checked(vals, 1, 1, "a frozenset")
        return frozenset(islice(vals, 1, None))


class ByteArrayAdapter(Adapter):
    name, types, mutable, has_fill = "builtins.bytearray", (bytearray,), True, True

    def parts(self, obj):
        return [bytes(obj)]

    def allocate(self, rec):
        if len(rec) != 2 or type(rec[1]) is not bytes:
            raise ValueError("a bytearray record holds one bytes value")
        return bytearray(rec[1])

    def fill(self, obj, vals):
        pass  # contents came with allocate: bytes never reference anything


class DequeAdapter(Adapter):
    """Payload: maxlen, then the items."""
    reads_parts = False       # keeps references only
    name, types, mutable, has_fill = "collections.deque", (collections.deque,), True, True
    c_dealloc = True

    def parts(self, obj):
        return [obj.maxlen, *obj]

    def allocate(self, rec):
        maxlen = rec[1]
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise ValueError("a deque's maxlen must be None or a non-negative int")
        return collections.deque(maxlen=maxlen)

    def fill(self, obj, vals):
        obj.extend(islice(vals, 2, None))


for _adapter in (ListAdapter, TupleAdapter, DictAdapter, OrderedDictAdapter, CounterAdapter,
                 DefaultDictAdapter, SimpleNamespaceAdapter, SetAdapter, FrozenSetAdapter,
                 ByteArrayAdapter, DequeAdapter):
    register_adapter(_adapter())
