"""Standard-library types games hold, the extension API, and refusals at save time;
with forged records attacking each adapter's load side."""

import array
import builtins
import collections
import decimal
import itertools
import logging
import os
import re
import time
import types
import typing

import pytest

import autosave
from autosave import FormatError, IncompatibleSaveError, SaveError, UntrustedTypeError, dumps, loads
from forge import Forge

autosave.allow("test_stdlib_types")

T = typing.TypeVar("T")


class Box(typing.Generic[T]):
    def __init__(self, item=None):
        self.item = item


class Tagged(complex):
    pass


class Holder:
    helper = staticmethod(len)


def roundtrip(obj):
    data = dumps(obj)
    out = loads(data)
    assert dumps(out) == data
    return out


def test_values_round_trip():
    cyc = itertools.cycle("abc")
    next(cyc), next(cyc), next(cyc), next(cyc)
    tagged = Tagged(1, 2)
    tagged.label = "north"
    state = {
        "ctx": decimal.Context(prec=6, rounding=decimal.ROUND_DOWN, traps=[decimal.Overflow],
                               flags=[decimal.Inexact]),
        "arr": array.array("i", [1, -2, 3]), "bytes": array.array("B", b"xyz"),
        "re": re.compile(r"(?P<n>\d+)\s", re.M | re.I), "bre": re.compile(rb"\x00+"),
        "struct": time.localtime(0), "stat": os.stat("."), "size": os.terminal_size((80, 24)),
        "static": staticmethod(len), "cls": classmethod(len), "tagged": tagged,
        "box": Box[int](3), "alias": dict[str, list[int]], "logger": logging.getLogger("autosave"),
        "cyc": cyc, "rep": itertools.repeat("x", 2), "chain": itertools.chain([1], (2, 3)),
        "slice": itertools.islice(iter(range(20)), 3, 15, 4),
    }
    out = roundtrip(state)
    assert out["ctx"].prec == 6 and out["ctx"].traps[decimal.Overflow] and out["ctx"].flags[decimal.Inexact]
    assert out["arr"] == state["arr"] and out["bytes"].typecode == "B"
    assert out["re"].match("12 ").group("n") == "12" and out["re"].flags == state["re"].flags
    assert out["bre"].pattern == rb"\x00+"
    assert out["struct"] == state["struct"] and out["struct"].tm_zone == state["struct"].tm_zone
    assert out["stat"] == state["stat"] and out["size"] == state["size"]
    assert type(out["static"]) is staticmethod and out["static"].__func__ is len
    assert type(out["cls"]) is classmethod
    assert type(out["tagged"]) is Tagged and out["tagged"] == 1 + 2j and out["tagged"].label == "north"
    assert out["box"].__orig_class__ == Box[int] and out["box"].item == 3
    assert out["alias"] == dict[str, list[int]]
    assert out["logger"] is logging.getLogger("autosave")
    assert [next(out["cyc"]) for _ in range(4)] == ["b", "c", "a", "b"]
    assert list(out["rep"]) == ["x", "x"] and list(out["chain"]) == [1, 2, 3]
    assert list(out["slice"]) == [3, 7, 11]


def test_chainmap_and_mappingproxy_keep_their_mappings():
    defaults, local = {"hp": 10}, {}
    state = {"defaults": defaults, "local": local, "cm": collections.ChainMap(local, defaults),
             "ro": types.MappingProxyType(defaults)}
    out = roundtrip(state)
    out["defaults"]["hp"] = 3
    assert out["cm"]["hp"] == 3 and out["ro"]["hp"] == 3
    out["cm"]["mp"] = 1
    assert out["local"] == {"mp": 1}


def test_an_iterator_in_a_cycle_is_not_consumed_by_the_load():
    source = iter([1, 2, 3, 4])
    cyc = itertools.cycle(source)
    next(cyc)
    out = roundtrip({"src": source, "cyc": cyc})
    assert next(out["src"]) == 2                   # shared, untouched by the load
    assert next(out["cyc"]) == 3


def test_builtin_types_and_exception_classes_are_values():
    values = [v for v in vars(builtins).values() if isinstance(v, type)
              and v.__module__ == "builtins"] + [type(None), type(...), type(NotImplemented)]
    out = roundtrip(values)
    assert all(a is b for a, b in zip(out, values)) and len(out) == len(values)


