"""How a suspended coroutine is saved and loaded.

Record ``autosave.coroutine``: ``[function, label, name, value, name, value, ...]``.

* ``function`` a reference to an ``autosave.global`` record naming the decorated
  function (``module.Qual.name``), so loading resolves it under the trust rules of any
  other name: only functions of the allowed namespaces, nothing imported outside them;
* ``label`` the resume point (``<start>``, ``<done>``, or a label from ``labels``);
* then the locals live at that point, by name, sorted by name; hidden locals (open loop
  iterators, ``with`` managers, ``yield from`` delegates, pending exceptions) have names
  like ``iter@1f3a2c``. Unbound locals are left out.

Loading a label the function no longer has, or without a local the point needs, is an
``IncompatibleSaveError`` naming the function and the label; a parameter the save
lacks that has a default (added since) gets its default.
"""

import itertools
import types
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, itemgetter
from types import CellType
from typing import Any


from ..format import kernels
from ..model.adapters.base import ADAPTERS_BY_TYPE, Adapter, register_adapter
from ..model.adapters.callables import GLOBAL
from ..model.advice import local_coroutine
from ..errors import FormatError, IncompatibleSaveError, SaveError
from ..checks.loadcheck import class_attribute
from ..model.reconstructors import PASSIVE_ITERATORS
from ..model.registry import REGISTRY, SAFE_STDLIB_NAMES
from .runtime import DONE, RUNNING, UNBOUND, Coroutine, Loading
from .specs import FunctionRef, spec_of


