"""Which classes, functions and assets exist, their stable names, trust and versions.

A save refers to classes and functions by *stable name*: ``@saveable(name=...)`` when
given, else ``module.QualName``. Loading resolves names back to objects only inside the
allowed namespaces: packages that define ``@save_root``/``@saveable`` classes, packages
named with ``allow()``, and the built-in adapters. Nothing outside them is ever imported.
"""

import collections  # noqa: F401  (every SAFE_STDLIB_NAMES module is imported here:
import math         # noqa: F401   a load resolves names in sys.modules, never imports)
import operator     # noqa: F401
import random       # noqa: F401
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, overload

from ..errors import IncompatibleSaveError, SaveError, UntrustedTypeError

# Pure functions and plain classes of the standard library a save may refer to by name
# (sort keys, defaultdict factories, partial targets). A save never calls them itself
# (see ReduceAdapter.build); when the game does, they cannot touch the
# outside world.
SAFE_STDLIB_NAMES = frozenset(
    [f"builtins.{n}" for n in (
        "abs all any ascii bin bool bytes callable chr complex dict divmod enumerate "
        "filter float format frozenset hash hex id int isinstance issubclass iter len "
        "list map max min next object oct ord pow range repr reversed round set slice "
        "sorted str sum tuple zip bytearray"
    ).split()]
    + [f"math.{n}" for n in (
        "ceil floor sqrt sin cos tan atan2 hypot exp log log2 log10 fabs copysign "
        "isclose isfinite isinf isnan radians degrees dist prod fsum trunc gcd lcm"
    ).split()]
    + [f"operator.{n}" for n in (
        "add sub mul truediv floordiv mod neg pos abs eq ne lt le gt ge not_ truth "
        "and_ or_ xor invert index getitem contains concat is_ is_not lshift rshift"
    ).split()]
    + ["random.Random", "collections.OrderedDict", "collections.Counter",
       "collections.deque", "collections.defaultdict",
       "operator.itemgetter", "operator.attrgetter", "operator.methodcaller"]
)


def _top(module_name):
    return module_name.partition(".")[0]


class _Tracked:
    """Mixin of the registry's tables: every change to one bumps its registry's
    ``changes``, whoever makes it (the decorators, or a test discarding a namespace
    from ``allowed``), so that what a load decided from them (``loading.plans``'
    cache) is never used once they differ."""
    owner: "Registry | None" = None


def _tracking(base, mutators):
    def wrap(name):
        method = getattr(base, name)

        def tracked(self, *args, **kwargs):
            result = method(self, *args, **kwargs)
            owner = self.owner
            if owner is not None:
                owner.changed()
            return result
        tracked.__name__ = name
        return tracked

    return type(f"Tracked{base.__name__.capitalize()}", (_Tracked, base),
                {name: wrap(name) for name in mutators})


TrackedDict = _tracking(dict, ("__setitem__", "__delitem__", "pop", "popitem", "clear",
                               "update", "setdefault", "__ior__"))
TrackedSet = _tracking(set, ("add", "discard", "remove", "pop", "clear", "update",
                             "difference_update", "intersection_update",
                             "symmetric_difference_update", "__ior__", "__iand__",
                             "__isub__", "__ixor__"))


