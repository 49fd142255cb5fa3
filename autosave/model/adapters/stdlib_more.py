"""More standard-library types games hold: decimal contexts, arrays, compiled patterns,
ChainMap, mapping proxies, stateful itertools, structseqs, staticmethod/classmethod
objects, generic aliases (``Box[int]``, set as ``__orig_class__``), loggers, and the
builtin types as values. Each payload is documented beside its adapter and in
docs/types.md; each load checks its arguments' exact types before using them.
"""

import array
import collections
import decimal
import ipaddress
import itertools
import logging
import os
import re
import time
import types
import typing
import warnings

from ...errors import FormatError, IncompatibleSaveError
from ...checks.loadcheck import exact, str_dict
from .base import Adapter, register_adapter
from .iterators import iter_only

MAX_PATTERN = 10_000          # characters of a compiled pattern's source


class DecimalContextAdapter(Adapter):
    """[prec, rounding, Emin, Emax, capitals, clamp, flags..., None, traps...]
    (signals by name)."""
    name, types = "decimal.Context", (decimal.Context,)
    SIGNALS = {s.__name__: s for s in (
        decimal.Clamped, decimal.DivisionByZero, decimal.FloatOperation, decimal.Inexact,
        decimal.InvalidOperation, decimal.Overflow, decimal.Rounded, decimal.Subnormal,
        decimal.Underflow)}
    ROUNDINGS = frozenset(r for r in dir(decimal) if r.startswith("ROUND_"))

    def parts(self, obj):
        flags = sorted(s.__name__ for s, on in obj.flags.items() if on)
        traps = sorted(s.__name__ for s, on in obj.traps.items() if on)
        return [obj.prec, obj.rounding, obj.Emin, obj.Emax, obj.capitals, obj.clamp,
                *flags, None, *traps]

    def build(self, vals):
        prec, rounding, emin, emax, capitals, clamp, *signals = vals[1:]
        for v in (prec, emin, emax, capitals, clamp):
            exact(v, int, "a decimal.Context number")
        if rounding not in self.ROUNDINGS or None not in signals:
            raise FormatError("a decimal.Context record is malformed")
        cut = signals.index(None)
        named = [[self.SIGNALS.get(s) for s in part] for part in (signals[:cut], signals[cut + 1:])]
        if any(s is None for part in named for s in part):
            raise FormatError("a decimal.Context record names an unknown signal")
        return decimal.Context(prec, rounding, emin, emax, capitals, clamp, *named)


class ArrayAdapter(Adapter):
    """[typecode, machine bytes] -- ``array.array``."""
    name, types = "array.array", (array.array,)

    def parts(self, obj):
        return [obj.typecode, obj.tobytes()]

    def build(self, vals):
        code, raw = vals[1:]
        if type(code) is not str or code not in array.typecodes:
            raise FormatError("an array.array record holds a typecode")
        out = array.array(code)
        if len(exact(raw, bytes, "an array's data")) % out.itemsize:
            raise FormatError("an array.array's data is not a whole number of items")
        out.frombytes(raw)
        return out


class PatternAdapter(Adapter):
    """[pattern str or bytes, flags] -- compiled again on load, outside re's cache."""
    name, types = "re.Pattern", (re.Pattern,)
    FLAGS = re.ASCII | re.IGNORECASE | re.LOCALE | re.MULTILINE | re.DOTALL | re.UNICODE | re.VERBOSE

    def parts(self, obj):
        return [obj.pattern, obj.flags]

    def build(self, vals):
        pattern, flags = vals[1:]
        if type(pattern) not in (str, bytes) or len(pattern) > MAX_PATTERN:
            raise FormatError(f"a re.Pattern record holds its source, at most "
                              f"{MAX_PATTERN} characters")
        if type(flags) is not int or flags & ~self.FLAGS:
            # re.DEBUG would print while loading
            raise FormatError("a re.Pattern record's flags are not plain re flags")
        try:
            return re._compiler.compile(pattern, flags)   # re.compile would cache it
        except re.error as e:
            raise FormatError(f"a re.Pattern record does not compile: {e.msg}") from None