class CoroutineAdapter(Adapter):
    name = "autosave.coroutine"
    types = ()
    mutable, has_fill, has_loaded_hook = True, True, True
    # its fill keeps references and reads their types only (the hidden locals' checks):
    # it goes in its turn, never held back until the batch objects are filled
    reads_parts = False
    # names -> the load plan of a batch of coroutines saving them (coroutines/batches.py)
    batch_plan: Any = None

    def parts(self, obj):
        spec = obj._spec
        state = obj._state
        plan = _SAVE_PLANS.get((spec, state))
        if plan is None:
            if state == RUNNING:
                raise SaveError(f"coroutine {obj.__qualname__}() is running: the save was "
                                f"taken inside its own step; save between steps")
            plan = _save_plan(spec, state)
        label, entries = plan
        out = [spec.ref, label]
        append = out.append
        d = obj.__dict__
        for saved, attr, check in entries:
            value = d[attr]
            if value is not UNBOUND:         # unbound locals are left out
                if check is not None and type(value) not in check[0] and not check[1](value):
                    _check_saved_hidden(spec, label, saved, value)      # raises
                append(saved)
                append(value)
        return out

    def batch_row(self, obj):
        """(saved names, row) of a coroutine written in a batch (format 7): the row is
        its function, its label, then the value of each name, in the names' order (what
        ``parts`` gives, its frame read at once)."""
        spec, state = obj._spec, obj._state
        plan = _ROW_PLANS.get((spec, state))
        if plan is None:
            plan = _row_plan(self, obj, spec, state)
        label, names, read, checks, shapes = plan
        values = read(obj.__dict__)
        for pos, saved, check in checks:
            value = values[pos]
            if type(value) not in check[0] and value is not UNBOUND and not check[1](value):
                _check_saved_hidden(spec, label, saved, value)      # raises
        if not any(map(is_, values, repeat(UNBOUND))):
            return names, [spec.ref, label, *values]
        bound = bytes(map(is_not, values, repeat(UNBOUND)))
        shape = shapes.get(bound)
        if shape is None:         # the names bound: one tuple per shape (columns.py)
            shape = shapes[bound] = tuple(compress(names, bound))
        return shape, [spec.ref, label, *compress(values, bound)]

    def batch_rows(self, objs: list[Any]) -> list[Any]:
        """``batch_row`` of each of ``objs``, the same answers in the same order, worked
        out a (function, resume point) at a time: each frame read by its plan's
        itemgetter, then the hidden locals' checks and the unbound locals found a
        column at a time. A column a check does not pass outright is left to
        ``batch_row``, object by object, which raises what a record's save raises."""
        keys = list(map(_SPEC_STATE, objs))
        for key in dict.fromkeys(keys):        # plans first seen first: the same error
            if key not in _ROW_PLANS:
                _row_plan(self, objs[keys.index(key)], *key)
        if keys.count(keys[0]) == len(keys):
            rows = _plan_rows(_ROW_PLANS[keys[0]], keys[0][0], objs)
            return list(map(self.batch_row, objs)) if rows is None else rows
        groups: dict[Any, list[int]] = {}
        for k, key in enumerate(keys):
            groups.setdefault(key, []).append(k)
        out: list[Any] = [None] * len(objs)
        for key, ks in groups.items():
            rows = _plan_rows(_ROW_PLANS[key], key[0], [objs[k] for k in ks])
            if rows is None:
                return list(map(self.batch_row, objs))
            for k, row in zip(ks, rows):
                out[k] = row
        return out

    def labels(self, parts):
        """The function, the label, then each saved local's name and value."""
        yield ".<function>"
        yield ".<label>"
        for name in parts[2::2]:
            yield ".<name>"
            yield f".<local {name}>"

    def allocate(self, rec):
        if len(rec) < 3 or len(rec) % 2 == 0:
            raise ValueError("a coroutine record holds a function, a label and name/value pairs")
        return Loading.__new__(Loading)

    def fill(self, obj, vals):
        layout = layout_of(vals)
        layout.fill(obj, vals[4::2])
        obj.__class__ = layout.placeholder

    def create(self, rec, vals):
        if len(rec) < 3 or len(rec) % 2 == 0:
            raise ValueError("a coroutine record holds a function, a label and name/value pairs")
        fn = vals[1]
        layout = None
        if type(fn) is types.FunctionType:   # hashed by identity: no class's __hash__ runs
            layouts = _LAYOUTS.get(fn)
            if layouts is not None:
                # Looked up by the record's own label and names: inline values of
                # msgpack's types (a reference is a list, which no key holds), so the
                # lookup runs no code; a layout is only made from exact strs.
                try:
                    layout = layouts.get((rec[2], tuple(rec[3::2])))
                except TypeError:            # a reference in place of a name
                    raise ValueError("a coroutine's label and local names are strings") \
                        from None
        if layout is None:
            layout = layout_of(vals)
        obj = _new(layout.placeholder)
        layout.fill(obj, vals[4::2])
        return obj


    def record_reader(self, objs):
        """``create`` from the record itself, for a load whose built objects are
        ``objs`` (the loader's, in index order, so a reference ``[j]`` is ``objs[j]``,
        and ``objs[-k]`` the k-th before): only the function and the values are
        resolved; the label and names are read as the record holds them. An
        ``IndexError`` (a reference ahead) sends the record to the loader's general
        path."""
        create = self.create

        def from_record(rec):
            if len(rec) < 3 or len(rec) % 2 == 0:
                raise ValueError("a coroutine record holds a function, a label and "
                                 "name/value pairs")
            fn = rec[1]
            if fn.__class__ is list:
                fn = objs[fn[0]]
            if type(fn) is types.FunctionType:   # hashed by identity: no code runs
                layouts = _LAYOUTS.get(fn)
                if layouts is not None:
                    try:
                        layout = layouts.get((rec[2], tuple(rec[3::2])))
                    except TypeError:            # a reference in place of a name
                        raise ValueError("a coroutine's label and local names are "
                                         "strings") from None
                    if layout is not None:
                        obj = _new(layout.placeholder)
                        layout.fill(obj, [objs[v[0]] if v.__class__ is list else v
                                          for v in rec[4::2]])
                        return obj
            return create(rec, [objs[v[0]] if v.__class__ is list else v for v in rec])

        return from_record