class Registry:
    """Process-wide tables; one instance, ``REGISTRY``, backs the public decorators.

    ``changes`` counts every change to them: registrations, and any change made to a
    table directly (they are ``TrackedDict`` / ``TrackedSet``), or a table replaced."""

    changes: int

    def __init__(self):
        object.__setattr__(self, "changes", 0)
        self.by_name = {}          # stable name or alias -> class / function
        self.allowed = set()       # allowed top-level namespaces
        self.game = set()          # namespaces that define saveable classes: the game's own
        self.upgrades = {}         # (stable name, from_version) -> fn(fields) -> fields
        self.asset_by_id = {}      # asset id -> object
        self.asset_id_of = {}      # id(object) -> asset id (objects kept alive above)
        self.asset_classes = set() # classes with a registered asset instance
        self.class_changed = []    # callbacks taking a class re-registered (schema.py)

    def __setattr__(self, name, value):
        # a table set or replaced (a test's monkeypatch) is tracked from then on
        if type(value) is dict or type(value) is set:
            tracked = (TrackedDict if type(value) is dict else TrackedSet)(value)
            tracked.owner = self
            value = tracked
        object.__setattr__(self, name, value)
        if name != "changes":
            self.changed()

    def changed(self):
        """Count a change (generated.py and loading.plans watch ``changes``)."""
        object.__setattr__(self, "changes", self.changes + 1)

    # -- registration ----------------------------------------------------------------

    def register_class(self, cls, name=None, aliases=(), version=None):
        """Record cls under its stable name and aliases. A module executed again (a
        reload, a patched build in the same process) replaces its own classes, and so
        does any class replacing one whose module is gone."""
        if name is not None:
            cls.__autosave_name__ = name
        if version is not None:
            if not isinstance(version, int) or version < 1:
                raise ValueError(f"@saveable(version=...) must be an int >= 1, got {version!r}")
            cls.__autosave_version__ = version
        for callback in self.class_changed:     # a class registered again: a new version
            callback(cls)
        stable = stable_name(cls)
        for key in (stable, *aliases):
            known = self.by_name.get(key)
            if (known is not None and known is not cls and known.__module__ != cls.__module__
                    and known.__module__ in sys.modules):
                raise ValueError(
                    f"two classes claim the save name {key!r}: "
                    f"{known.__module__}.{known.__qualname__} and {cls.__module__}.{cls.__qualname__}"
                )
            self.by_name[key] = cls
        self.allowed.add(_top(cls.__module__))
        self.game.add(_top(cls.__module__))
        self.changed()
        return cls

    def allow(self, *packages):
        for package in packages:
            if not isinstance(package, str) or not package or package.startswith("."):
                raise ValueError(f"autosave.allow() takes package names, got {package!r}")
            self.allowed.add(package)
        self.changed()

    def add_upgrade(self, name, from_version, fn):
        key = (name, from_version)
        if key in self.upgrades and self.upgrades[key] is not fn:
            raise ValueError(f"an upgrade for {name!r} from version {from_version} is already registered")
        self.upgrades[key] = fn

    def add_asset(self, obj, asset_id):
        if not isinstance(asset_id, str) or not asset_id:
            raise ValueError(f"an asset id must be a non-empty string, got {asset_id!r}")
        if isinstance(obj, (int, float, str, bytes, bool, type(None))):
            raise ValueError(f"asset {asset_id!r}: plain values ({type(obj).__name__}) are saved inline, not as assets")
        known = self.asset_by_id.get(asset_id)
        if known is not None and known is not obj:
            del self.asset_id_of[id(known)]
        self.asset_by_id[asset_id] = obj
        self.asset_id_of[id(obj)] = asset_id
        self.asset_classes.add(type(obj))
        self.changed()
        return obj

    # -- trust -----------------------------------------------------------------------

    def is_allowed_module(self, module_name):
        """Whether the module or one of its parent packages is allowed."""
        if not isinstance(module_name, str):
            return False
        allowed = self.allowed
        if module_name in allowed:
            return True
        # each parent ("a", "a.b" of "a.b.c"), without a list of them per question
        dot = module_name.find(".")
        while dot != -1:
            if module_name[:dot] in allowed:
                return True
            dot = module_name.find(".", dot + 1)
        return False

    def is_game_module(self, module_name):
        """A module of a package that defines ``@save_root`` / ``@saveable`` classes: the
        game's own code, as opposed to a library it only allows."""
        return isinstance(module_name, str) and _top(module_name) in self.game

    def check_savable_name(self, obj, what):
        """Return obj's stable name if a load could resolve it, else raise SaveError."""
        name = stable_name(obj)
        if name in self.by_name or name in SAFE_STDLIB_NAMES:
            return name
        module = getattr(obj, "__module__", None)
        if "<locals>" in obj.__qualname__:
            raise SaveError(
                f"{what} {module}.{obj.__qualname__} is defined inside a function, so a load "
                f"could not find it by name; move it to module level, or give it "
                f"@autosave.saveable(name=...) and call that function before loading")
        if not self.is_allowed_module(module):
            raise SaveError(
                f"{what} {name} is outside the allowed namespaces, so a load would refuse it; "
                f"call autosave.allow({_top(module or '?')!r}) if you trust that package, "
                f"or mark the field autosave.transient")
        if what == "class" and _lookup(module, obj.__qualname__) is not obj:
            # made by type(), or replaced under its name since: a load would find
            # something else, or nothing
            raise SaveError(
                f"{what} {name} cannot be found again by its name (module {module!r} has "
                f"no attribute path {obj.__qualname__!r} leading to it: made by type(), "
                f"or the name was rebound or deleted since?); keep it bound to that name "
                f"in {module!r}, or give it @autosave.saveable(name=...)")
        return name

    # -- resolution on load ----------------------------------------------------------

    def resolve(self, name, what="type"):
        """Stable name -> object, without importing anything outside allowed namespaces."""
        found = self.by_name.get(name)
        if found is not None:
            return found
        if not isinstance(name, str) or not name:
            raise UntrustedTypeError(f"{what} name {name!r} is not a valid name")
        if name in SAFE_STDLIB_NAMES:
            module_name, _, attr = name.rpartition(".")
            return getattr(sys.modules[module_name], attr)
        parts = name.split(".")
        if not self.is_allowed_module(parts[0] if len(parts) > 1 else name):
            # Also accept namespaces allowed at a deeper level ("mygame.ai").
            if not any(self.is_allowed_module(".".join(parts[:i])) for i in range(1, len(parts))):
                raise UntrustedTypeError(
                    f"the save refers to {what} {name!r}, which is outside the allowed "
                    f"namespaces {sorted(self.allowed)}; nothing was imported. If you trust it, "
                    f"call autosave.allow({parts[0]!r}) before loading")
        for split in range(len(parts) - 1, 0, -1):
            module_name = ".".join(parts[:split])
            if not self.is_allowed_module(module_name):
                continue
            module = sys.modules.get(module_name)
            if module is None:
                continue          # a load never imports: the game imports its modules
            obj = module
            for attr in parts[split:]:
                obj = getattr(obj, attr, None)
                if isinstance(obj, types.ModuleType) and not self.is_allowed_module(obj.__name__):
                    raise UntrustedTypeError(
                        f"the save refers to {what} {name!r}, which reaches module "
                        f"{obj.__name__!r} through {module_name!r}'s imports; that module "
                        f"is outside the allowed namespaces")
                if obj is None:
                    break         # a module reached through an attribute is allowed (above)
            else:
                return self._checked_home(obj, name, what)
        raise IncompatibleSaveError(
            f"the save refers to {what} {name!r}, which no longer exists or whose module "
            f"is not imported (a load imports nothing: import the game's modules first); "
            f"if it was renamed, add aliases=({name!r},) to its @autosave.saveable")


    def _checked_home(self, obj, name, what):
        """A name must lead to an object that lives in an allowed namespace: an allowed
        module's imports (``mygame.os.system``) are not part of it."""
        home = getattr(obj, "__module__", None)
        if not isinstance(home, str) or not self.is_allowed_module(home):
            raise UntrustedTypeError(
                f"the save refers to {what} {name!r}, which leads to "
                f"{home}.{getattr(obj, '__qualname__', '?')}, outside the allowed namespaces")
        return obj