_MAPPINGS = (dict, collections.ChainMap, types.MappingProxyType)


def _mapping(m, what):
    if not isinstance(m, _MAPPINGS):
        raise FormatError(f"{what} holds a {type(m).__name__}, not a mapping")
    return m


class ChainMapAdapter(Adapter):
    """[maps...] -- the same mapping objects, so changes through it reach them."""
    reads_parts = False       # keeps references only
    name, types, mutable, has_fill = "collections.ChainMap", (collections.ChainMap,), True, True

    def parts(self, obj):
        return list(obj.maps)

    def allocate(self, rec):
        return collections.ChainMap()

    def fill(self, obj, vals):
        maps = [_mapping(m, "a ChainMap") for m in vals[1:]]
        obj.maps = maps or [{}]


class MappingProxyAdapter(Adapter):
    """[mapping] -- a read-only view of that very mapping."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "builtins.mappingproxy", (types.MappingProxyType,)

    def parts(self, obj):
        return [_proxied(obj)]

    def build(self, vals):
        (m,) = vals[1:]
        return types.MappingProxyType(_mapping(m, "a mappingproxy"))


def _proxied(proxy):
    """The dict behind a mappingproxy (its only referent), so sharing survives."""
    import gc
    found = [r for r in gc.get_referents(proxy) if isinstance(r, _MAPPINGS)]
    if len(found) != 1:
        raise LookupError("the mapping behind this mappingproxy cannot be found")
    if "__module__" in found[0] and "__doc__" in found[0]:
        # a class's namespace (cls.__dict__): saving it would copy the class
        raise LookupError("a class's __dict__ cannot be saved; save the class itself")
    return found[0]


def _reduce(obj):
    """itertools' own description of its state (deprecated for pickle in 3.12; autosave
    reads it without pickling, and saves the parts by its own rules)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return obj.__reduce__()


def _setstate(obj, state):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        obj.__setstate__(state)


class CycleAdapter(Adapter):
    """[iterator, first pass done, saved items...]: continues where it was; nothing is
    consumed on load."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.cycle", (itertools.cycle,)
    build_finished = slice(1, 2)

    def parts(self, obj):
        _, (it,), (saved, firstpass) = _reduce(obj)
        return [it, bool(firstpass), *saved]

    def build(self, vals):
        it, firstpass, *saved = vals[1:]
        if type(firstpass) is not bool:
            raise FormatError("an itertools.cycle record holds its first-pass flag")
        out = itertools.cycle(iter_only(it))
        _setstate(out, (saved, firstpass))
        return out


class RepeatAdapter(Adapter):
    """[value, times left or None]"""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.repeat", (itertools.repeat,)

    def parts(self, obj):
        args = _reduce(obj)[1]
        return [args[0], args[1] if len(args) > 1 else None]

    def build(self, vals):
        value, times = vals[1:]
        if times is None:
            return itertools.repeat(value)
        return itertools.repeat(value, exact(times, int, "an itertools.repeat count"))


class ChainAdapter(Adapter):
    """[iterator of iterables or None, active iterator or None]"""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.chain", (itertools.chain,)

    def parts(self, obj):
        rv = _reduce(obj)
        state = rv[2] if len(rv) > 2 else ()
        return [state[0] if len(state) > 0 else None, state[1] if len(state) > 1 else None]

    def build(self, vals):
        source, active = vals[1:]
        out = itertools.chain()
        if source is not None:
            state = (iter_only(source),) if active is None else (iter_only(source), iter_only(active))
            _setstate(out, state)
        return out


class IsliceAdapter(Adapter):
    """[iterator, next index, stop or None, step, count]"""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    name, types = "itertools.islice", (itertools.islice,)

    def parts(self, obj):
        rv = _reduce(obj)
        if len(rv[1]) == 1:                      # exhausted: islice(iter([]), 0)
            return [iter(()), 0, 0, 1, 0]
        (it, start, stop, step), count = rv[1], rv[2]
        return [it, start, stop, step, count]

    def build(self, vals):
        it, start, stop, step, count = vals[1:]
        for v in (start, step, count):
            if type(v) is not int or v < 0:
                raise FormatError("an itertools.islice record holds indices")
        if stop is not None and (type(stop) is not int or stop < 0) or step < 1:
            raise FormatError("an itertools.islice record holds indices")
        out = itertools.islice(iter_only(it), start, stop, step)
        _setstate(out, count)
        return out


class ItertoolAdapter(Adapter):
    """[args..., state]: ``takewhile``/``dropwhile`` [function, iterator, flag],
    ``starmap`` [function, iterator, None], ``compress`` [data, selectors, None],
    ``accumulate`` [iterator, function or None, running total], ``zip_longest``
    [iterators..., fillvalue]. Functions are stored, never called; iterators must be
    iterators and are not advanced."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)
    build_finished = slice(1, None)

    def __init__(self, cls, spec):
        self.cls, self.types, self.spec = cls, (cls,), spec
        self.name = f"itertools.{cls.__name__}"

    def parts(self, obj):
        rv = _reduce(obj)
        return [*rv[1], rv[2] if len(rv) > 2 else None]

    def build(self, vals):
        *args, state = vals[1:]
        spec = self.spec * len(args) if self.spec == "i" else self.spec
        if len(args) != len(spec) or not args:
            raise FormatError(f"an {self.name} record holds {len(spec)} arguments")
        for kind, arg in zip(spec, args):
            if kind == "i":
                iter_only(arg)
            elif not callable(arg) and not (kind == "F" and arg is None):
                raise FormatError(f"an {self.name} record holds a function")
        if self.cls is itertools.zip_longest:
            return itertools.zip_longest(*args, fillvalue=state)
        out = self.cls(*args)
        if state is not None:
            if self.cls in (itertools.takewhile, itertools.dropwhile) and type(state) not in (int, bool):
                raise FormatError(f"an {self.name} record's flag is an int")
            _setstate(out, state)
        return out