_new = object.__new__


# (spec, state) -> (label, [(saved name, frame attribute, hidden local's check)])
_SAVE_PLANS: dict[tuple[object, int], tuple[str, list[tuple[str, str, Any]]]] = {}


def _save_plan(spec, state):
    """What a save of a coroutine of ``spec`` parked at ``state`` writes, decided once:
    its label, and each saved name, its frame attribute and, for a hidden local a load
    types, (the types it accepts outright, its check)."""
    if "<locals>" in spec.ref.__qualname__:
        raise SaveError(local_coroutine(spec.ref.__module__, spec.ref.__qualname__))
    entries = [(saved, attr, (_quick(_kind(saved)), _HIDDEN_KINDS[_kind(saved)][1])
                if "@" in saved and _kind(saved) in _HIDDEN_KINDS else None)
               for saved, attr in spec.saved[state]]
    plan = _SAVE_PLANS[spec, state] = (spec.labels[state], entries)
    return plan


# (spec, state) -> (label, every saved name, fn(frame dict) -> their values as a tuple,
# [(position, saved name, hidden local's check)], {which are bound: the names saved})
_ROW_PLANS: dict[tuple[object, int], tuple[str, tuple[str, ...], Any, list[Any],
                                          dict[bytes, tuple[str, ...]]]] = {}


def _row_plan(adapter, obj, spec, state):
    """``_save_plan`` for a batch's row: the frame's entries read by one itemgetter."""
    plan = _SAVE_PLANS.get((spec, state))
    if plan is None:
        if state == RUNNING:
            adapter.parts(obj)                  # raises, as a record's save does
        plan = _save_plan(spec, state)
    label, entries = plan
    names = tuple(saved for saved, _, _ in entries)
    attrs = [attr for _, attr, _ in entries]
    read = (itemgetter(*attrs) if len(attrs) > 1 else
            (lambda d, get=itemgetter(*attrs): (get(d),)) if attrs else (lambda d: ()))
    checks = [(pos, saved, check) for pos, (saved, _, check) in enumerate(entries)
              if check is not None]
    found = _ROW_PLANS[spec, state] = (label, names, read, checks,
                                       {b"\x01" * len(names): names})
    return found


_SPEC_STATE = attrgetter("_spec", "_state")
_DICT = attrgetter("__dict__")
_UNBOUND_TYPE = type(UNBOUND)


def _plan_rows(plan: Any, spec: Any, objs: list[Any]) -> list[Any] | None:
    """``batch_row`` of frames parked at one plan's resume point, or None when a hidden
    local's column holds a value its check's quick types do not cover."""
    label, names, read, checks, shapes = plan
    try:
        values = list(map(read, map(_DICT, objs)))
    except KeyError:               # batch_row raises it for the first such frame
        return None
    columns = list(zip(*values)) if names else []
    kinds = [kernels.kinds(column) for column in columns]
    for pos, _, check in checks:
        if not kinds[pos] - {_UNBOUND_TYPE} <= check[0]:
            return None
    ref = spec.ref
    unbound = [pos for pos, found in enumerate(kinds) if _UNBOUND_TYPE in found]
    if not unbound:
        return [(names, [ref, label, *row]) for row in values]
    # which of those columns each frame has bound: a row's shape follows from it alone
    patterns = list(zip(*(map(is_not, columns[pos], repeat(UNBOUND)) for pos in unbound)))
    chosen = {}
    for pattern in dict.fromkeys(patterns):
        bound = [True] * len(names)
        for pos, held in zip(unbound, pattern):
            bound[pos] = held
        key = bytes(bound)
        shape = shapes.get(key)
        if shape is None:         # the names bound: one tuple per shape (columns.py)
            shape = shapes[key] = tuple(compress(names, key))
        chosen[pattern] = (shape, b"" if all(pattern) else key)
    out = []
    for row, pattern in zip(values, patterns):
        shape, key = chosen[pattern]
        out.append((shape, [ref, label, *(compress(row, key) if key else row)]))
    return out


