"""Introspection: a class -> its ClassSchema (how it is saved, its fields, fingerprint).

The schema is the one place that decides how a class's instances are laid out in a
save: ``ClassSchema.layout``, computed once per class, which the saver, the loader,
autosave-codegen and the manifest all read (``autosave.model.dispatch`` puts the builtin
adapters, functions and classes in front of it, in one fixed lookup order). Layouts:

* ``enum``      saved by member name
* ``reduce``    saved through ``__reduce__`` (the ``reduce`` strategy below, and the
                standard-library classes autosave trusts by name)
* ``state``     saved through ``__getstate__``/``__setstate__``
* ``slots``     every saved field a slot; plain attribute access, no builtin base
* ``dict``      every field in ``__dict__``; no slots, no transient fields, plain
                attribute access, no builtin base
* ``fields``    any other mix of slots and ``__dict__`` (transient fields, a custom
                ``__getattribute__``/``__getattr__``)
* ``extends``   fields, then the value of the builtin class it extends (list, dict...)
* ``c-object``  refused: the instance wraps a C object autosave cannot see into

Generated code exists for ``slots`` and ``dict``; the other layouts are what
reflection does for them anyway. Strategies, chosen in this order:

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
import sys
from types import MappingProxyType

import attrs
import xxhash

from .registry import REGISTRY, SAFE_STDLIB_NAMES, class_version, stable_name

transient = MappingProxyType({"autosave.transient": True})
"""Field marker: ``attrs.field(metadata=autosave.transient)`` or
``dataclasses.field(metadata=autosave.transient)``. The field is not saved and comes
back as its default (or factory) value."""

NO_DEFAULT = object()
OLD_NAMES = "autosave.old_names"


def renamed_from(*old_names: str) -> MappingProxyType:
    """Field metadata naming the field's earlier names: a save holding ``coins`` fills
    the field declared ``gold: int = attrs.field(metadata=autosave.renamed_from("coins"))``
    (or ``dataclasses.field(metadata=...)``). Combine with other metadata as
    ``{**autosave.renamed_from("coins"), **autosave.transient}``. Slotted and plain
    classes say the same with ``__autosave_renamed__ = {"gold": "coins"}`` (the new name
    and one old name or a tuple of them)."""
    if not old_names or not all(isinstance(n, str) and n.isidentifier() for n in old_names):
        raise ValueError(f"autosave.renamed_from takes the field's old names, got {old_names!r}")
    return MappingProxyType({OLD_NAMES: tuple(old_names)})

# Builtin bases an instance may extend; the base value is saved after the fields.
BUILTIN_BASES = (list, dict, set, frozenset, tuple, str, int, float, bytes, collections.deque)

GENERATED_LAYOUTS = ("slots", "dict")     # what autosave-codegen writes code for...
BATCHED = "hashed by identity: saved in batches, a column per field"
                                          # ...unless they are in batches

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
    layout: str                   # how a save lays instances out: see the module docstring
    base: type | None             # builtin base of an "instance", if any
    slots: tuple                  # slot names, base classes first
    saved_slots: tuple            # slots minus transient ones
    has_dict: bool
    transient: frozenset          # field names never saved
    declared: tuple               # declared field names (attrs/dataclass), else ()
    defaults: MappingProxyType    # declared field name -> FieldDefault
    fingerprint: str
    renamed: MappingProxyType = MappingProxyType({})   # old field name -> current name
    reserved: frozenset = frozenset()   # names never to be used again (__autosave_reserved__)

    @property
    def batched(self):
        """Whether instances are saved in batches, a column per field, by the engine
        itself (docs/format.md, "Batches"): plain layouts hashed by identity."""
        return self.layout in GENERATED_LAYOUTS and (
            self.cls.__hash__ is object.__hash__ or self.cls.__hash__ is None)

    @property
    def why_not_generated(self):
        """Why autosave-codegen writes no code for this class (None: it does)."""
        if self.batched:
            return BATCHED
        if self.layout in GENERATED_LAYOUTS:
            return None if self.saved_slots or self.layout == "dict" else \
                "no saved fields: saved by reflection"
        return {"enum": "an enum: saved by member name",
                "reduce": "defines __reduce__: saved through it",
                "state": "defines __getstate__ or __setstate__: saved through them",
                "extends": f"extends {getattr(self.base, '__name__', '?')}: saved by reflection",
                "c-object": "wraps a C object: refused",
                "fields": ("customises attribute access: saved by reflection"
                           if not plain_access(self.cls) else
                           "mixes slots with __dict__ or has transient fields: saved by "
                           "reflection")}[self.layout]

    def refusal(self):
        """The error message for a ``c-object`` class."""
        cls, solid = self.cls, solid_base(self.cls)
        mod = cls.__module__.partition(".")[0]
        hint = ("" if mod not in sys.stdlib_module_names and mod != "builtins" else
                " (a standard-library type autosave has no adapter for)")
        # advice that works when followed: a C class itself cannot be given
        # __getstate__; a Python subclass of one can
        fix = ("register an adapter for it with autosave.register(...)" if cls is solid
               else "give the class __getstate__/__setstate__")
        return (f"{cls.__module__}.{cls.__qualname__} wraps a C object "
                f"({solid.__module__}.{solid.__qualname__}) that cannot be saved{hint}; "
                f"mark the field autosave.transient, or {fix}")

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


_schemas: dict[type, "ClassSchema"] = {}


def _forget(cls):
    """A class registered again (``@saveable(version=...)`` on it, once more): its
    schema and its subclasses' (their version may be its) are made anew when asked."""
    for known in [k for k in _schemas if cls in k.__mro__]:
        del _schemas[known]