def test_nested_classes_and_classes_of_main_resolve_by_name():
    out = roundtrip([Outer.Inner, Outer.Inner.Deepest, Outer.Inner.Deepest()])
    assert out[0] is Outer.Inner and type(out[2]) is Outer.Inner.Deepest


class Outer:
    class Inner:
        class Deepest:
            pass


# -- the extension API -------------------------------------------------------------------

class Money:
    def __init__(self, currency, cents):
        self.currency, self.cents = currency, cents

    def __eq__(self, other):
        return (self.currency, self.cents) == (other.currency, other.cents)


autosave.register(Money, save=lambda m: [m.currency, m.cents], load=Money, args=(str, int))


def test_register_saves_a_type_through_its_own_functions():
    purse = [Money("EUR", 250), Money("GBP", 3)]
    out = roundtrip({"purse": purse, "again": purse})
    assert out["purse"] == purse and out["again"] is out["purse"]


def test_register_checks_the_parts_before_load_sees_them():
    f = Forge()
    f.rec("test_stdlib_types.Money", "EUR", f.rec("builtins.list"))
    with pytest.raises(FormatError, match="part 1 of a test_stdlib_types.Money record must be int"):
        loads(f.bytes())
    f = Forge()
    f.rec("test_stdlib_types.Money", "EUR")
    with pytest.raises(FormatError, match="holds 2 parts"):
        loads(f.bytes())


# -- refused at save time, with the object path --------------------------------------------

Made = type("Made", (), {})
Renamed = type("Original", (), {})


class ReducesToAFunction:
    def __reduce__(self):
        return (os.getcwd, ())


def test_what_a_load_would_refuse_is_refused_at_save_time_with_its_path():
    with pytest.raises(SaveError, match=r"root\['x'\]\[1\]: .*cannot be found again by its name"):
        dumps({"x": [0, Renamed()]})
    with pytest.raises(SaveError, match=r"root\['purse'\]\[1\]: .*calling the function posix.getcwd"):
        dumps({"purse": [0, ReducesToAFunction()]})
    assert type(roundtrip(Made())) is Made          # its name reaches it: fine
    with pytest.raises(SaveError, match=r"root\['m'\]\[0\]: .*binds a builtin_function_or_method .*by hand"):
        dumps({"m": [types.MethodType(len, 1)]})


# -- forged records ------------------------------------------------------------------------

def forged(name, *payload):
    f = Forge()
    f.rec(name, *payload)
    return loads(f.bytes())


@pytest.mark.parametrize("name, payload, error", [
    ("decimal.Context", ("6", "ROUND_UP", -99, 99, 1, 0, "Inexact", None), FormatError),
    ("decimal.Context", (-6, "ROUND_UP", -99, 99, 1, 0, None), FormatError),
    ("decimal.Context", (6, "ROUND_UP", -99, 99, 1, 0, "SystemExit", None), FormatError),
    ("decimal.Context", (6, "ROUND_SIDEWAYS", -99, 99, 1, 0, None), FormatError),
    ("decimal.Context", (6, "ROUND_UP", -99, 99, 1, 0), FormatError),
    ("array.array", ("i", b"abc"), FormatError),
    ("array.array", ("x", b""), FormatError),
    ("re.Pattern", ("a+", re.DEBUG), FormatError),
    ("re.Pattern", ("a" * 20_000, 0), FormatError),
    ("re.Pattern", ("(", 0), FormatError),
    ("autosave.structseq", ("os.system", 1, 2, {}), FormatError),
    ("autosave.structseq", ("time.struct_time", 1, 2, {}), FormatError),
    ("logging.Logger", ("never created: not a name",), IncompatibleSaveError),
    ("builtins.staticmethod", (3,), FormatError),
    ("itertools.repeat", (1, "many"), FormatError),
    ("itertools.islice", (None, 0, None, 0, 0), FormatError),
])
def test_forged_standard_library_records_are_refused(name, payload, error):
    with pytest.raises(error):
        forged(name, *payload)


def test_a_saved_logger_is_restored_as_getlogger_gives_it():
    """A name of identifiers is created as logging.getLogger would (pickle does the
    same); anything else, or past the cap on loggers a load creates, creates nothing."""
    from autosave.model.adapters import stdlib_more
    before = set(logging.Logger.manager.loggerDict)
    for name in ("made by a file", "a..b", "x" * 300, "../etc"):
        with pytest.raises(IncompatibleSaveError):
            forged("logging.Logger", name)
    assert set(logging.Logger.manager.loggerDict) == before
    made = forged("logging.Logger", "made.by.a.file")
    assert made is logging.getLogger("made.by.a.file")
    created = stdlib_more.LoggerAdapter.created
    stdlib_more.LoggerAdapter.created = stdlib_more.MAX_NEW_LOGGERS
    try:
        with pytest.raises(IncompatibleSaveError):
            forged("logging.Logger", "one.too.many")
        assert "one.too.many" not in logging.Logger.manager.loggerDict
    finally:
        stdlib_more.LoggerAdapter.created = created


