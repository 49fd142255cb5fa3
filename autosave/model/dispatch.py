"""Which saver a class gets: one fixed lookup order, as pickle's dispatch has.

1. ``adapter``           a builtin adapter for exactly this type (containers, the
                         datetime family, Decimal, iterators, weak containers...)
2. ``function``          a Python function (by name if it has one, else its parts)
3. ``global``            a class, saved by name
4. ``builtin-function``  a C function or a bound C method
5. ``unsaveable``        generators, frames, modules, open files and other handles:
                         refused, with what to do instead
6. ``exception``         an exception instance
7. the class's own layout, decided once by its schema (``ClassSchema.layout``:
   enum, reduce, state, slots, dict, fields, extends, c-object)

Registered assets are a property of instances, not classes: the saver checks them
before it asks here. What an object of each kind is made of is then ``anatomy``'s, which
the saver (``walk``), the canonical order of sets (``order``) and the object paths of
errors (``paths``) all read, so they cannot disagree about it.
"""

import itertools
import types

from .adapters import ADAPTERS_BY_TYPE
from .adapters.base import ON_REGISTER
from .registry import REGISTRY
from .advice import Unsaveable
from .schema import schema_of

ADAPTER, FUNCTION, GLOBAL, BUILTIN_FUNCTION = "adapter", "function", "global", "builtin-function"
UNSAVEABLE, EXCEPTION = "unsaveable", "exception"

# Subclasses of the handle types (files, sockets...) are looked up too: advice.py
UNSAVEABLE_TYPES = Unsaveable({
    types.GeneratorType: "a plain generator; decorate its function with @autosave.coroutine "
                         "to make it saveable, or mark the field autosave.transient",
    types.CoroutineType: "an async coroutine; autosave saves @autosave.coroutine generators, "
                         "not async functions; mark the field autosave.transient",
    types.AsyncGeneratorType: "an async generator; mark the field autosave.transient",
    types.FrameType: "a frame object; mark the field autosave.transient",
    types.TracebackType: "a traceback; mark the field autosave.transient",
    types.ModuleType: "a module; keep module references out of saved state or mark the "
                      "field autosave.transient",
    types.CodeType: "a code object; save the function instead",
    # CPython offers no way to set its state: rebuilding one would advance its source
    itertools.pairwise: "an itertools.pairwise, whose state cannot be restored without "
                        "advancing its source; save zip(a, b) over a, b = "
                        "itertools.tee(source) with next(b, None) instead (docs/types.md), "
                        "or mark the field autosave.transient",
})


# kind_of's answers, per class: what it reads is the adapters (a new one drops them all),
# the class's schema (cached the same way, dropped with it when the class is registered
# again) and the class's bases, which a class statement fixes.
_KINDS: dict[type, tuple] = {}


def _forget_kinds(*_):
    _KINDS.clear()


ON_REGISTER.append(_forget_kinds)
REGISTRY.class_changed.append(_forget_kinds)


def kind_of(cls):
    """(kind, detail) of a class: the adapter, the refusal's reason, or the schema."""
    found = _KINDS.get(cls)
    if found is None:
        found = _KINDS[cls] = _kind_of(cls)
    return found


def _kind_of(cls):
    adapter = ADAPTERS_BY_TYPE.get(cls)
    if adapter is not None:
        return ADAPTER, adapter
    if cls is types.FunctionType:
        return FUNCTION, None
    if issubclass(cls, type):
        return GLOBAL, None
    if cls is types.BuiltinFunctionType:
        return BUILTIN_FUNCTION, None
    reason = UNSAVEABLE_TYPES.get(cls)
    if reason is not None:
        return UNSAVEABLE, reason
    if issubclass(cls, BaseException):
        return EXCEPTION, None
    schema = schema_of(cls)
    return schema.layout, schema
