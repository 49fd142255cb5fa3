"""One decision per class: the schema's layout, and every consumer following it.

Classes are generated from random specs (slots, ``__dict__``, transient fields, a custom
``__getattr__``, a builtin base, ``__getstate__`` or ``__reduce__``). For each one the
layout is predicted here from the spec alone, independently of autosave's code, and then
checked against what the schema decided, what a save writes in the type table, which
fill the loader picks, what autosave-codegen says of it, and a round trip.
"""

import collections
import itertools
import os
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.format import wire as fmt
from autosave.format.expand import records_of
from autosave.loading.plans import InstancePlan, plan_for
from autosave.model.schema import schema_of
from autosave_codegen.emit import kind_of

autosave.allow(__name__)


@autosave.save_root      # the game's own module: its classes' __reduce__ are its code
class _Game:
    pass

_counter = itertools.count()
FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)   # 0: the seeded CI set
BASES = (None, list, dict, set, tuple, str, int, collections.deque)

specs = st.fixed_dictionaries({
    "slots": st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
    "has_dict": st.booleans(),
    "transient": st.booleans(),
    "getattr": st.booleans(),
    "base": st.sampled_from(BASES),
    "hook": st.sampled_from([None, "state", "reduce"]),
})


def expected_layout(spec):
    """The layout docs/format.md and autosave.model.schema promise, from the spec alone."""
    if spec["hook"] is not None:
        return spec["hook"]
    if spec["base"] is not None:
        return "extends"
    if spec["getattr"]:
        return "fields"
    if not spec["has_dict"]:
        return "slots"
    if not spec["slots"] and not spec["transient"]:
        return "dict"
    return "fields"


def make_class(spec):
    name = f"Generated{next(_counter)}"
    base = spec["base"]
    slots = list(spec["slots"])
    body = {"__module__": __name__, "__qualname__": name}
    if base in (str, int, tuple):       # variable-size C layouts take no slots
        slots = []
        spec["slots"] = []
    if not spec["has_dict"] or slots:
        body["__slots__"] = tuple(slots) + (("__dict__",) if spec["has_dict"] else ())
    if base in (str, int, tuple) and not spec["has_dict"]:
        body["__slots__"] = ()
    if spec["transient"]:
        body["__autosave_transient__"] = ("t",)
    if spec["getattr"]:
        body["__getattr__"] = _no_such_attribute
    if spec["hook"] == "state":
        body["__getstate__"] = _getstate
        body["__setstate__"] = _setstate
    elif spec["hook"] == "reduce":
        body["__reduce__"] = _reduce
    cls = type(name, (base or object,), body)
    setattr(sys.modules[__name__], name, cls)
    return cls


def _no_such_attribute(self, name):
    raise AttributeError(name)


def _getstate(self):
    return {"payload": 1}


def _setstate(self, state):
    pass


def _reduce(self):
    return (type(self), ())


def instance(cls, spec):
    base = spec["base"]
    obj = {None: lambda: object.__new__(cls), list: lambda: cls([1, 2]),
           dict: lambda: cls({"k": 1}), set: lambda: cls({3}), tuple: lambda: cls((4,)),
           str: lambda: cls("s"), int: lambda: cls(5),
           collections.deque: lambda: cls([6], 4)}[base]()
    for s in spec["slots"]:
        object.__setattr__(obj, s, s * 2)
    if spec["has_dict"]:
        obj.__dict__["d"] = [1]
        if spec["transient"]:
            obj.__dict__["t"] = "not saved"
    return obj


@settings(max_examples=FUZZ or 150)
@given(specs)
def test_the_schema_decides_each_layout_once_and_every_consumer_follows(spec):
    cls = make_class(spec)
    schema = schema_of(cls)
    layout = expected_layout(spec)
    assert schema.layout == layout
    obj = instance(cls, spec)
    data = autosave.dumps(obj)
    types, records, _ = records_of(data)
    entry = next(e for e in types if e[0] == f"{__name__}.{cls.__qualname__}"
                 or e[0] == "autosave.reduce")
    # The save writes what the layout says: its fields, in its order.
    if layout == "slots":
        assert entry[2] == list(spec["slots"])
    elif layout == "dict":
        assert entry[2] == ["d"]
    elif layout in ("fields", "extends"):
        expected = list(spec["slots"]) + (["d"] if spec["has_dict"] else [])
        assert entry[2] == expected
    elif layout == "state":
        assert entry[2] == list(fmt.STATE_FIELDS)
    else:
        assert entry[0] == "autosave.reduce"
    # The loader fills by the same decision.
    if layout in ("slots", "dict", "fields", "extends"):
        plan = plan_for(0, entry)
        assert isinstance(plan, InstancePlan)
        fill = getattr(plan.fill, "__func__", None)
        assert (fill is InstancePlan.fill_slots) == (layout == "slots")
        assert (fill is InstancePlan.fill_dict) == (layout == "dict")
    # autosave-codegen generates for slots (with fields) and dict layouts hashed by
    # value; these classes hash by identity, so those layouts are saved in batches,
    # by columns the engine reads itself, with no code.
    assert schema_of(cls).batched == (layout in ("slots", "dict"))
    assert kind_of(cls) not in ("slots", "dict")
    if layout in ("slots", "dict"):          # the same class hashed by value: code
        ns = {"__hash__": lambda self: 1, "__module__": cls.__module__}
        if layout == "slots":
            ns["__slots__"] = ()
        hashed = type(cls.__name__ + "Hashed", (cls,), ns)
        assert schema_of(hashed).layout == layout and not schema_of(hashed).batched
        assert (kind_of(hashed) in ("slots", "dict")) == (
            layout == "dict" or bool(spec["slots"]))
    copy = autosave.loads(data)
    assert type(copy) is cls
    for s in spec["slots"]:
        if layout not in ("state", "reduce"):
            assert object.__getattribute__(copy, s) == s * 2
    if spec["has_dict"] and layout not in ("state", "reduce"):
        assert copy.__dict__.get("d") == [1] and "t" not in copy.__dict__


def test_a_c_object_is_refused_with_the_schemas_advice():
    class Accessor(property):        # a C layout that says nothing of how to rebuild it
        pass

    Accessor.__module__ = __name__
    assert schema_of(Accessor).layout == "c-object"
    try:
        autosave.dumps([Accessor(len)])
    except autosave.SaveError as e:
        assert "wraps a C object (builtins.property)" in str(e)
        assert "give the class __getstate__/__setstate__" in str(e)
        assert e.path == "root[0]"
    else:
        raise AssertionError("a C object was saved")
