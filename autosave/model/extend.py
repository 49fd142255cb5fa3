"""The extension API: teach autosave a type it cannot take apart by itself.

    autosave.register(Money, save=lambda m: [m.currency, m.cents],
                      load=Money, args=(str, int))

``save(obj)`` returns the record's parts: plain values, or objects autosave saves in
turn (shared and cyclic ones included). ``load(*parts)`` gets them back and returns the
object. Trust rules (docs/security.md, docs/types.md):

* registering is trusting: ``load`` runs during loads, on parts a file chose. It is
  the only code of the type that runs, and it must validate what it receives;
* ``args`` (a type, or a tuple of types, per part) is checked first, exactly (no
  subclasses): with ``args``, ``load`` never sees anything else. A part that is a
  list, tuple or dict is autosave's own container, built by the loader;
* a file may name the type only if it is registered in the loading process, under
  the same ``name`` (default ``module.QualName``); nothing is imported.
"""

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .adapters.base import Adapter, register_adapter
from ..errors import FormatError
from .registry import stable_name

_ANY = object()
_T = TypeVar("_T")
# One part's allowed types: a type, None for NoneType, or a tuple of those.
PartTypes = type | None | tuple[type | None, ...]


class UserAdapter(Adapter):
    """An adapter made by ``register``: a value built from its finished parts."""
    build_finished = slice(1, None)     # load() may read its parts' contents
    hash_kind = 2

    def __init__(self, cls, save, load, name, args):
        self.cls, self.save, self.load = cls, save, load
        self.name, self.types = name, (cls,)
        self.args = args

    def parts(self, obj):
        made = self.save(obj)
        if type(made) not in (list, tuple):
            raise TypeError(f"autosave.register({self.cls.__qualname__}): save() must "
                            f"return a list or tuple of parts, not {type(made).__name__}")
        return list(made)

    def build(self, vals):
        parts = vals[1:]
        if self.args is not _ANY:
            if len(parts) != len(self.args):
                raise FormatError(f"a {self.name} record holds {len(self.args)} parts, "
                                  f"the save holds {len(parts)}")
            for i, (part, allowed) in enumerate(zip(parts, self.args)):
                if type(part) not in allowed:
                    raise FormatError(
                        f"part {i} of a {self.name} record must be "
                        f"{' or '.join(t.__name__ for t in allowed)}, the save holds a "
                        f"{type(part).__name__}")
        return self.load(*parts)


def register(cls: type[_T], *, save: Callable[[_T], Sequence[Any]],
             load: Callable[..., _T], args: Sequence[PartTypes] | None = None,
             name: str | None = None) -> Adapter:
    """Save instances of exactly ``cls`` as ``save(obj)`` (a list of parts) and load
    them as ``load(*parts)``, each part first checked against ``args``."""
    if not isinstance(cls, type):
        raise TypeError("autosave.register() takes a class")
    if not callable(save) or not callable(load):
        raise TypeError("autosave.register() needs save= and load= callables")
    if args is None:
        checked = _ANY
    else:
        checked = tuple(_types(a) for a in args)
    return register_adapter(UserAdapter(cls, save, load, name or stable_name(cls), checked))


def _types(spec):
    spec = spec if isinstance(spec, tuple) else (spec,)
    out = []
    for t in spec:
        if t is None:
            t = type(None)
        if not isinstance(t, type):
            raise TypeError(f"autosave.register(args=...) takes types, got {t!r}")
        out.append(t)
    return tuple(out)
