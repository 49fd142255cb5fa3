"""What a load may call: the one registry of reconstructors (docs/security.md).

pickle's ``copyreg`` says how to take a class apart; this says, the other way round,
which callables a load may call with arguments from a file, and what those arguments
must be. A ``__reduce__`` record names a callable; the load looks it up here, runs the
entry's check on the arguments, and only then calls it. Entries come from code only:

* autosave's own (``operator`` getters, builtin value types from plain values, and the
  adapters of third-party packages: pandas, ``numpy.ma``, mesa's grid cells);
* ``autosave.reconstructor(func, check=..., callables=...)``, for a game or library;
* a class whose ``__reduce__`` / ``__reduce_ex__`` is Python code of the game's own
  packages (those defining ``@save_root`` / ``@saveable`` classes; the class or such a
  base defines it): the game wrote the constructor to take what its reduce gives.

Everything else a save names is refused: a class trusted only through its package is
allocated and filled (``cls.__new__`` and its state), never called with arguments.

Whatever the entry, the arguments, a ``__setstate__`` state and the items handed to a
class's own ``extend`` / ``__setitem__`` are *inert*: built of plain values and
containers and objects of the game, with no lazy iterator whose iteration would call
something (``map``, ``filter``, ``itertools.starmap``, a coroutine...) and, in
arguments, no callable unless the entry names the position. The save side asks the
same questions (``check_reduce``), so a game learns at save time what a load would
refuse, with the fix.
"""

from __future__ import annotations

import collections
import itertools
import types
from contextvars import ContextVar
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..errors import FormatError, SaveError, UntrustedTypeError
from ..checks.loadcheck import class_attribute
from .registry import REGISTRY, stable_name

_F = TypeVar("_F", bound=Callable[..., Any])
ArgsCheck = Callable[[tuple[Any, ...]], None]


class Reconstructor:
    """A callable a load may call, the check its arguments pass first, and the argument
    positions that may hold callables (all others must be inert)."""

    __slots__ = ("func", "check", "callables", "source")

    def __init__(self, func: Callable[..., Any], check: ArgsCheck | None,
                 callables: Iterable[int] = (), source: str = "registered") -> None:
        self.func = func
        self.check = check
        self.callables = frozenset(callables)
        self.source = source

    def __repr__(self) -> str:
        return f"<reconstructor {_name(self.func)} ({self.source})>"


_ENTRIES: dict[int, Reconstructor] = {}     # id(func) -> entry; never hashes file data
_BY_NAME: dict[str, Callable[..., Any]] = {}  # stable name -> a registered callable


def register(func: Callable[..., Any], check: ArgsCheck | None = None, *,
             callables: Iterable[int] = (), source: str = "registered") -> None:
    """Let a load call ``func`` on a reduce record's arguments once ``check(args)``
    accepted them (it raises to refuse). Argument positions in ``callables`` may hold a
    callable; every other argument must be inert data."""
    if not callable(func):
        raise TypeError(f"a reconstructor is a callable, got {type(func).__name__}")
    positions = tuple(callables)
    if not all(type(p) is int and p >= 0 for p in positions):
        raise ValueError("callables= lists argument positions (ints >= 0)")
    _ENTRIES[id(func)] = Reconstructor(func, check, positions, source)
    if source == "registered":
        # a save names it, and a load finds it by that name without trusting its
        # package: registering it is the one step that makes it loadable
        _BY_NAME[stable_name(func)] = func


def unregister(func: Callable[..., Any]) -> None:
    entry = _ENTRIES.get(id(func))
    if entry is not None and entry.func is func:
        del _ENTRIES[id(func)]
        if _BY_NAME.get(stable_name(func)) is func:
            del _BY_NAME[stable_name(func)]


def named(name: str) -> Callable[..., Any] | None:
    """The callable registered under this stable name (``module.QualName``), or None."""
    return _BY_NAME.get(name) if type(name) is str else None


def reconstructor(func: _F | None = None, *, check: ArgsCheck | None = None,
                  callables: Iterable[int] = ()) -> Any:
    """Let a load call ``func`` (a class or function) with the arguments a
    ``__reduce__`` gives it. ``check(args)`` runs first and raises to refuse;
    ``callables`` names the argument positions that may hold a callable. Use it as
    ``autosave.reconstructor(func, ...)`` or as a decorator."""
    if func is None:
        def decorate(f: _F) -> _F:
            register(f, check, callables=callables)
            return f
        return decorate
    register(func, check, callables=callables)
    return func


def entry_for(func: Any, newobj: bool, nargs: int) -> Reconstructor | None:
    """The entry a reduce record's callable loads through: a registered one, a class's
    own Python ``__reduce__``, or None for a trusted class allocated with no arguments
    (``copyreg.__newobj__`` of nothing: ``cls.__new__(cls)``). UntrustedTypeError for
    anything else."""
    entry = _ENTRIES.get(id(func))
    if entry is not None and entry.func is func:
        return entry
    if isinstance(func, type) and REGISTRY.is_allowed_module(func.__module__):
        if newobj and nargs == 0:
            return None
        base = value_base(func)
        if base is not None:
            return Reconstructor(func, _ENTRIES[id(base)].check, (), f"{base.__name__}'s")
        definer = own_reduce(func)
        if definer is not None:
            return Reconstructor(func, None, (), f"{_name(definer)}.__reduce__")
        raise UntrustedTypeError(
            f"the save asks to construct {_name(func)} with arguments; its package is "
            f"trusted, but no reconstructor is registered for the class and it is not a "
            f"class of the game's own whose __reduce__ is Python code, so a load only "
            f"allocates and fills it "
            f"(register one with autosave.reconstructor({_name(func)}) if its "
            f"constructor is safe on data from a file)")
    raise UntrustedTypeError(
        f"the save asks to call {_name(func)}, which is not a registered reconstructor "
        f"(docs/security.md: a load calls only those, after checking their arguments)")


