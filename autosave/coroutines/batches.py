"""Coroutines written in batches (format version 7; docs/format.md, "Batches").

A batch of coroutines has a type entry ``autosave.coroutine`` whose fields are the
saved names (the locals bound where its coroutines are parked, sorted), and the columns
function, label, then one per name. Each batch object loads as the record
``[function, label, name, value, ...]`` it stands for would (``adapter``), with the same
checks; what a (function, label, names) decides is found once per distinct function
and label of the batch (``adapter._Layout``), and a hidden local's column is typed once
when its values are all of the types its check accepts outright.
"""

import sys
from collections import deque
from itertools import compress, repeat
from types import CellType, FunctionType
from typing import Any

from ..errors import FormatError
from ..format import kernels
from .adapter import COROUTINE, check_hidden, layout_for, layout_of
from .runtime import UNBOUND, Coroutine, Loading

_new = object.__new__
_FUNCTION_KINDS = {FunctionType}
_LABEL_KINDS = {str}
GROUPS_BY_MASK = 8        # distinct (function, label) pairs selected by a pass each


class CoroutineBatchPlan:
    """The plan of a type entry ``autosave.coroutine`` with names: only batches use
    one (a record under it is a FormatError)."""
    name = "autosave.coroutine"
    # the frames' class is set when the load completes (``completed``), not by a hook
    mutable, has_fill, has_loaded_hook, reads_parts, hashes = True, True, False, False, False
    build_finished = fill_finished = None
    batch_rows = True

    def __init__(self, names: list[str]):
        self.names = tuple(names)       # strs: type_entry checked them
        self.plain: list[tuple[list[Any], type]] = []   # (frames, their class), in bulk
        self.one_by_one: list[Any] = []  # frames completed by Loading's own hook

    def completed(self) -> None:
        """The load is complete (every record built and filled, before any
        ``__autosave_loaded__`` hook runs): each frame becomes its function's class,
        its cells unwrapped first where it holds any."""
        for objs, real in self.plain:
            deque(map(setattr, objs, repeat("__class__"), repeat(real, len(objs))), 0)
        for obj in self.one_by_one:
            Loading.__autosave_loaded__(obj)
        self.plain, self.one_by_one = [], []

    def allocate(self, rec: list[Any]) -> Any:
        raise FormatError("a type entry autosave.coroutine with names is for batches "
                          "only; a record names it")

    def build(self, vals: list[Any]) -> Any:
        return self.allocate(vals)

    def fill(self, obj: Any, vals: list[Any]) -> None:
        self.allocate(vals)

    @staticmethod
    def allocate_batch(n: int) -> list[Any]:
        """n frames with no generator protocol, filled with the batch objects."""
        return list(map(_new, repeat(Loading, n)))

    def fill_row(self, obj: Any, row: list[Any]) -> None:
        """Fill one frame from its row ``[_, function, label, value...]``, as its record
        would be filled."""
        vals = [None, row[1], row[2]]
        for name, value in zip(self.names, row[3:]):
            vals += (name, value)
        try:
            layout = layout_of(vals)
            layout.fill(obj, vals[4::2])
        except ValueError as e:
            raise FormatError(str(e)) from None
        obj.__class__ = layout.placeholder
        self.one_by_one.append(obj)

    def fill_rows(self, objs: list[Any], columns: list[list[Any]],
                  refers: list[bool]) -> None:
        """Fill the frames ``objs`` from their columns (function, label, a column per
        name), every value built: one layout per distinct function and label.
        ``refers[i]``: whether column i may hold references (else inline values)."""
        if not objs:
            return
        functions, labels, values = columns[0], columns[1], columns[2:]
        if not kernels.kinds(functions) <= _FUNCTION_KINDS or \
                not kernels.kinds(labels) <= _LABEL_KINDS:
            # as records, one by one: their own errors (a label not a str, a function
            # that is not a coroutine's)
            for k, obj in enumerate(objs):
                self.fill_row(obj, [None, *(column[k] for column in columns)])
            return
        # functions hash by identity, strs by their own hash: no class's code runs (a
        # column of one function, or one label, is told by a count: identity first)
        fn = functions[0]
        if functions.count(fn) == len(functions):
            keys = labels
            distinct = [(fn, labels[0])] if labels.count(labels[0]) == len(labels) else \
                [(fn, label) for label in dict.fromkeys(labels)]
        else:
            keys = list(zip(functions, labels))
            distinct = list(dict.fromkeys(keys))
        refers = refers[2:]
        if len(distinct) == 1:
            self.fill_layout(distinct[0], objs, values, refers)
            return
        if len(distinct) <= GROUPS_BY_MASK:
            for key in distinct:
                chosen = list(map((key[1] if keys is labels else key).__eq__, keys))
                self.fill_layout(key, list(compress(objs, chosen)),
                                 [list(compress(column, chosen)) for column in values],
                                 refers)
            return
        groups: dict[Any, list[int]] = {}
        for k, key in enumerate(keys):
            groups.setdefault(key, []).append(k)
        for key, ks in groups.items():
            self.fill_layout(key if keys is not labels else (distinct[0][0], key),
                             [objs[k] for k in ks],
                             [[column[k] for k in ks] for column in values], refers)

    def fill_layout(self, key: tuple[Any, str], objs: list[Any], values: list[list[Any]],
                    refers: list[bool]) -> None:
        layout = layout_for(*key, self.names)
        if fill_frames(layout, objs, values, refers):
            self.plain.append((objs, layout.placeholder._real))
        else:
            self.one_by_one += objs