REGISTRY.class_changed.append(_forget)


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


def plain_access(cls):
    """Whether reading an attribute of an instance runs no code of the class's own."""
    return (cls.__getattribute__ is object.__getattribute__
            and not hasattr(cls, "__getattr__"))


def _layout(cls, name, strategy, slots, saved_slots, has_dict, transient_names):
    if strategy in ("enum", "reduce", "state"):
        return strategy
    if name in SAFE_STDLIB_NAMES:
        return "reduce"
    solid = solid_base(cls)
    if solid is not object and solid not in BUILTIN_BASES:
        return "c-object"
    if solid is not object:
        return "extends"
    if not plain_access(cls):
        return "fields"
    if not has_dict:
        return "slots"
    if not saved_slots and not transient_names:
        return "dict"
    return "fields"


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
        if klass.__flags__ & _HEAPTYPE and not klass.__flags__ & _IMMUTABLETYPE:   # a Python class
            for s in _slot_names(klass):
                if s == "__dict__":
                    has_dict = True
                elif s != "__weakref__" and s not in slots:
                    slots.append(_mangle(klass, s))
            if "__slots__" not in klass.__dict__:
                has_dict = True

    declared, defaults, transient_names, old_names = _declared_fields(cls)
    transient_names |= set(getattr(cls, "__autosave_transient__", ()))
    renamed = _renames(cls, old_names, set(declared) | set(slots))

    saved_slots = tuple(s for s in slots if s not in transient_names)
    fp = xxhash.xxh64()
    fp.update(f"{name}|{version}|{strategy}|{getattr(builtin_base(cls), '__name__', '')}|".encode())
    fp.update(",".join(slots).encode() + b"|" + ",".join(declared).encode())
    fp.update(b"|" + ",".join(sorted(transient_names)).encode())
    return ClassSchema(
        cls=cls, name=name, version=version, strategy=strategy,
        layout=_layout(cls, name, strategy, slots, saved_slots, has_dict, transient_names),
        base=builtin_base(cls), slots=tuple(slots), has_dict=has_dict,
        saved_slots=saved_slots,
        transient=frozenset(transient_names), declared=tuple(declared),
        defaults=MappingProxyType(defaults), fingerprint=fp.hexdigest(),
        renamed=MappingProxyType(renamed),
        reserved=frozenset(_names(getattr(cls, "__autosave_reserved__", ()))),
    )


def _names(value):
    return (value,) if isinstance(value, str) else tuple(value)


def _renames(cls, old_names, fields):
    """{old name: current name} from field metadata and ``__autosave_renamed__``; an old
    name that is a current field too would be ambiguous, and is refused."""
    declared = getattr(cls, "__autosave_renamed__", {})
    if not isinstance(declared, dict):
        raise TypeError(f"{cls.__qualname__}.__autosave_renamed__ must be a dict "
                        f"{{new name: old name or (old names...)}}")
    pairs = dict(old_names)
    for new, olds in declared.items():
        for old in _names(olds):
            pairs[old] = new
    for old, new in pairs.items():
        if old in fields:
            raise TypeError(f"{cls.__qualname__}.{new} declares the old name {old!r}, which "
                            f"is a field of {cls.__qualname__} too; a save's {old!r} would "
                            f"fill both")
    return pairs


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
    declared, defaults, transient_names, old_names = [], {}, set(), {}
    if attrs.has(cls):
        for a in attrs.fields(cls):
            declared.append(a.name)
            for old in a.metadata.get(OLD_NAMES, ()):
                old_names[old] = a.name
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
            for old in f.metadata.get(OLD_NAMES, ()):
                old_names[old] = f.name
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
    return declared, defaults, transient_names, old_names