def _quick(kind):
    """The types a hidden local of ``kind`` holds that its check accepts outright."""
    return PASSIVE_ITERATORS if kind in ("iter", "from") else frozenset()


# -- the load's decisions, by name: the fill above and the release gate both use them ----

MAX_LAYOUTS = 256       # layouts kept per function: a file may hold any names at all
CELLS = "cells@"        # frame entry: attributes holding a saved cell to unwrap on load


# decorated function -> {(label, names): _Layout}; a function is hashed by identity
_LAYOUTS: dict[types.FunctionType, dict[tuple[str, tuple[str, ...]], "_Layout"]] = {}


def layout_of(vals):
    """The ``_Layout`` of a coroutine record's built values (function, label, then
    name/value pairs): found by the function and the names, made on first sight."""
    fn, label = vals[1], vals[2]
    names = tuple(vals[3::2])
    # str only, before they are hashed as a key (no class's __hash__ runs)
    if type(label) is not str or not all(type(n) is str for n in names):
        raise ValueError("a coroutine's label and local names are strings")
    return layout_for(fn, label, names)


def layout_for(fn, label, names):
    """The ``_Layout`` of ``fn`` (the resolved function) parked at ``label`` (a str)
    with the saved ``names`` (strs): found again, or made on first sight."""
    if type(fn) is types.FunctionType:    # hashed by identity: no class's __hash__ runs
        layouts = _LAYOUTS.get(fn)
        if layouts is not None:
            layout = layouts.get((label, names))
            if layout is not None:
                return layout
    spec = coroutine_spec(fn)
    layout = _Layout(spec, label, names)
    if type(fn) is types.FunctionType:
        layouts = _LAYOUTS.setdefault(fn, {})
        if len(layouts) < MAX_LAYOUTS:
            layouts[label, names] = layout
    return layout


class _Layout:
    """How the records of one function, label and sequence of saved names fill a frame:
    everything about them that does not depend on the values, decided once (the
    function's resume point, each name's frame attribute, the hidden locals to type,
    the parameters' defaults, the cells to make)."""

    def __init__(self, spec, label, names):
        self.spec, self.label = spec, label
        state = self.state = resume_state(spec, label)
        slots = spec.slots[state]
        attrs, keep, hidden, cells, plain = [], [], [], [], []
        found = set()
        for pos, saved in enumerate(names):
            slot = slots.get(saved)
            if slot is None:
                continue                   # no longer live there: dropped
            if saved in found:             # the last value of a name repeated wins
                pos_before = keep[attrs.index(slot[0])]
                keep.remove(pos_before)
                attrs.remove(slot[0])
            attr, _, holds_cell = slot
            attrs.append(attr)
            keep.append(pos)
            found.add(saved)
            if "@" in saved and _kind(saved) in _HIDDEN_KINDS:
                hidden.append((pos, saved, _quick(_kind(saved)),
                               _HIDDEN_KINDS[_kind(saved)][1]))
            (cells if holds_cell else plain).append(attr)
        self.dropped = len(keep) != len(names)
        self.keep, self.attrs = keep, tuple(attrs)
        self.hidden, self.cells, self.plain = hidden, cells, plain
        self.defaults = []
        for saved, default in spec.param_defaults.items():
            slot = slots.get(saved)
            if slot is not None and saved not in found:
                self.defaults.append((slot[0], default, slot[2]))
                found.add(saved)
        missing = missing_local(spec, state, found)
        if missing is not None:
            raise IncompatibleSaveError(
                f"coroutine {spec.qualified_name} at label {label!r} needs the local "
                f"{missing!r}, which the save does not hold")
        self.empty_cells = tuple(attr for saved, (attr, _, holds_cell) in slots.items()
                                 if saved not in found and holds_cell)
        self.unbound = dict.fromkeys(spec.frame, UNBOUND) if state != DONE else None
        self.placeholder, self.qualname = spec.placeholder, spec.qualname

    def fill(self, obj, values):
        """Fill frame ``obj`` (of the placeholder class) from the values saved under
        this layout's names. It reads the values' types only: what they hold may not be
        filled yet (a list a loop iterates is filled after the records)."""
        for pos, saved, quick, accepts in self.hidden:
            value = values[pos]
            if type(value) not in quick and not accepts(value):
                check_hidden(self.spec, self.label, saved, value)      # raises
        d = obj.__dict__
        if self.unbound is not None:
            d.update(self.unbound)
        if self.dropped:
            values = [values[pos] for pos in self.keep]
        d.update(zip(self.attrs, values))
        for attr in self.cells:
            if type(d[attr]) is not CellType:
                d[attr] = CellType(d[attr])
        if self.plain and CellType in kernels.kinds(values):
            # a local saved as a cell that is a plain local now: its contents, read once
            # the cell is filled (Loading.__autosave_loaded__)
            d[CELLS] = tuple(attr for attr in self.plain if type(d[attr]) is CellType)
        for attr, default, holds_cell in self.defaults:
            d[attr] = CellType(default) if holds_cell else default
        for attr in self.empty_cells:
            d[attr] = CellType()
        obj.__qualname__ = self.qualname
        obj._state = self.state


