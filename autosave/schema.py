"""Introspection: a class -> its ClassSchema (how it is saved, its fields, fingerprint).

The walker and the rebuilder interpret schemas; a code generator can emit straight-line
code from the same data. Strategies, chosen in this order:

* ``enum``     an Enum member, saved by member name
* ``reduce``   the class defines ``__reduce_ex__``/``__reduce__`` itself, or a C class
               it extends does (pygame's Rect, Vector2...), or ``copyreg.dispatch_table``
               has an entry for it; the walk refuses a reduce value a load would
               refuse (a constructor that is a function, or a class outside the
               allowed namespaces)
* ``state``    the class defines ``__getstate__`` or ``__setstate__`` itself
* ``instance`` everything else: slot values and ``__dict__`` entries as fields, plus the
               base value when the class subclasses list/dict/set/frozenset/tuple/str/
               int/float/bytes/deque
"""

import collections
import copyreg
import dataclasses
import enum
from types import MappingProxyType

import attrs
import xxhash

from .registry import class_version, stable_name

transient = MappingProxyType({"autosave.transient": True})
"""Field marker: ``attrs.field(metadata=autosave.transient)`` or
``dataclasses.field(metadata=autosave.transient)``. The field is not saved and comes
back as its default (or factory) value."""

NO_DEFAULT = object()

# Builtin bases an instance may extend; the base value is saved after the fields.
BUILTIN_BASES = (list, dict, set, frozenset, tuple, str, int, float, bytes, collections.deque)

_HEAPTYPE = 1 << 9
_IMMUTABLETYPE = 1 << 8


@attrs.frozen
class FieldDefault:
    """How a field gets its value when a save does not hold it."""
    value: object = NO_DEFAULT
    factory: object = None
    takes_self: bool = False

    @property
    def exists(self):
        return self.factory is not None or self.value is not NO_DEFAULT

    def make(self, obj):
        if self.factory is None:
            return self.value
        return self.factory(obj) if self.takes_self else self.factory()


@attrs.frozen
class ClassSchema:
    cls: type
    name: str
    version: int
    strategy: str                 # "enum" | "reduce" | "state" | "instance"
    base: type | None             # builtin base of an "instance", if any
    slots: tuple                  # slot names, base classes first
    saved_slots: tuple            # slots minus transient ones
    has_dict: bool
    transient: frozenset          # field names never saved
    declared: tuple               # declared field names (attrs/dataclass), else ()
    defaults: MappingProxyType    # declared field name -> FieldDefault
    fingerprint: str

    def shape_of(self, obj):
        """The field names this instance saves, in record order."""
        names = list(self.saved_slots)
        if self.has_dict:
            d = obj.__dict__
            if self.transient:
                names.extend(k for k in d if k not in self.transient)
            else:
                names.extend(d)
        return tuple(names)


_schemas = {}


def schema_of(cls):
    s = _schemas.get(cls)
    if s is None:
        s = _schemas[cls] = _build(cls)
    return s


def _defines(cls, names, stop=object):
    """The first class in cls's MRO (before ``stop``) that defines one of ``names``."""
    for klass in cls.__mro__:
        if klass is stop or klass is object:
            return None
        if any(n in klass.__dict__ for n in names):
            return klass
    return None


def solid_base(cls):
    """The nearest non-Python (C) class in the MRO: what the instance layout really is.
    C classes made at run time (``_thread.lock``, most of the standard library's since
    3.10) are heap types too, but immutable ones, which a class statement never makes."""
    for klass in cls.__mro__:
        if not klass.__flags__ & _HEAPTYPE or klass.__flags__ & _IMMUTABLETYPE:
            return klass
    return object


def builtin_base(cls):
    solid = solid_base(cls)
    return solid if solid in BUILTIN_BASES else None


