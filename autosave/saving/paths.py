"""Object paths for save errors: ``root.squads[3].leader.ai``, the shortest way from the
root to the object whose handler failed.

A failure is placed once, by the innermost object it happened at (``placed``), and its
path is searched only then, from what the walk already met: a __getstate__ or
__reduce__ value the walk asked for is read from the walk's record of it
(``Walker.made``), never asked for again, so user code runs once per save.
"""

from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import SaveError
from ..format.wire import INLINE_TYPES
from ..model.anatomy import labelled_parts


def placed(walker: Any, obj: Any, e: BaseException) -> BaseException:
    """The SaveError for ``e``, raised while ``walker`` saved ``obj``: with obj's path,
    unless an object deeper down already placed it (the innermost one is to blame)."""
    if isinstance(e, SaveError) and e.path is not None:
        return e
    path = find_path(walker.root, obj, walker.made)
    if isinstance(e, SaveError):
        return SaveError(e.reason, path)
    return SaveError(f"{type(obj).__qualname__} could not be saved: {type(e).__name__}: {e}",
                     path)


def placed_cause(e: BaseException) -> BaseException | None:
    """What the placed error is raised from: a SaveError keeps its own cause."""
    return e.__cause__ if isinstance(e, SaveError) else e


def find_path(root: Any, target: Any, made: dict[int, Any] | None = None,
              is_target: Callable[[Any], bool] | None = None) -> str:
    """The shortest path from root to target, as 'root.squads[3].leader'.

    ``made``: what a walk's user code gave it, by id (see Walker.made). Given it, the
    search goes through objects saved by __getstate__ or __reduce__ only where the walk
    met them, so no user code runs a second time: the walk reached ``target`` through
    objects it met. ``is_target``: a test to find the target by, instead of identity."""
    seen = {id(root)}
    queue = deque([(root, "root")])
    while queue:
        obj, path = queue.popleft()
        if obj is target if is_target is None else is_target(obj):
            return path
        try:
            children = list(labelled_parts(obj, made))
        except Exception:       # a broken object on the way: look past it
            continue
        for label, child in children:
            if child.__class__ not in INLINE_TYPES and id(child) not in seen:
                seen.add(id(child))
                queue.append((child, path + label))
    return "root.<unreachable>"