def _kind(saved):
    return saved.partition("@")[0].rstrip("0123456789")


def coroutine_spec(fn):
    """The CoroutineSpec of the function a record names (resolved already), or the
    IncompatibleSaveError a load raises."""
    spec = spec_of(fn)
    if spec is None:
        raise IncompatibleSaveError(
            f"the save holds a coroutine of {getattr(fn, '__module__', '?')}."
            f"{getattr(fn, '__qualname__', fn)!r}, which is not an @autosave.coroutine "
            f"function any more")
    return spec


def resume_state(spec, label):
    """The state a coroutine saved at ``label`` resumes in, or IncompatibleSaveError."""
    state = spec.state_of.get(label)
    if state is None:
        raise IncompatibleSaveError(
            f"coroutine {spec.qualified_name} was saved at label {label!r}, which it no "
            f"longer has; its labels are {sorted(spec.state_of)}")
    return state


def missing_local(spec, state, held):
    """The first local the resume point ``state`` needs that the saved names ``held``
    lack (a cell comes back empty; an optional one stays unbound), or None."""
    for saved, (_, required, holds_cell) in spec.slots[state].items():
        if saved not in held and required and not holds_cell \
                and saved not in spec.param_defaults:
            return saved
    return None


COROUTINE = register_adapter(CoroutineAdapter())
# the function reference is written as a plain global name
ADAPTERS_BY_TYPE[FunctionRef] = GLOBAL


# -- hidden locals: only what the transform itself could have stored there ---------------
#
# A loop's iterator, a ``with`` manager, a ``yield from`` delegate and a pending
# exception are used by the coroutine's own code the moment the game resumes it:
# ``next(it)``, ``type(m).__exit__(m, ...)``, ``d.send(v)``, ``raise e``. A file must not
# choose what runs there, so each is typed on load (docs/security.md). Hoisted
# temporaries (``tmp@``) hold the values of an expression's operands and stay untyped:
# they are what the code computed, of any type, like any other local.

def _trusted_code(cls, name):
    fn = class_attribute(cls, name)
    return (type(fn) is types.FunctionType
            and REGISTRY.is_allowed_module(getattr(fn, "__module__", None))
            and REGISTRY.is_allowed_module(cls.__module__))


def _types(*samples):
    return frozenset(map(type, samples))


