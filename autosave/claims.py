"""Which objects autosave moves between processes for Dask and Ray (docs/distributed.md):
the game's own, never anything else, so an engine's default serializer keeps the rest."""

import importlib
from collections.abc import Iterable

from .coroutines.runtime import Coroutine
from .model.registry import REGISTRY, allow as allow_packages, stable_name

CONTAINERS = (list, tuple, dict, set, frozenset)
MAX_DEPTH = 3                      # containers nested in containers, looked into


def is_claimed_class(cls: type) -> bool:
    """True for the game's classes: ``@save_root`` / ``@saveable`` ones (registered under
    their stable name) and ``@autosave.coroutine`` generators."""
    if issubclass(cls, Coroutine):
        return True
    try:
        return REGISTRY.by_name.get(stable_name(cls)) is cls
    except AttributeError:             # a class without __module__ or __qualname__
        return False


def claims(obj: object, depth: int = 0) -> bool:
    """True for a game object, or a builtin container holding one (directly or in a
    nested container), saved whole so that sharing between its items survives."""
    cls = type(obj)
    if cls in CONTAINERS:
        if depth >= MAX_DEPTH:
            return False
        items: Iterable[object] = obj.values() if isinstance(obj, dict) else obj  # type: ignore[assignment]
        return any(claims(item, depth + 1) for item in items)
    return is_claimed_class(cls)


def claimed_classes() -> list[type]:
    """Every claimed class imported so far: the registered game classes, the coroutine
    base and each coroutine's generated class (engines that register by exact class)."""
    found: list[type] = []
    seen: set[type] = set()
    stack: list[type] = [Coroutine]
    while stack:                       # Coroutine and its subclasses, at any depth
        cls = stack.pop()
        if cls not in seen:
            seen.add(cls)
            found.append(cls)
            stack.extend(cls.__subclasses__())
    for cls in REGISTRY.by_name.values():
        if isinstance(cls, type) and cls not in seen and is_claimed_class(cls):
            seen.add(cls)
            found.append(cls)
    return found


def import_game(modules: Iterable[str] = (), allow: Iterable[str] = ()) -> None:
    """A worker's start, for either engine: import ``modules`` (ImportError if one is
    missing, so the worker fails at start, not a task later) and trust ``allow``."""
    for name in modules:
        importlib.import_module(name)
    allowed = list(allow)
    if allowed:
        allow_packages(*allowed)