STRUCTSEQS = {f"{t.__module__}.{t.__name__}": t for t in (
    time.struct_time, os.stat_result, os.terminal_size, os.times_result,
    os.uname_result, getattr(os, "statvfs_result", os.stat_result))}


class StructseqAdapter(Adapter):
    """[type name, values..., extra fields dict] -- ``time.struct_time``,
    ``os.stat_result`` and the other named tuples of the os and time modules."""
    name = "autosave.structseq"
    types = tuple(set(STRUCTSEQS.values()))

    def parts(self, obj):
        cls = type(obj)
        args = obj.__reduce__()[1]
        return [f"{cls.__module__}.{cls.__name__}", *args[0], args[1]]

    def build(self, vals):
        kind, *values, extra = vals[1:]
        cls = STRUCTSEQS.get(kind) if type(kind) is str else None
        if cls is None:
            raise FormatError("a structseq record names one of " + ", ".join(STRUCTSEQS))
        for v in values:
            if type(v) not in (int, float, str, type(None)):
                raise FormatError(f"a {kind} holds plain values")
        str_dict(extra, f"a {kind}'s extra fields")
        if len(values) != cls.n_sequence_fields or len(extra) > cls.n_fields - cls.n_sequence_fields:
            raise FormatError(f"a {kind} record holds {len(values)} fields")
        return cls(values, extra)


class MethodWrapperAdapter(Adapter):
    """[function] -- a ``staticmethod`` or ``classmethod`` object held in a field."""
    c_dealloc = True          # freed by unchecked C recursion: chains bounded (limits.py)

    def __init__(self, cls):
        self.cls, self.types = cls, (cls,)
        self.name = f"builtins.{cls.__name__}"

    def parts(self, obj):
        return [obj.__func__]

    def build(self, vals):
        (func,) = vals[1:]
        if not callable(func):
            raise FormatError(f"a {self.cls.__name__} record holds a function")
        return self.cls(func)


# typing's own alias class (typing.List[int]'s), which list[int] is not
_TYPING_ALIAS = type(typing.List[int])  # noqa: UP006
_ALIAS_TYPES = (types.GenericAlias, _TYPING_ALIAS)


