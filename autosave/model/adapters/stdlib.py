"""Standard-library value types: numbers, time, identifiers, paths, RNGs, counters.

Each record's payload is the argument list shown beside the adapter.
"""

import datetime
import decimal
import fractions
import itertools
import pathlib
import random
import uuid
import zoneinfo
import re
from ast import literal_eval

from ...errors import FormatError, IncompatibleSaveError
from ...checks.loadcheck import MAX_FRACTION_BITS
from .base import Adapter, register_adapter


class BigIntAdapter(Adapter):
    """Ints beyond 64 bits as records, [little-endian two's complement bytes]: what
    format 2 wrote. Format 3 writes them inline (format.py), so this is load-only."""
    name, types = "builtins.int", ()

    def parts(self, obj):
        return [obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True)]

    def build(self, vals):
        (raw,) = vals[1:]
        if type(raw) is not bytes:
            raise ValueError("a big int record holds bytes")
        return int.from_bytes(raw, "little", signed=True)


class ComplexAdapter(Adapter):
    """[real, imag]"""
    name, types = "builtins.complex", (complex,)

    def parts(self, obj):
        return [obj.real, obj.imag]

    def build(self, vals):
        real, imag = vals[1:]
        return complex(_float(real), _float(imag))


class RangeAdapter(Adapter):
    """[start, stop, step]"""
    name, types = "builtins.range", (range,)

    def parts(self, obj):
        return [obj.start, obj.stop, obj.step]

    def build(self, vals):
        return range(*map(_int, vals[1:]))


class SliceAdapter(Adapter):
    """[start, stop, step]"""
    name, types, hash_kind = "builtins.slice", (slice,), 1     # hashable since 3.12

    def parts(self, obj):
        return [obj.start, obj.stop, obj.step]

    def build(self, vals):
        start, stop, step = vals[1:]
        return slice(start, stop, step)


class SingletonAdapter(Adapter):
    """[name]: Ellipsis, NotImplemented."""
    name, types = "builtins.singleton", (type(...), type(NotImplemented))
    by_name = {"Ellipsis": ..., "NotImplemented": NotImplemented}

    def parts(self, obj):
        return ["Ellipsis" if obj is ... else "NotImplemented"]

    def build(self, vals):
        (key,) = vals[1:]
        return self.by_name[key]


class DecimalAdapter(Adapter):
    """[str(value)]"""
    name, types = "decimal.Decimal", (decimal.Decimal,)

    def parts(self, obj):
        return [str(obj)]

    def build(self, vals):
        (text,) = vals[1:]
        if type(text) is not str or len(text) > 10_000:
            raise ValueError("a Decimal record holds its text")
        return decimal.Decimal(text)


class FractionAdapter(Adapter):
    """[numerator, denominator]"""
    name, types = "fractions.Fraction", (fractions.Fraction,)

    def parts(self, obj):
        return [obj.numerator, obj.denominator]

    def build(self, vals):
        num, den = map(_int, vals[1:])
        if max(num.bit_length(), den.bit_length()) > MAX_FRACTION_BITS:
            # normalising takes time quadratic in the size of the terms
            raise FormatError(f"a Fraction record's terms exceed the loader's limit of "
                              f"{MAX_FRACTION_BITS} bits")
        return fractions.Fraction(num, den)


class TimedeltaAdapter(Adapter):
    """[days, seconds, microseconds]"""
    name, types = "datetime.timedelta", (datetime.timedelta,)

    def parts(self, obj):
        return [obj.days, obj.seconds, obj.microseconds]

    def build(self, vals):
        days, seconds, micro = map(_int, vals[1:])
        return datetime.timedelta(days, seconds, micro)


class DateAdapter(Adapter):
    """[year, month, day]"""
    name, types = "datetime.date", (datetime.date,)

    def parts(self, obj):
        return [obj.year, obj.month, obj.day]

    def build(self, vals):
        return datetime.date(*map(_int, vals[1:]))


class TimeAdapter(Adapter):
    """[hour, minute, second, microsecond, tzinfo, fold]"""
    name, types = "datetime.time", (datetime.time,)

    def parts(self, obj):
        return [obj.hour, obj.minute, obj.second, obj.microsecond, obj.tzinfo, obj.fold]

    def build(self, vals):
        h, m, s, us, tz, fold = vals[1:]
        return datetime.time(_int(h), _int(m), _int(s), _int(us), _tz(tz), fold=_int(fold))


class DatetimeAdapter(Adapter):
    """[year, month, day, hour, minute, second, microsecond, tzinfo, fold]"""
    name, types = "datetime.datetime", (datetime.datetime,)

    def parts(self, obj):
        return [obj.year, obj.month, obj.day, obj.hour, obj.minute, obj.second,
                obj.microsecond, obj.tzinfo, obj.fold]

    def build(self, vals):
        *fields, tz, fold = vals[1:]
        return datetime.datetime(*map(_int, fields), _tz(tz), fold=_int(fold))


