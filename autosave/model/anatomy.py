"""What an object is made of: the one description every tool that takes an object apart
reads.

The save's walk (``saving/walk.py``), the canonical order of set members
(``saving/order.py``, whose digests must cover exactly what is saved) and the error
paths and structural index (``saving/paths.py``) all need an object's parts. Each
once enumerated them itself, and the copies drifted: the paths' copy kept transient
fields, so what a transient field held changed the order of set members and the bytes.
Here, once:

* ``kind_of`` (``dispatch``) says which kind of saver a class gets;
* for a class instance (layouts ``slots``, ``dict``, ``fields``, ``extends``),
  ``instance_parts`` gives the saved values in record order -- saved slots (``ABSENT``
  for an unset one), ``__dict__`` minus transient fields, then the builtin base's
  payload -- and ``instance_labels`` the names of the same positions;
* ``labelled_parts`` gives every kind's (label, value) pairs, in the walk's order.

Generated code (codegen/emit.py) writes the same order per layout; the differential
tests hold it to these bytes.
"""

from __future__ import annotations

import copyreg
import reprlib
import sys
import types
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .adapters.callables import FUNCTION, REDUCE
from .adapters.containers import flat_items
from .adapters.exceptions import EXCEPTION
from .adapters.weak import WeakAdapter
from ..format.wire import ABSENT, INLINE_TYPES
from . import dispatch
from .registry import REGISTRY
from .schema import ClassSchema

INSTANCE_LAYOUTS = frozenset(("slots", "dict", "fields", "extends"))

Order = Callable[[Any], Iterable[Any]]     # a set's members -> their canonical order

Labelled = Iterator[tuple[str, Any]]


def instance_parts(schema: ClassSchema, obj: Any, order: Order | None = None) -> list[Any]:
    """The values a record of ``obj`` holds, in record order. ``order``: how a set
    base's members are ordered (the save's canonical order); None leaves them as
    iterated, for a digest that sorts them itself (``base_starts``)."""
    values: list[Any] = []
    for name in schema.saved_slots:
        try:
            values.append(object.__getattribute__(obj, name))
        except AttributeError:
            values.append(ABSENT)
    if schema.has_dict:
        d = obj.__dict__
        if schema.transient:
            skip = schema.transient
            values.extend(v for k, v in d.items() if k not in skip)
        else:
            values.extend(d.values())
    if schema.base is not None:
        values.extend(base_payload(schema.base, obj, order))
    return values


def base_payload(base: type, obj: Any, order: Order | None) -> Iterable[Any]:
    """What an instance of a builtin's subclass holds as that builtin."""
    if base is list or base is tuple:
        return base.__iter__(obj)
    if base is deque:
        return [obj.maxlen, *deque.__iter__(obj)]
    if base is dict:
        return flat_items(dict(dict.items(obj)))
    if base is set or base is frozenset:
        members = base.__iter__(obj)
        return members if order is None else order(base(members))
    if base is str:
        return [str.__getitem__(obj, slice(None))]
    if base is int:
        return [int.__int__(obj)]
    if base is float:
        return [float.__float__(obj)]
    return [bytes.__bytes__(obj)]


def instance_labels(schema: ClassSchema, obj: Any) -> list[str]:
    """The names of ``instance_parts``' positions, as an object path spells them."""
    labels = [f".{name}" for name in schema.saved_slots]
    if schema.has_dict:
        skip = schema.transient
        labels.extend(f".{k}" for k in obj.__dict__ if k not in skip)
    base = schema.base
    if base is None:
        return labels
    if base is dict:
        for i, k in enumerate(dict.keys(obj)):
            labels.append(f"<key {i}>")
            labels.append(item_label(k))
    elif base is set or base is frozenset:
        labels.extend(f"<member {i}>" for i in range(base.__len__(obj)))
    elif base is deque:
        labels.append(".maxlen")
        labels.extend(f"[{i}]" for i in range(deque.__len__(obj)))
    elif base is list or base is tuple:
        labels.extend(f"[{i}]" for i in range(base.__len__(obj)))
    else:
        labels.append(f"<{base.__name__}>")
    return labels


def item_label(key: Any) -> str:
    # reprlib: a key nested thousands deep has a repr Python cannot make
    return f"[{key!r}]" if key.__class__ in INLINE_TYPES else f"[{reprlib.repr(key)}]"