class AliasAdapter(Adapter):
    """[origin, args...] -- ``list[int]``, ``Box[int]`` (what typing stores in an
    instance's ``__orig_class__``); built without subscripting, so no
    ``__class_getitem__`` runs and typing's caches stay as they are."""
    name = "autosave.generic_alias"
    types = _ALIAS_TYPES

    def parts(self, obj):
        origin = typing.get_origin(obj)
        if not isinstance(origin, type) or type(obj) not in self.types:
            raise LookupError(f"the generic alias {obj!r} cannot be saved")
        return [origin, type(obj) is types.GenericAlias, *obj.__args__]

    def build(self, vals):
        origin, builtin_kind, *args = vals[1:]
        if not isinstance(origin, type) or type(builtin_kind) is not bool:
            raise FormatError("a generic alias record holds a class")
        for a in args:
            if not (isinstance(a, type) or type(a) in _ALIAS_TYPES or a is None):
                raise FormatError("a generic alias's arguments are classes or aliases")
        if builtin_kind:
            return types.GenericAlias(origin, tuple(args))
        return _TYPING_ALIAS(origin, tuple(args))


class LoggerAdapter(Adapter):
    """[name] -- the logger of that name, as ``logging.getLogger(name)`` gives it (pickle
    does the same). Loggers live forever in logging's global table, so a load creates
    one only for a dotted name of words (``game.ai``, ``worker-2``), at most MAX_NEW_LOGGERS in a
    process; past that a missing logger is an IncompatibleSaveError."""
    name = "logging.Logger"
    types = (logging.Logger, logging.RootLogger)

    def parts(self, obj):
        return [obj.name if obj is not logging.root else None]

    def build(self, vals):
        (name,) = vals[1:]
        if name is None:
            return logging.root
        if type(name) is not str:
            raise FormatError("a logger record holds its name")
        found = logging.Logger.manager.loggerDict.get(name)
        if isinstance(found, logging.Logger):
            return found
        if (len(name) <= 200 and _LOGGER_NAME.fullmatch(name)
                and LoggerAdapter.created < MAX_NEW_LOGGERS):
            LoggerAdapter.created += 1
            return logging.getLogger(name)
        raise IncompatibleSaveError(
            f"the save holds logging.getLogger({name[:100]!r}), which does not exist "
            f"in this process and is not a name a load creates; create it (import the "
            f"module that does) before loading")

    created = 0


MAX_NEW_LOGGERS = 1000
_LOGGER_NAME = re.compile(r"[\w-]+(?:\.[\w-]+)*", re.ASCII)


class AddressAdapter(Adapter):
    """[text] -- an ipaddress address, network or interface, as its text: a value."""

    def __init__(self, cls):
        self.cls, self.types, self.name = cls, (cls,), f"ipaddress.{cls.__name__}"

    def parts(self, obj):
        return [str(obj)]

    def build(self, vals):
        (text,) = vals[1:]
        if type(text) is not str or len(text) > 100:
            raise FormatError(f"an {self.name} record holds its text")
        try:
            return self.cls(text)
        except ValueError as e:
            raise FormatError(f"an {self.name} record holds no address: {e}") from None


for _adapter in (DecimalContextAdapter, ArrayAdapter, PatternAdapter, ChainMapAdapter,
                 MappingProxyAdapter, CycleAdapter, RepeatAdapter, ChainAdapter,
                 IsliceAdapter, StructseqAdapter, AliasAdapter, LoggerAdapter):
    register_adapter(_adapter())
for _address in (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network,
                 ipaddress.IPv6Network, ipaddress.IPv4Interface, ipaddress.IPv6Interface):
    register_adapter(AddressAdapter(_address))
for _itertool, _spec in ((itertools.takewhile, "fi"), (itertools.dropwhile, "fi"),
                         (itertools.starmap, "fi"), (itertools.compress, "ii"),
                         (itertools.accumulate, "iF"), (itertools.zip_longest, "i")):
    register_adapter(ItertoolAdapter(_itertool, _spec))
for _wrapper in (staticmethod, classmethod):
    register_adapter(MethodWrapperAdapter(_wrapper))
