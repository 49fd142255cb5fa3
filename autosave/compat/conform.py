"""A loaded graph held to the classes as they are now: `compat verify`'s type check.

It runs on the objects a load built, so upgrade hooks have run: a hook that forgets
to convert a field (``dict[str, int]`` -> ``dict[str, str]``) is caught, not trusted.
Declared types are checked into containers (``list[X]``, ``dict[K, V]``, ``tuple[...]``,
unions); an attribute a plain class's ``__init__`` sets that a loaded instance lacks is
reported too (loads never run ``__init__``). The walk is iterative and visits every
object once.
"""

import collections
import collections.abc
import dataclasses
import enum
import types
import typing

import attrs

from ..coroutines.runtime import Coroutine
from ..model.registry import REGISTRY
from ..model.schema import schema_of
from .plain import init_attributes

CONTAINERS = (list, tuple, set, frozenset, collections.deque)
_UNKNOWN = object()


def _hints(cls, cache):
    found = cache.get(cls)
    if found is None:
        try:
            found = typing.get_type_hints(cls)
        except Exception:          # unresolvable annotations: nothing to hold them to
            found = {}
        found = {k: v for k, v in found.items() if typing.get_origin(v) is not typing.ClassVar
                 and v is not typing.ClassVar}
        cache[cls] = found
    return found


def conforms(value, hint) -> bool:
    """Whether ``value`` is of the declared type ``hint``, containers included; a hint
    this check cannot read (a TypeVar, a string, a Protocol...) accepts anything."""
    todo = [(value, hint)]
    while todo:
        value, hint = todo.pop()
        verdict = _shallow(value, hint, todo)
        if verdict is False:
            return False
    return True


def _shallow(value, hint, todo):
    if hint is typing.Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or isinstance(hint, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is typing.Annotated:
        todo.append((value, args[0]))
        return True
    if origin is None:
        if not isinstance(hint, type):
            return True
        if isinstance(value, hint):
            return True
        return (hint is float and type(value) in (int, bool)) or \
            (hint is complex and type(value) in (int, bool, float))
    if not isinstance(origin, type):
        return True
    if not isinstance(value, origin):
        return False
    if not args:
        return True
    if issubclass(origin, collections.abc.Mapping) and len(args) == 2:
        for k, v in value.items():
            todo.append((k, args[0]))
            todo.append((v, args[1]))
    elif origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            todo.extend((v, args[0]) for v in value)
        elif len(args) != len(value):
            return False
        else:
            todo.extend(zip(value, args))
    elif issubclass(origin, collections.abc.Iterable) and len(args) == 1 and \
            isinstance(value, CONTAINERS):
        todo.extend((v, args[0]) for v in value)
    return True


def _fields(obj, schema):
    """(name, value or _UNKNOWN) of an instance's saved fields."""
    out = []
    for name in schema.saved_slots:
        out.append((name, getattr(obj, name, _UNKNOWN)))
    if schema.has_dict:
        d = object.__getattribute__(obj, "__dict__")
        out.extend((k, v) for k, v in d.items() if k not in schema.transient)
        for name in schema.declared:
            if name not in d and name not in schema.saved_slots and \
                    name not in schema.transient:
                out.append((name, _UNKNOWN))
    return out


def _judged(cls):
    return (isinstance(cls, type) and REGISTRY.is_allowed_module(cls.__module__)
            and not issubclass(cls, (enum.Enum, BaseException, type)))


def _plain(cls, schema):
    return (schema.has_dict and not schema.declared and not attrs.has(cls)
            and not dataclasses.is_dataclass(cls))


def problems(root, limit=5) -> list[str]:
    """What in the graph of ``root`` does not fit the current classes (at most ``limit``)."""
    out: list[str] = []
    seen: set[int] = set()
    todo = [root]
    hints_cache: dict = {}
    init_cache: dict = {}
    while todo and len(out) < limit:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        cls = type(obj)
        if isinstance(obj, dict):
            todo.extend(obj.keys())
            todo.extend(obj.values())
        if isinstance(obj, CONTAINERS):
            todo.extend(obj)
        if isinstance(obj, Coroutine):
            todo.extend(v for v in vars(obj).values())
            continue
        if not _judged(cls) or cls in (dict, list, tuple, set, frozenset):
            continue
        try:
            schema = schema_of(cls)
        except Exception:
            continue
        if schema.strategy not in ("instance", "state"):
            continue
        hints = _hints(cls, hints_cache)
        for name, value in _fields(obj, schema):
            if value is _UNKNOWN:
                if name in schema.declared:
                    out.append(f"{schema.name}.{name} has no value after the load")
                continue
            todo.append(value)
            hint = hints.get(name)
            if hint is not None and not conforms(value, hint):
                out.append(f"{schema.name}.{name} holds {_short(value)} where "
                           f"{_hint_text(hint)} is declared")
        if _plain(cls, schema):
            attrs_ = init_cache.get(cls)
            if attrs_ is None:
                attrs_ = init_cache[cls] = init_attributes(cls).names
            d = object.__getattribute__(obj, "__dict__")
            for name in attrs_:
                if name not in d and name not in schema.transient and \
                        not any(name in k.__dict__ for k in cls.__mro__):
                    out.append(f"{schema.name}.{name} is set by __init__, which loads never "
                               f"run; the loaded instance lacks it")
                    break
    return out[:limit]


def _short(value):
    text = repr(value)
    return f"{type(value).__qualname__} {text if len(text) <= 60 else text[:57] + '...'}"


def _hint_text(hint):
    return hint.__qualname__ if isinstance(hint, type) else str(hint)