def labelled_parts(obj: Any, made: dict[int, Any] | None = None,
                   kinds: dict[type, tuple[str, Any]] | None = None) -> Labelled:
    """(label, value) of each part the walk saves of ``obj``, by ``dispatch.kind_of``:
    exactly the values its record holds (the objects a record refers to are its
    children), each with the label an object path spells it by.

    ``made``: what the walk's user code gave it (``Walker.made``: a ``__getstate__``
    value, a reduce record's parts) by id; given it, such an object's parts are read from
    there, or none if the walk did not ask (user code runs once per save). Without it
    they are asked for. ``kinds``: a cache of ``kind_of`` by class."""
    cls = obj.__class__
    if cls in REGISTRY.asset_classes and id(obj) in REGISTRY.asset_id_of:
        return                      # saved as its id
    if kinds is None:
        kind, detail = dispatch.kind_of(cls)
    else:
        found = kinds.get(cls)
        if found is None:
            found = kinds[cls] = dispatch.kind_of(cls)
        kind, detail = found
    if kind in INSTANCE_LAYOUTS:
        yield from zip(instance_labels(detail, obj), instance_parts(detail, obj))
    elif kind == dispatch.ADAPTER:
        yield from _adapter_parts(detail, obj)
    elif kind == dispatch.FUNCTION:
        if not function_by_name(obj):
            yield from zip(FUNCTION_LABELS, FUNCTION.parts(obj))
    elif kind == dispatch.EXCEPTION:
        yield from _numbered(EXCEPTION.parts(obj))
    elif kind == "state":
        given = made.get(id(obj), ABSENT) if made is not None else obj.__getstate__()
        if given is not ABSENT and given is not None:
            yield ".<state>", given
    elif kind == "reduce":
        yield from _reduce_parts(obj, made)
    elif kind == "enum":
        if not enum_by_name(obj):
            yield ".<value>", obj._value_
    # global, builtin-function, unsaveable, c-object: no parts


FUNCTION_LABELS = (".__module__", ".__qualname__", ".<code>", ".__name__", ".__defaults__",
                   ".__kwdefaults__", ".__closure__", ".__dict__")
REDUCE_LABELS = (".<reconstructor>", ".<newobj>", ".<args>", ".<state>", ".<items>",
                 ".<dict items>")
_SEQUENCES = (list, tuple, deque)


def function_by_name(fn: types.FunctionType) -> bool:
    """Whether a function is saved by its name (its module holds it there) rather than
    by its parts (code identity, closure, defaults)."""
    qualname = fn.__qualname__
    if "<" in qualname:
        return False
    target: Any = sys.modules.get(fn.__module__)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target is fn


def enum_by_name(member: Any) -> bool:
    """Whether an enum member is saved by its name (a member of its class by it)."""
    name = member._name_
    return name is not None and member.__class__.__members__.get(name) is member


def _numbered(parts: Iterable[Any]) -> Labelled:
    return ((f".<part {i}>", p) for i, p in enumerate(parts))


def _adapter_parts(adapter: Any, obj: Any) -> Labelled:
    cls = obj.__class__
    if cls is dict:
        for i, (k, v) in enumerate(dict.items(obj)):
            yield f"<key {i}>", k
            yield item_label(k), v
    elif cls in _SEQUENCES:
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))
    elif cls is set or cls is frozenset:
        yield from ((f"<member {i}>", v) for i, v in enumerate(obj))
    elif hasattr(adapter, "save_record") or isinstance(adapter, WeakAdapter):
        # a record per kind (numpy arrays) or entries decided by the whole walk (weak
        # containers): no fixed parts to show
        return
    else:
        parts = adapter.parts(obj)
        labels = getattr(adapter, "labels", None)
        yield from (zip(labels(parts), parts) if labels is not None else _numbered(parts))


def _reduce_parts(obj: Any, made: dict[int, Any] | None) -> Labelled:
    if made is None:
        rv = reduce_value(obj)
        parts = None if isinstance(rv, str) else REDUCE.parts_of(obj, rv)
    else:
        # the walk keeps a reduce record's parts: its items, read once, are in them
        parts = made.get(id(obj))
    if parts.__class__ is list:
        yield from zip(REDUCE_LABELS, parts)


def reduce_value(obj: Any) -> Any:
    reducer = copyreg.dispatch_table.get(obj.__class__)   # as pickle honours it
    return reducer(obj) if reducer is not None else obj.__reduce_ex__(4)
