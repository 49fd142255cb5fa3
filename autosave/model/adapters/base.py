"""The adapter protocol and the dispatch tables keyed by type and by stable name."""

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ...errors import FormatError


class _Lazy(dict):
    """A dispatch table that registers the adapters of an optional package (numpy,
    pygame) the first time a lookup misses after the game imported that package.

    Adapters for optional packages live in autosave's own modules, imported with
    autosave; they never import the package themselves, so a load imports nothing:
    a package the game did not import has no adapters, and no save can ask for it.
    """

    def get(self, key, default=None):
        found = dict.get(self, key, _MISSING)
        if found is _MISSING:
            if not (PENDING and activate_pending()):
                module = PENDING_NAMES.get(key) if type(key) is str else None
                if module is not None and module in PENDING:
                    from ...errors import IncompatibleSaveError
                    raise IncompatibleSaveError(
                        f"the save holds a {key}, and {module} is not imported; a load "
                        f"imports nothing: import {module} before loading")
                return default
            found = dict.get(self, key, default)
        return found


_MISSING = object()

ADAPTERS_BY_TYPE = _Lazy()   # exact Python type -> adapter (save side)
ADAPTERS_BY_NAME = _Lazy()   # stable type name -> adapter (load side)

# module name -> function registering its adapters, run once that module is imported
PENDING: dict[str, Callable[[], Any]] = {}
PENDING_NAMES: dict[str, str] = {}           # record type name -> the module its adapter waits for
ON_REGISTER: list[Callable[[], Any]] = []             # callbacks dropping caches derived from the tables

ALL = slice(1, None)


def when_imported(module, register, names=()):
    """Run ``register()`` as soon as ``module`` is in sys.modules (now, if it is).
    ``names``: the record types it registers, for an honest error meanwhile."""
    PENDING_NAMES.update(dict.fromkeys(names, module))
    if module in sys.modules:
        register()
    else:
        PENDING[module] = register


def activate_pending():
    """Register the adapters of every pending package imported since; True if any."""
    ready = [m for m in PENDING if m in sys.modules]
    for module in ready:
        PENDING.pop(module)()
    return bool(ready)


class Adapter:
    """How one kind of object is taken apart and made again: autosave's own types, and
    (unstable: docs/types.md) a game's. Besides the calls below, the class attributes
    are the load's scheduling facts, read once per adapter into a
    ``loading.protocol.Schedule``, whose fields say what each means."""
    name: str = ""            # stable type name in the save's type table
    types: tuple[type, ...] = ()   # exact types this adapter saves
    mutable: bool = False
    has_fill: bool = False
    build_slice: slice = ALL  # payload the build step needs built
    build_finished: slice | None = None   # payload whose objects must be filled before build
    fill_finished: slice | None = None    # payload whose objects must be filled before fill
    hashes = False            # ...because it hashes them (keys, members), rather than
                              # reading their contents (__setstate__, keyword arguments)
    deep = False              # build or fill runs code that may read anything the parts
                              # reach (a __setstate__, a constructor): it waits for all
                              # of it to be done, as pickle's order gives it
    reads_parts = True        # build or fill may read what the parts hold (a load holds
                              # it back until the batch objects are filled); containers
                              # that only keep references say False
    shallow = False           # fill_finished parts need only be filled themselves, not
                              # what they reach (a list iterator reads its list's length)
    create: Callable[..., Any] | None = None
                              # optional fn(rec, vals) -> filled object: allocate and fill
                              # in one step, used when nothing about the record must wait
    has_loaded_hook = False
    c_dealloc: bool | int = False   # CPython frees it by unchecked C recursion (autosave.checks.limits);
                              # an int: the C stack a level takes, in deque levels
    hash_kind = 0             # 0: hashing it visits nothing else; 1: hashes its parts by
                              # unchecked C recursion; 2: hashes its parts otherwise

    def parts(self, obj: Any) -> list[Any]:
        """The record payload of ``obj``: values and objects, in order."""
        raise NotImplementedError

    def allocate(self, rec: list[Any]) -> Any:
        """An empty object for record ``rec``, filled later by ``fill`` (has_fill)."""
        raise NotImplementedError

    def build(self, vals: list[Any]) -> Any:
        """The object of a record whose built values are ``vals`` (``vals[0]`` is the
        type index, the parts follow)."""
        raise NotImplementedError

    def fill(self, obj: Any, vals: list[Any]) -> None:
        """Complete an object ``allocate`` made, from the record's built values."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<adapter {self.name}>"


_A = TypeVar("_A", bound=Adapter)


def register_adapter(adapter: _A) -> _A:
    """Make ``adapter`` save its ``types`` and load records named ``adapter.name``."""
    if dict.get(ADAPTERS_BY_NAME, adapter.name) is not None:
        raise ValueError(f"an adapter named {adapter.name!r} already exists")
    ADAPTERS_BY_NAME[adapter.name] = adapter
    for t in adapter.types:
        ADAPTERS_BY_TYPE[t] = adapter
    for callback in ON_REGISTER:
        callback()
    return adapter


class BatchOnlyPlan:
    """The load plan of a type entry that only batches use (coroutines' loop iterators,
    small numpy arrays and scalars): its objects are made by ``build_batch``, and a
    record naming the entry is refused, whichever step of the load reaches it. The
    scheduling facts are a batch object's: made before any record, nothing filled
    later."""
    name: str
    mutable, has_fill, has_loaded_hook, reads_parts, hashes = False, False, False, False, False
    build_finished = fill_finished = None

    def build(self, vals: Any) -> Any:
        raise FormatError(f"a {self.name} record names the type entry of a batch")

    allocate = build

    def fill(self, obj: Any, vals: Any) -> None:
        self.build(vals)