def _lookup(module_name, qualname):
    """What ``module.qualname`` names now, by attribute lookup in sys.modules (no
    import), or None."""
    obj = sys.modules.get(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return obj


def stable_name(obj):
    """The name a class or function is saved under."""
    explicit = obj.__dict__.get("__autosave_name__") if isinstance(obj, type) else None
    if explicit is None:
        explicit = getattr(obj, "__autosave_name__", None) if not isinstance(obj, type) else None
    if explicit is not None:
        return explicit
    return f"{obj.__module__}.{obj.__qualname__}"


def class_version(cls):
    """The class's version: its own ``@saveable(version=...)``, else its nearest base's
    (a subclass changes with its base: a ``Merchant(Npc)`` record is upgraded by ``Npc``'s
    hooks unless ``Merchant`` registers its own), else 1."""
    for klass in cls.__mro__:
        version = klass.__dict__.get("__autosave_version__")
        if version is not None:
            return version
    return 1


REGISTRY = Registry()


_C = TypeVar("_C", bound=type)
_T = TypeVar("_T")
# An upgrade hook takes the plain field dict of one version and returns the next's.
_Upgrade = TypeVar("_Upgrade", bound=Callable[[dict[str, Any]], dict[str, Any]])


def save_root(cls: _C) -> _C:
    """Mark a class whose instances are save roots; trusts its package for loading."""
    if not isinstance(cls, type):
        raise TypeError("@autosave.save_root decorates a class")
    REGISTRY.register_class(cls)
    cls.__autosave_root__ = True     # type: ignore[attr-defined]
    return cls


@overload
def saveable(cls: _C, *, name: str | None = None, aliases: str | Iterable[str] = (),
             version: int | None = None) -> _C: ...
@overload
def saveable(cls: None = None, *, name: str | None = None, aliases: str | Iterable[str] = (),
             version: int | None = None) -> Callable[[_C], _C]: ...
def saveable(cls: _C | None = None, *, name: str | None = None,
             aliases: str | Iterable[str] = (),
             version: int | None = None) -> _C | Callable[[_C], _C]:
    """Give a class a stable save name, old names it loads from, and a version."""
    if isinstance(aliases, str):
        aliases = (aliases,)

    def decorate(cls: _C) -> _C:
        if not isinstance(cls, type):
            raise TypeError("@autosave.saveable decorates a class")
        return REGISTRY.register_class(cls, name=name, aliases=tuple(aliases), version=version)

    return decorate(cls) if cls is not None else decorate


def upgrade(name: str, from_version: int) -> Callable[[_Upgrade], _Upgrade]:
    """Register ``fn(fields: dict) -> dict`` turning version ``from_version`` data into the next."""
    if not isinstance(from_version, int) or from_version < 1:
        raise ValueError(f"from_version must be an int >= 1, got {from_version!r}")

    def decorate(fn: _Upgrade) -> _Upgrade:
        REGISTRY.add_upgrade(name, from_version, fn)
        return fn

    return decorate


def allow(*packages: str) -> None:
    """Trust the classes and functions of these packages when loading."""
    REGISTRY.allow(*packages)


def asset(obj: _T, asset_id: str) -> _T:
    """Register ``obj`` as static data: saves write ``asset_id``, loads return ``obj``."""
    return REGISTRY.add_asset(obj, asset_id)


def assets(mapping: Mapping[str, object]) -> None:
    """Register many assets at once: ``{asset_id: obj}``."""
    for asset_id, obj in mapping.items():
        REGISTRY.add_asset(obj, asset_id)