# Iterators that only pass on what other iterators give (their parts, as their adapter
# saves them, are checked in turn), and those that call a function as they go, which
# may be a pure standard-library one only (``map(abs, xs)``, ``filter(None, xs)``).
# ``chain`` and ``tee`` hold sources a load cannot see into.
_WRAPPERS = _types(enumerate(()), zip(), reversed(()), itertools.islice((), 0),
                   itertools.cycle(()), itertools.zip_longest(()), itertools.compress((), ()),
                   itertools.product(), itertools.permutations(()),
                   itertools.combinations((), 0),
                   itertools.combinations_with_replacement((), 0))
_CALLING = _types(map(len, ()), filter(None, ()), itertools.starmap(len, ()),
                  itertools.takewhile(len, ()), itertools.dropwhile(len, ()),
                  itertools.filterfalse(None, ()), itertools.accumulate(()),
                  itertools.groupby(()))
MAX_ITERATOR_PARTS = 10_000       # iterators inside one loop's iterator, checked
_PURE: list[int] = []             # ids of the pure standard-library callables


def _pure_callable(value):
    if not _PURE:
        _PURE.append(frozenset(id(REGISTRY.resolve(name, "global"))
                               for name in SAFE_STDLIB_NAMES))
    return value is None or id(value) in _PURE[0]


def _is_loop_iterator(value):
    """An iterator a ``for`` loop's ``iter(x)`` could have stored that runs no code of a
    file's choosing when advanced: over a container (the passive iterators), a coroutine,
    an iterator class of the game's own code, ``enumerate``, ``zip``, ``islice``... of
    such, or ``map`` / ``filter``... of a pure standard-library function over such."""
    todo, seen = [value], 0
    while todo:
        v = todo.pop()
        cls = type(v)
        seen += 1
        if seen > MAX_ITERATOR_PARTS:
            return False
        if cls in PASSIVE_ITERATORS or isinstance(v, Coroutine) or _trusted_code(cls, "__next__"):
            continue
        if cls not in _WRAPPERS and cls not in _CALLING:
            return False
        for part in ADAPTERS_BY_TYPE[cls].parts(v):
            if class_attribute(type(part), "__next__") is not None:
                todo.append(part)
            elif cls in _CALLING and callable(part) and not _pure_callable(part):
                return False
    return True


def _is_pending(value):
    """What a ``finally`` holds while it runs: None, a jump, or an exception."""
    if value is None or isinstance(value, BaseException):
        return True
    # the jump's kind is an exact str before it is compared: no class's __eq__ runs
    return (type(value) is tuple and 1 <= len(value) <= 2 and type(value[0]) is str
            and value[0] in ("return", "break", "continue")
            and (len(value) == 2) == (value[0] == "return"))


_HIDDEN_KINDS = {
    "iter": ("a loop iterator", _is_loop_iterator),
    "from": ("a yield-from delegate", _is_loop_iterator),
    "with": ("a with-statement manager",
             lambda v: _trusted_code(type(v), "__enter__") and _trusted_code(type(v), "__exit__")),
    "pending": ("a pending finally outcome", _is_pending),
    "exc": ("a handled exception", lambda v: isinstance(v, BaseException)),
}


def check_hidden(spec, label, saved, value):
    found = _HIDDEN_KINDS.get(_kind(saved))
    if found is None:
        return                      # tmp@...: a hoisted operand, any value
    what, accepts = found
    if not accepts(value):
        raise FormatError(
            f"coroutine {spec.qualified_name} at label {label!r}: its hidden local "
            f"{saved!r} must be {what}, the save holds a {type(value).__qualname__}")


def _check_saved_hidden(spec, label, saved, value):
    """What a load would refuse in a hidden local, refused at save time with the fix."""
    try:
        check_hidden(spec, label, saved, value)
    except FormatError as e:
        fix = ("iterate a list instead (for x in list(...)): a load resumes a loop only "
               "over a container, a coroutine or the game's own iterator, never one that "
               "calls a function of the game's as it goes" if saved.startswith(("iter@", "from@"))
               else "keep the object the game's own")
        raise SaveError(f"{e}; {fix}") from None