def _build(cls):
    name = stable_name(cls)
    version = class_version(cls)
    if issubclass(cls, enum.Enum):
        strategy = "enum"
    elif (_user_defines(cls, ("__reduce_ex__", "__reduce__")) or _c_reduces(cls)
          or cls in copyreg.dispatch_table):
        strategy = "reduce"
    elif _user_defines(cls, ("__getstate__", "__setstate__")):
        strategy = "state"
    else:
        strategy = "instance"

    slots = []
    has_dict = False
    for klass in reversed(cls.__mro__):
        if klass.__flags__ & _HEAPTYPE:
            for s in _slot_names(klass):
                if s == "__dict__":
                    has_dict = True
                elif s != "__weakref__" and s not in slots:
                    slots.append(_mangle(klass, s))
            if "__slots__" not in klass.__dict__:
                has_dict = True

    declared, defaults, transient_names = _declared_fields(cls)
    transient_names |= set(getattr(cls, "__autosave_transient__", ()))

    fp = xxhash.xxh64()
    fp.update(f"{name}|{version}|{strategy}|{getattr(builtin_base(cls), '__name__', '')}|".encode())
    fp.update(",".join(slots).encode() + b"|" + ",".join(declared).encode())
    fp.update(b"|" + ",".join(sorted(transient_names)).encode())
    return ClassSchema(
        cls=cls, name=name, version=version, strategy=strategy,
        base=builtin_base(cls), slots=tuple(slots), has_dict=has_dict,
        saved_slots=tuple(s for s in slots if s not in transient_names),
        transient=frozenset(transient_names), declared=tuple(declared),
        defaults=MappingProxyType(defaults), fingerprint=fp.hexdigest(),
    )


def _user_defines(cls, names):
    """Whether a Python class in cls's MRO defines one of names itself.

    attrs and dataclasses generate ``__getstate__``/``__setstate__`` for slotted classes
    only so that pickle can see the slots; autosave reads slots directly, so those
    generated methods do not count.
    """
    klass = _defines(cls, names)
    if klass is None or not klass.__flags__ & _HEAPTYPE or klass.__flags__ & _IMMUTABLETYPE:
        return False              # a C class's own (io.BytesIO's is a heap type since 3.12)
    for n in names:
        fn = klass.__dict__.get(n)
        module = getattr(fn, "__module__", None) or ""
        if fn is not None and not (module == "dataclasses" or module.startswith("attr")):
            return True
    return False


def _c_reduces(cls):
    """Whether the C class cls's instances really are (its solid base) defines its own
    ``__reduce_ex__``/``__reduce__``: that is how such a type says what it is made
    of. The builtin bases autosave saves itself (list, deque...) do not count."""
    solid = solid_base(cls)
    if solid is object or solid in BUILTIN_BASES:
        return False
    return any(n in klass.__dict__ for klass in solid.__mro__
               if klass is not object and klass not in BUILTIN_BASES
               for n in ("__reduce_ex__", "__reduce__", "__getnewargs__", "__getnewargs_ex__"))


def _slot_names(klass):
    slots = klass.__dict__.get("__slots__", ())
    if isinstance(slots, str):
        slots = (slots,)
    return tuple(slots)


def _mangle(klass, slot):
    if slot.startswith("__") and not slot.endswith("__"):
        return f"_{klass.__name__.lstrip('_')}{slot}"
    return slot


def _declared_fields(cls):
    """Declared fields with their defaults and transient marks (attrs, dataclasses)."""
    declared, defaults, transient_names = [], {}, set()
    if attrs.has(cls):
        for a in attrs.fields(cls):
            declared.append(a.name)
            if a.metadata.get("autosave.transient"):
                transient_names.add(a.name)
            if isinstance(a.default, attrs.Factory):
                defaults[a.name] = FieldDefault(factory=a.default.factory, takes_self=a.default.takes_self)
            elif a.default is not attrs.NOTHING:
                defaults[a.name] = FieldDefault(value=a.default)
            else:
                defaults[a.name] = FieldDefault()
    elif dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            declared.append(f.name)
            if f.metadata.get("autosave.transient"):
                transient_names.add(f.name)
            if f.default_factory is not dataclasses.MISSING:
                defaults[f.name] = FieldDefault(factory=f.default_factory)
            elif f.default is not dataclasses.MISSING:
                defaults[f.name] = FieldDefault(value=f.default)
            else:
                defaults[f.name] = FieldDefault()
    # Plain classes declare nothing: a field missing from a save reads through to the
    # class attribute of that name, if any, by ordinary attribute lookup.
    return declared, defaults, transient_names
