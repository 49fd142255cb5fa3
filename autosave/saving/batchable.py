"""Save: which objects go in batches, and how a batch's columns are read off them
(docs/format.md, "Batches"). One answer per class, decided from its kind
(``autosave.model.dispatch``) when the walk first meets it; ``columns.Batches`` files
the objects and writes the columns.
"""

import inspect
import operator
from types import MemberDescriptorType

from ..format.wire import ABSENT, INLINE_TYPES
from ..model import dispatch
from ..model.anatomy import enum_by_name
from ..model.registry import REGISTRY


def value_batchable(cls, kind, detail):
    """Whether instances of cls go in a batch when their fields are all inline values
    (``inline_fields``): plain layouts hashed by value (a frozen dataclass or attrs
    class), which a load builds complete when it allocates them, before any record
    hashes one (docs/format.md, "Batches")."""
    if kind == "extends":
        return _plain_tuple_subclass(cls, detail)
    if kind == "enum":             # its members by name (a load looks each one up)
        return True
    return kind in ("slots", "dict") and not detail.batched and not detail.transient


def batch_kind(cls):
    """(kind, detail) of cls, for a class batches may take: None for an asset class
    (told apart one by one) or one whose kind is an error (the walk meets it, with a
    path)."""
    if cls in REGISTRY.asset_classes:
        return None
    try:
        return dispatch.kind_of(cls)
    except Exception:
        return None


def _plain_tuple_subclass(cls, detail):
    """A tuple subclass with nothing of its own to save, that iterates and measures as
    a tuple (a namedtuple): its objects are their items, as a tuple batch's are."""
    return detail.base is tuple and not detail.saved_slots and not detail.has_dict \
        and not detail.transient and cls.__iter__ is tuple.__iter__ \
        and cls.__len__ is tuple.__len__


def batchable(cls, kind, detail):
    """Whether every instance of cls is written in a batch: plain instances hashed by
    identity (a value hash may need its fields while a load still fills them), and
    lists. (Dicts and tuples are, one by one, when they fit: ``Batches.fits``.)"""
    if kind in ("slots", "dict"):
        return detail.batched                  # the schema's one decision
    return cls is list


def slot_columns(cls, slots, loops):
    """objs -> a column per slot. A slot the class shadows (a property, say) is read as
    getattr reads it, object by object; a plain slot's member descriptor, in bulk."""
    descriptors = [inspect.getattr_static(cls, name) for name in slots]
    if all(type(d) is MemberDescriptorType for d in descriptors):
        read = loops.slot_columns
        return lambda objs: read(descriptors, objs, ABSENT)
    return lambda objs: [[_slot_or_absent(obj, name) for obj in objs] for name in slots]


def _slot_or_absent(obj, name):
    try:
        return object.__getattribute__(obj, name)
    except AttributeError:
        return ABSENT


def dict_columns(shape, loops):
    # an object whose attributes changed during the walk is an error (kernels)
    read = loops.dict_columns
    return lambda objs: read(objs, shape)


def inline_fields(kind, schema, cls, loops):
    """obj -> whether every saved field of obj holds an inline value (an unset slot
    does not: a load builds these objects whole)."""
    inline = INLINE_TYPES
    if kind == "enum":                     # a member saved by its name: enum_by_name
        named = {id(m) for m in cls.__members__.values() if enum_by_name(m)}
        return lambda m: id(m) in named    # asked once per mention: by id, no Python
    if kind == "extends":                  # a namedtuple: its items
        return inline_keys
    if kind == "dict":
        return lambda obj: set(map(type, obj.__dict__.values())) <= inline
    slots = schema.saved_slots
    if not slots:
        return lambda obj: True
    descriptors = [inspect.getattr_static(cls, name) for name in slots]
    if not all(type(d) is MemberDescriptorType for d in descriptors):
        return lambda obj: False           # read one by one: records
    get = operator.attrgetter(*slots) if len(slots) > 1 else \
        (lambda obj, g=operator.attrgetter(slots[0]): (g(obj),))

    def fits(obj):
        try:
            return set(map(type, get(obj))) <= inline
        except AttributeError:             # an unset slot
            return False
    return fits


def enum_names(members):
    """An enum batch's one column: its members' names."""
    return [[m._name_ for m in members]]


def inline_keys(d):
    """Whether d's keys (or a tuple's items) are all inline values."""
    return set(map(type, d)) <= INLINE_TYPES
