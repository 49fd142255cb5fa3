"""Object paths for save errors: ``root.squads[3].leader.ai``, the shortest way from the
root to the object whose handler failed.

A failure is placed once, by the innermost object it happened at (``placed``), and its
path is searched only then, from what the walk already met: a __getstate__ or
__reduce__ value the walk asked for is read from the walk's record of it
(``Walker.made``), never asked for again, so user code runs once per save.
"""

import copyreg
import reprlib
import functools
import types
from collections import deque

from ..adapters import ADAPTERS_BY_TYPE
from ..adapters.weak import WeakAdapter
from ..coroutines.runtime import RUNNING, Coroutine
from ..errors import SaveError
from ..format.wire import INLINE_TYPES
from ..model.schema import schema_of


def placed(walker, obj, e):
    """The SaveError for ``e``, raised while ``walker`` saved ``obj``: with obj's path,
    unless an object deeper down already placed it (the innermost one is to blame)."""
    if isinstance(e, SaveError) and e.path is not None:
        return e
    path = find_path(walker.root, obj, walker.made)
    if isinstance(e, SaveError):
        return SaveError(e.reason, path)
    return SaveError(f"{type(obj).__qualname__} could not be saved: {type(e).__name__}: {e}",
                     path)


def placed_cause(e):
    """What the placed error is raised from: a SaveError keeps its own cause."""
    return e.__cause__ if isinstance(e, SaveError) else e


def find_path(root, target, made=None, is_target=None):
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
            children = list(labelled_children(obj, made))
        except Exception:       # a broken object on the way: look past it
            continue
        for label, child in children:
            if child.__class__ not in INLINE_TYPES and id(child) not in seen:
                seen.add(id(child))
                queue.append((child, path + label))
    return "root.<unreachable>"


def labelled_children(obj, made=None):
    """(label, child) pairs, mirroring what the walk visits."""
    if isinstance(obj, dict):
        for i, (k, v) in enumerate(dict.items(obj)):
            yield f"<key {i}>", k
            # reprlib: a key nested thousands deep has a repr Python cannot make
            yield f"[{k!r}]" if k.__class__ in INLINE_TYPES else f"[{reprlib.repr(k)}]", v
    elif isinstance(obj, (list, tuple, deque)):
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))
    elif isinstance(obj, (set, frozenset)):
        yield from ((f"<member {i}>", v) for i, v in enumerate(obj))
    if isinstance(obj, Coroutine):
        if obj._state != RUNNING:
            d = obj.__dict__
            for saved, attr in obj._spec.saved[obj._state]:
                yield f".<local {saved}>", d[attr]
        return
    if isinstance(obj, types.FunctionType):
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            if cell.cell_contents is not None:
                yield f"<closure {name}>", cell.cell_contents
        yield from ((f"<default {i}>", v) for i, v in enumerate(obj.__defaults__ or ()))
    elif isinstance(obj, types.MethodType):
        yield ".__self__", obj.__self__
    elif isinstance(obj, functools.partial):
        yield ".func", obj.func
        yield from ((f".args[{i}]", a) for i, a in enumerate(obj.args))
        yield from ((f".keywords[{k!r}]", v) for k, v in obj.keywords.items())
    elif isinstance(obj, type):
        return
    elif type(obj) in ADAPTERS_BY_TYPE:
        adapter = ADAPTERS_BY_TYPE[type(obj)]
        if not hasattr(adapter, "save_record") and not isinstance(adapter, WeakAdapter):
            yield from ((f".<part {i}>", p) for i, p in enumerate(adapter.parts(obj)))
        return
    elif type(obj).__module__ == "builtins":
        return
    elif (layout := schema_of(type(obj)).layout) in ("state", "reduce"):
        if made is None:
            given = obj.__getstate__() if layout == "state" else reduce_value(obj)
        elif id(obj) in made:
            given = made[id(obj)]
        else:
            return
        if layout == "reduce":
            yield from reduce_children(given)
        else:           # a state is what __getstate__ gives: a dict, a pair, anything
            yield from state_children(given)
    else:
        schema = schema_of(type(obj))
        for name in schema.saved_slots:
            try:
                yield f".{name}", object.__getattribute__(obj, name)
            except AttributeError:
                pass
        if schema.has_dict:
            yield from ((f".{k}", v) for k, v in obj.__dict__.items())


def reduce_value(obj):
    reducer = copyreg.dispatch_table.get(obj.__class__)   # as pickle honours it
    return reducer(obj) if reducer is not None else obj.__reduce_ex__(4)


def state_children(state):
    """What a state holds: a dict's items by name, a (dict, slots) pair's both, and
    any other state as itself (a tuple, a list: searched further as any container)."""
    if (type(state) is tuple and len(state) == 2
            and all(s is None or isinstance(s, dict) for s in state)):   # (dict, slots)
        state = {**(state[0] or {}), **(state[1] or {})}
    if isinstance(state, dict):
        yield from ((f".{k}", v) for k, v in state.items())
    elif state is not None:
        yield ".<state>", state


def reduce_children(rv):
    """What a __reduce__ value holds, labelled as in the object's own terms."""
    if isinstance(rv, str):
        return
    _, args, state, listitems, dictitems = (*rv, None, None, None, None)[:5]
    yield from ((f".<arg {i}>", a) for i, a in enumerate(args or ()))
    yield from state_children(state)
    yield from ((f"[{i}]", v) for i, v in enumerate(listitems or ()))
    for k, v in (dictitems or ()):
        yield f"[{k!r}]" if k.__class__ in INLINE_TYPES else f"[{reprlib.repr(k)}]", v
