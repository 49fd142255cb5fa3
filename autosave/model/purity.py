"""Which methods of types outside the game's code a save may bind (docs/security.md,
"What a loaded callable may do later").

A saved bound method, or an ``operator.methodcaller``, is a callable the game may call
later. The game's own methods (Python code of the trusted namespaces) are the game's
business. For every other type -- builtins, the standard-library value types autosave
saves, and the C types of optional packages -- a save may bind only the methods listed
here as *pure*: they compute on the object and their arguments, and never reach the file
system, the network, another module or the interpreter's machinery. A type without an
entry binds nothing but the data protocols' special methods (``DATA_DUNDERS`` in
adapters/callables.py).

The same table gives the names an ``operator.methodcaller`` may not name: a method of
one of these types that is not pure (``write_text``, ``unlink``, ``tofile``,
``encode``...), since the caller may be applied to such an object.
"""

from __future__ import annotations

import array
import collections
import datetime
import decimal
import fractions
import ipaddress
import pathlib
import random
import re
import types
import uuid
import zoneinfo
from collections.abc import Iterable

ALL_PUBLIC = None     # every public method of the type, less what it lists as impure

# type -> (pure names or ALL_PUBLIC, impure names). Builtin containers and numbers only
# compute; their text conversions are the exception: a codec lookup may import a module,
# and str.format reads any attribute path of its arguments.
_TABLE: dict[type, tuple[frozenset[str] | None, frozenset[str]]] = {}
_impure_cache: dict[str, frozenset[str]] = {}


def declare(cls: type, pure: Iterable[str] | None = ALL_PUBLIC,
            impure: Iterable[str] = ()) -> None:
    """Declare the methods of ``cls`` a save may bind: ``pure`` lists them (or
    ALL_PUBLIC: every public method but those in ``impure``)."""
    _TABLE[cls] = (None if pure is None else frozenset(pure), frozenset(impure))
    _impure_cache.clear()


_TEXT = ("encode", "decode", "format", "format_map")
_cls: type
for _cls in (str, bytes, bytearray):
    declare(_cls, impure=_TEXT)
for _cls in (int, float, complex, bool, list, tuple, dict, set, frozenset, range, slice,
             collections.deque, collections.OrderedDict, collections.Counter,
             collections.defaultdict, collections.ChainMap, types.SimpleNamespace,
             decimal.Decimal, decimal.Context, fractions.Fraction, random.Random,
             datetime.date, datetime.datetime, datetime.time, datetime.timedelta,
             datetime.timezone, uuid.UUID, re.Pattern, re.Match,
             ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
             ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface):
    declare(_cls)
declare(array.array, impure=("tofile", "fromfile"))
# A path is a name; every method that asks the file system about it is left out.
_PURE_PATH = ("as_posix", "as_uri", "is_absolute", "is_relative_to", "is_reserved",
              "joinpath", "match", "relative_to", "with_name", "with_stem", "with_suffix")
for _cls in (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath,
             pathlib.Path, pathlib.PosixPath, pathlib.WindowsPath):
    declare(_cls, _PURE_PATH)
declare(zoneinfo.ZoneInfo, ("utcoffset", "dst", "tzname", "fromutc"))


def declared_for(cls: type) -> tuple[frozenset[str] | None, frozenset[str]] | None:
    for klass in cls.__mro__:
        found = _TABLE.get(klass)
        if found is not None:
            return found
    return None


def is_pure(cls: type, name: str) -> bool:
    """Whether a save may bind ``cls``'s method ``name`` (cls outside the game's code)."""
    found = declared_for(cls)
    if found is None or name.startswith("_"):
        return False
    pure, impure = found
    if name in impure:
        return False
    return pure is None or name in pure


_BUILTIN_DATA = (str, bytes, list, tuple, dict, set, int, float)


def impure_names() -> frozenset[str]:
    """The names an ``operator.methodcaller`` may not name: a method of a declared type
    that is not pure, unless a builtin container or value type has a pure method of that
    name (``replace``, ``count``: the caller cannot tell which it will be applied to,
    and refusing ``str.replace`` would refuse ordinary saves; docs/security.md says what
    that leaves)."""
    found = _impure_cache.get("all")
    if found is None:
        names: set[str] = set()
        for cls in _TABLE:
            for name in dir(cls):
                if not name.startswith("_") and callable(getattr(cls, name, None)) \
                        and not is_pure(cls, name):
                    names.add(name)
        names -= {name for cls in _BUILTIN_DATA for name in dir(cls) if is_pure(cls, name)}
        found = _impure_cache["all"] = frozenset(names)
    return found
