"""What the loader may do with a value a file built: the checks each load step makes
before it touches one (docs/security.md).

The loader never calls, iterates, hashes or formats a file-built value unless its exact
type says that is harmless. Steps that take a dict, a tuple or a list take exactly that
type, built by autosave from the file's records a moment ago; a subclass or a lazy
iterator standing in for one is malformed. Hooks are looked up on the class, never on
the instance, whose attributes are the file's data.
"""

from collections.abc import Callable
from typing import Any

from ..errors import FormatError

# Fixed ceilings on what a record may make the loader allocate or compute, whatever the
# file declares; each is far beyond what a game's own save holds (docs/security.md).
MAX_ITERATOR_GAP = 1 << 23        # slots an iterator position may lie past its sequence
MAX_FRACTION_BITS = 1 << 16       # bits of a Fraction's terms (normalising is quadratic)


def exact(value: Any, cls: type, what: str) -> Any:
    """``value`` itself if its type is exactly ``cls``; else FormatError."""
    if type(value) is not cls:
        raise FormatError(f"{what} must be a {cls.__name__}, the save holds a "
                          f"{type(value).__name__}")
    return value


def str_dict(value: Any, what: str, allow_none: bool = False) -> Any:
    """A plain dict whose keys are all str (attribute and keyword tables)."""
    if value is None and allow_none:
        return None
    exact(value, dict, what)
    for key in value:            # a plain dict of exact strs: iterating runs no code
        if type(key) is not str:
            raise FormatError(f"{what} has a key of type {type(key).__name__}, not str")
    return value


def class_attribute(cls: type, name: str) -> Any:
    """``name`` as defined by ``cls`` or a base, without running any code: no instance
    dict, no ``__getattr__``, no metaclass. None when no class defines it."""
    for klass in cls.__mro__:
        found = klass.__dict__.get(name, _NOTHING)
        if found is not _NOTHING:
            return found
    return None


def bound_hook(obj: Any, name: str) -> Callable[..., Any] | None:
    """The hook ``name`` of ``type(obj)`` bound to ``obj``, or None. Never read from
    the instance: an instance attribute of that name is data from the file."""
    cls = type(obj)
    attr = class_attribute(cls, name)
    if attr is None:
        return None
    get = getattr(type(attr), "__get__", None)
    return get(attr, obj, cls) if get is not None else attr


class _Nothing:
    pass


_NOTHING = _Nothing()


def describe(error: BaseException) -> str:
    """An exception raised during a load, as text, without formatting any object the
    file built: a message made of plain strings and numbers, else only the type."""
    args = error.args
    if all(type(a) in (str, int, float) for a in args):
        text = str(error) if type(error).__str__ in _PLAIN_STR else ", ".join(map(str, args))
        return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__
    return type(error).__name__


_PLAIN_STR = (BaseException.__str__, KeyError.__str__, OSError.__str__)