_VALUE_TYPES = (complex, float, int, str, bytes)


def value_base(cls: type) -> type | None:
    """The builtin value type a trusted class is built as, when constructing it runs
    only that type's C code (no ``__new__`` or ``__init__`` of its own or a base's):
    a ``complex`` subclass is made from numbers as ``complex`` is, under its entry's
    check."""
    for base in _VALUE_TYPES:
        if issubclass(cls, base) and base is not bool:
            if (class_attribute(cls, "__new__") is vars(base)["__new__"]
                    and class_attribute(cls, "__init__") in (object.__init__,
                                                             vars(base).get("__init__"))):
                entry = _ENTRIES.get(id(base))
                return base if entry is not None and entry.func is base else None
            return None
    return None


def own_reduce(cls: type) -> type | None:
    """The class of ``cls``'s MRO that defines its ``__reduce_ex__``/``__reduce__``,
    if that is Python code of the game's own packages (those defining saveable
    classes); else None: ``object``'s, ``list``'s, a C base's, or a library's. A
    library's ``__reduce__`` may name a helper rather than the class (networkx's
    ``Config`` does), so its constructors are not written for a file's arguments: a
    library's classes are constructible through registered entries only."""
    for klass in cls.__mro__:
        d = vars(klass)
        found = d.get("__reduce_ex__", d.get("__reduce__"))
        if found is None:
            continue
        if (type(found) is types.FunctionType
                and REGISTRY.is_game_module(getattr(found, "__module__", None))
                and REGISTRY.is_game_module(klass.__module__)):
            return klass
        return None
    return None


# -- inert data --------------------------------------------------------------------------

def _passive_iterator_types() -> frozenset[type]:
    """Iterators whose iteration runs no code but reading their own container."""
    samples: list[Any] = [iter([]), iter(()), iter(""), iter("\u20ac"), iter(b""),
                          iter(bytearray()), reversed([]), iter(range(0)),
                          iter(range(1 << 70)), iter({}), iter({}.values()),
                          iter({}.items()), iter(set()), reversed({}),
                          reversed({}.values()), reversed({}.items()), itertools.count(),
                          itertools.repeat(None), iter(collections.deque()),
                          reversed(collections.deque())]
    return frozenset(map(type, samples))


PASSIVE_ITERATORS = _passive_iterator_types()
_PLAIN_VALUES = frozenset((str, int, float, bool, bytes, type(None), complex))
_CONTAINERS = frozenset((list, tuple, dict, set, frozenset))


def is_lazy(value: Any) -> bool:
    """An iterator whose iteration may call code other than its container's: ``map``,
    ``filter``, ``zip``/``enumerate``/``itertools`` over such, a coroutine..."""
    t = type(value)
    return (t not in PASSIVE_ITERATORS and not isinstance(value, type)
            and class_attribute(t, "__next__") is not None)


# The containers a load has found inert so far, by id: length when checked (one table
# for checks that allow callables, one for those that do not). Set by load_records.
CHECKED: ContextVar[dict[bool, dict[int, int]] | None] = ContextVar("inert_checked",
                                                                     default=None)


def check_inert(value: Any, what: str, callables: bool = False) -> None:
    """Refuse a lazy iterator (and, unless ``callables``, a callable) in ``value`` or in
    the plain containers it holds, before trusted code gets it and may iterate or call
    it. Objects of other types are data: their contents are not the code's arguments."""
    todo = [value]
    memo = CHECKED.get()
    seen: dict[int, int] = {} if memo is None else memo[callables]
    while todo:
        v = todo.pop()
        t = type(v)
        if t in _PLAIN_VALUES:
            continue
        if t in _CONTAINERS:
            # Within one load the containers are filled once and stay alive, so one
            # checked at its present length needs no second look: many records sharing
            # one big list cost one pass over it, not one each.
            if seen.get(id(v)) == len(v):
                continue
            seen[id(v)] = len(v)
            if t is dict:
                todo.extend(v.keys())
                todo.extend(v.values())
            else:
                todo.extend(v)
            continue
        if is_lazy(v):
            raise FormatError(
                f"{what} holds a lazy {t.__name__} iterator, which would run code when "
                f"iterated; a load hands trusted code inert data only")
        if not callables and (isinstance(v, type) or callable(v)):
            raise FormatError(
                f"{what} holds a callable ({t.__name__}); a load calls a constructor on "
                f"inert data only, unless its reconstructor names that argument position")


def check_state(cls: type, state: Any) -> None:
    """Refuse at save time a state a load would not hand to ``cls.__setstate__``."""
    if class_attribute(cls, "__setstate__") is None:
        return                   # applied to the instance dict: no code reads it
    try:
        check_inert(state, f"the state {cls.__qualname__}.__getstate__ gives",
                    callables=True)
    except FormatError as e:
        raise SaveError(
            f"{e}; keep iterators in fields a load fills itself (drop "
            f"{cls.__qualname__}'s own __getstate__/__setstate__, or leave them out of "
            f"its state), or mark the field autosave.transient") from None


def check_arguments(entry: Reconstructor | None, args: tuple[Any, ...], what: str) -> None:
    """The checks a reduce record's arguments pass before its callable is called."""
    if entry is None:
        return
    for i, arg in enumerate(args):
        check_inert(arg, f"{what} argument {i}", callables=i in entry.callables)
    if entry.check is not None:
        entry.check(args)


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