def fill_frames(layout: Any, objs: list[Any], values: list[list[Any]],
                refers: list[bool]) -> bool:
    """Fill frames parked under one layout from the columns of its names: the hidden
    locals typed a column at a time, then each frame's ``__dict__`` made whole. Whether
    the frames hold no cell to unwrap when the load completes (``Loading``'s hook):
    then they stay frames of no function's class until the load completes, when they
    take their function's class in bulk (``completed``)."""
    kinds = {}
    for pos, saved, quick, accepts in layout.hidden:
        column = values[pos]
        found = kinds[pos] = kernels.kinds(column)
        if not found <= quick:
            for value in column:
                if type(value) not in quick and not accepts(value):
                    check_hidden(layout.spec, layout.label, saved, value)   # raises
    # a cell is an object: only a column that refers to objects may hold one
    if layout.cells or layout.empty_cells or any(cell for _, _, cell in layout.defaults) \
            or (layout.plain and any(
                CellType in (kinds.get(pos) or kernels.kinds(values[pos]))
                for pos in layout.keep if refers[pos])):
        # cells to make or to unwrap: frame by frame, as records are
        rows = zip(*values) if values else repeat((), len(objs))
        for obj, row in zip(objs, rows):
            layout.fill(obj, list(row))
            obj.__class__ = layout.placeholder
        return False
    n = len(objs)
    # each frame's __dict__ a copy of the layout's (every entry there, unbound), then
    # its saved values set in place: no entry added, no table grown
    template, attrs = frame_of(layout)
    kernels.fill_frames(objs, template, attrs, [values[pos] for pos in layout.keep])
    kernels.fill_slots(_FRAME_SLOTS, objs, [[layout.qualname] * n, [layout.state] * n])
    return True


_FRAME_SLOTS = [Coroutine.__dict__["__qualname__"], Coroutine.__dict__["_state"]]


def frame_of(layout: Any) -> tuple[dict[str, Any], list[str]]:
    """The ``__dict__`` a layout's frames start from (every frame entry unbound, the
    parameters added since at their defaults) and the saved names' entries, made once
    per layout. The entries' names are interned, as the step function's own are: each
    lookup, here and as the coroutine runs, matches by identity."""
    found = layout.__dict__.get("frame_template")
    if found is None:
        template: dict[str, Any] = {sys.intern(attr): UNBOUND
                                    for attr in layout.unbound or ()}
        attrs = [sys.intern(attr) for attr in layout.attrs]
        for attr in attrs:
            template.setdefault(attr, None)
        for attr, default, _ in layout.defaults:
            template[sys.intern(attr)] = default
        found = layout.frame_template = (template, attrs)
    return found


# the load plan of a type entry ``autosave.coroutine`` with names (loading/plans.py)
COROUTINE.batch_plan = CoroutineBatchPlan