class TimezoneAdapter(Adapter):
    """[offset timedelta, name or None]"""
    name, types = "datetime.timezone", (datetime.timezone,)

    def parts(self, obj):
        args = obj.__getinitargs__()
        return [args[0], args[1] if len(args) > 1 else None]

    def build(self, vals):
        offset, name = vals[1:]
        if type(offset) is not datetime.timedelta:
            raise ValueError("a timezone record holds a timedelta offset")
        return datetime.timezone(offset) if name is None else datetime.timezone(offset, name)


class ZoneInfoAdapter(Adapter):
    """[key] -- the IANA key; the zone data comes from the system on load."""
    name, types = "zoneinfo.ZoneInfo", (zoneinfo.ZoneInfo,)

    def parts(self, obj):
        return [obj.key]

    # An IANA key: path components of letters, digits and -_+ (no "..", no absolute path)
    KEY = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*\Z")

    def build(self, vals):
        (key,) = vals[1:]
        if type(key) is not str or len(key) > 255 or not self.KEY.match(key):
            raise FormatError("a ZoneInfo record holds an IANA time zone key")
        # Only a zone on the system's TZPATH: zoneinfo's fallback to the tzdata
        # package would import modules during the load.
        if _tzfile(key) is None:
            raise IncompatibleSaveError(f"time zone {key!r} is not on this system's TZPATH "
                                        f"({', '.join(zoneinfo.TZPATH) or 'empty'})")
        return zoneinfo.ZoneInfo(key)


class UUIDAdapter(Adapter):
    """[16 bytes]"""
    name, types = "uuid.UUID", (uuid.UUID,)

    def parts(self, obj):
        return [obj.bytes]

    def build(self, vals):
        (raw,) = vals[1:]
        return uuid.UUID(bytes=raw)


class PathAdapter(Adapter):
    """[str(path)] -- a path is a name; loading one never touches the file system."""
    types = (pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.PosixPath, pathlib.WindowsPath)

    def __init__(self, cls):
        self.cls = cls
        self.name = f"pathlib.{cls.__name__}"
        self.types = (cls,)

    def parts(self, obj):
        return [str(obj)]

    def build(self, vals):
        (text,) = vals[1:]
        if type(text) is not str:
            raise ValueError("a path record holds a string")
        return self.cls(text)


class RandomAdapter(Adapter):
    """[version, *internal state words, gauss_next] -- continues the same sequence."""
    name, types, mutable, has_fill = "random.Random", (random.Random,), True, True

    def parts(self, obj):
        version, internal, gauss_next = obj.getstate()
        return [version, *internal, gauss_next]

    def allocate(self, rec):
        return random.Random()

    def fill(self, obj, vals):
        version, *internal, gauss_next = vals[1:]
        if gauss_next is not None and type(gauss_next) is not float:
            raise ValueError("a Random record's gauss_next is a float or None")
        obj.setstate((_int(version), tuple(map(_int, internal)), gauss_next))


class CountAdapter(Adapter):
    """[next value, step]"""
    name, types = "itertools.count", (itertools.count,)

    def parts(self, obj):
        args = literal_eval(repr(obj)[len("count("):-1] + ",")
        return [args[0], args[1] if len(args) > 1 else 1]

    def build(self, vals):
        start, step = vals[1:]
        for v in (start, step):
            if type(v) not in (int, float):
                raise ValueError("an itertools.count record holds numbers")
        return itertools.count(start, step)


def _int(v):
    if type(v) is not int:
        raise ValueError(f"expected an int, found {type(v).__name__}")
    return v


def _tzfile(key):
    for root in zoneinfo.TZPATH:
        path = f"{root}/{key}"
        try:
            with open(path, "rb") as f:
                if f.read(4) == b"TZif":
                    return path
        except OSError:
            pass
    return None


def _float(v):
    if type(v) is not float:
        raise ValueError(f"expected a float, found {type(v).__name__}")
    return v


def _tz(v):
    if v is not None and not isinstance(v, datetime.tzinfo):
        raise ValueError(f"expected a tzinfo, found {type(v).__name__}")
    return v


BIG_INT = register_adapter(BigIntAdapter())
for _adapter in (ComplexAdapter, RangeAdapter, SliceAdapter, SingletonAdapter, DecimalAdapter,
                 FractionAdapter, TimedeltaAdapter, DateAdapter, TimeAdapter, DatetimeAdapter,
                 TimezoneAdapter, ZoneInfoAdapter, UUIDAdapter, RandomAdapter, CountAdapter):
    register_adapter(_adapter())
for _cls in PathAdapter.types:
    register_adapter(PathAdapter(_cls))