def test_iterators_inside_itertools_records_must_be_iterators():
    f = Forge()
    big = f.rec("builtins.dict", *range(20))
    f.rec("itertools.cycle", big, False)
    with pytest.raises(FormatError, match="expected an iterator"):
        loads(f.bytes())


def test_chainmap_and_proxy_records_hold_mappings():
    f = Forge()
    f.rec("collections.ChainMap", f.rec("builtins.list"))
    with pytest.raises(FormatError, match="not a mapping"):
        loads(f.bytes())
    f = Forge()
    f.rec("builtins.mappingproxy", f.rec("builtins.list"))
    with pytest.raises(FormatError, match="not a mapping"):
        loads(f.bytes())


def test_generic_alias_records_hold_classes_and_never_subscript():
    f = Forge()
    f.rec("autosave.generic_alias", f.rec("builtins.list"), True)
    with pytest.raises(FormatError, match="holds a class"):
        loads(f.bytes())


def test_reduce_into_builtin_value_types_takes_plain_values_only():
    f = Forge()
    f.reduce(f.glob("builtins.str"), args=[f.rec("builtins.list")])
    with pytest.raises(UntrustedTypeError, match="plain values only"):
        loads(f.bytes())
    f = Forge()
    f.reduce(f.glob("builtins.int"), args=["12", 10])
    assert loads(f.bytes()) == 12


class Pouch:
    """Saved through __reduce__, holding what cannot be saved."""
    def __init__(self, items):
        self.items = items

    def __reduce__(self):
        return (Pouch, (self.items,), {"owner": "x"})


autosave.reconstructor(Pouch)          # a library's class: constructible once registered


def test_errors_inside_a_reduce_value_give_the_real_path():
    import threading
    with pytest.raises(SaveError) as e:
        dumps({"x": {"purse": [0, Pouch([1, threading.Lock()])]}})
    assert e.value.path == "root['x']['purse'][1].<args>[0][1]", e.value.path


def test_advice_for_c_objects_is_advice_that_works():
    import threading
    autosave.allow("_thread")               # what older versions advised: no help
    with pytest.raises(SaveError, match=r"_thread.lock wraps a C object .*autosave.register"):
        dumps({"lock": threading.Lock()})


def test_more_stateful_itertools_continue_without_being_consumed_by_the_load():
    import operator
    source = iter(range(10))
    drop = itertools.dropwhile(_below_3, iter(range(8)))
    next(drop)
    acc = itertools.accumulate(iter([1, 2, 3, 4]), operator.add, initial=10)
    next(acc), next(acc)
    state = {"take": itertools.takewhile(_below_3, source), "src": source, "drop": drop,
             "star": itertools.starmap(pow, iter([(2, 3), (3, 2)])),
             "comp": itertools.compress(iter("abcd"), iter([1, 0, 1, 1])), "acc": acc,
             "zl": itertools.zip_longest(iter([1]), iter([2, 3]), fillvalue="-")}
    out = roundtrip(state)
    assert next(out["src"]) == 0                    # shared with takewhile, not advanced
    assert list(out["take"]) == [1, 2] and list(out["drop"]) == [4, 5, 6, 7]
    assert list(out["star"]) == [8, 9] and list(out["comp"]) == ["a", "c", "d"]
    assert list(out["acc"]) == [13, 16, 20] and list(out["zl"]) == [(1, 2), ("-", 3)]


def _below_3(x):
    return x < 3


def test_forged_itertools_records_hold_iterators_and_functions():
    f = Forge()
    f.rec("itertools.takewhile", f.glob("builtins.len"), f.rec("builtins.list", 1, 2), 0)
    with pytest.raises(FormatError, match="expected an iterator"):
        loads(f.bytes())
    f = Forge()
    f.rec("itertools.starmap", 5, f.rec("builtins.list_iterator", f.rec("builtins.list"), 0), None)
    with pytest.raises(FormatError, match="holds a function"):
        loads(f.bytes())
