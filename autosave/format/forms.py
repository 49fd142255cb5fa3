"""The engine's core data, named: cells, references, records and batches, as the save
builds them and the wire carries them (docs/format.md, "Records" and "Batches").

They are plain lists and ints, told apart by ``__class__`` on the hot path (an
``isinstance`` or a wrapper class per reference would cost the loops a call per
object): this module is where each form is named, made and recognised, and the
engine's signatures use these aliases.

* a **cell** (``Cell``), per object a save has met: ``[None]`` mentioned, not visited
  yet; ``[False]`` in progress (an ancestor: a reference to it closes a cycle);
  ``[index]`` its record is written.
* a **batch reference** (``BatchRef``), a batch object's memo entry: the int
  ``-serial``; a record being built holds it as the 1-tuple ``(-serial,)``, which the
  walk maps to ``[index]`` once the batches are numbered (saving/columns.py).
* a **reference** (``Reference``) in a written record: ``[r]``, a back-reference
  ``r < 0`` relative to the record holding it, or an absolute index ``r >= 0`` to a
  later record (a cycle; the record's type index is then marked, ``~t``).
* a **record** (``Record``): ``[t, *parts]``, parts inline values or references.
* a **batch** (``Batch``): ``[t, n, *columns]``, the objects of one type entry.

Only the functions below turn cells into references.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Cell = list[Any]            # [None] | [False] | [int]
BatchRef = int              # -serial
Reference = list[int]       # [r]
Record = list[Any]          # [t, *parts]
Batch = list[Any]           # [t, n, *columns]

UNVISITED, IN_PROGRESS = None, False     # what a cell holds before its index


def new_cell() -> Cell:
    """The cell of an object just mentioned: visited later."""
    return [UNVISITED]


def is_written(cell: Cell) -> bool:
    """Whether the cell's object has its record (its index is known)."""
    return cell[0].__class__ is int


def is_reference(value: Any) -> bool:
    """Whether a record's part is a reference (else an inline value)."""
    return value.__class__ is list


def emitter(records: list[Record], cells: list[Cell]) -> Callable[[Cell, Record], None]:
    """emit(cell, rec): append ``rec`` = ``[t, parts...]``, whose parts are inline values,
    cells and batch objects' references, as a record of ``records``; put its record
    number into the object's ``cell`` and the cell into ``cells`` (the walk moves record
    numbers past the batch objects when it ends). A cell holding a record number becomes
    a back-reference; a cell holding a batch object's reference becomes that reference;
    a cell still in progress (an ancestor) stays in the record, to receive the
    ancestor's index, and marks the record as closing a cycle."""
    append, keep = records.append, cells.append

    def emit(cell: Cell, rec: Record) -> None:
        here = len(records)
        cycle = None
        rec = [c if c.__class__ is not list else
               [x - here] if (x := c[0]).__class__ is int else
               (cycle := c) if x is False else x for c in rec]
        if cycle is not None:
            rec[0] = ~rec[0]
        cell[0] = here
        append(rec)
        keep(cell)

    return emit


def reference(there: int, here: int) -> Reference:
    """The reference from record ``here`` (or the root, ``here`` = the record count) to
    record ``there``: a back-reference to an earlier one, an absolute index for a later one."""
    return [there - here] if there < here else [there]


def marked(t: int) -> int:
    """The type index of a record that refers to a later record (a cycle)."""
    return ~t if t >= 0 else t


def target(r: int, here: int) -> int:
    """The absolute record index of reference ``[r]`` held by record ``here`` (the root
    counts from the record count); callers check that it is in range."""
    return r + here if r < 0 else r
