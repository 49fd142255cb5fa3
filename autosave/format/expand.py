"""A save's batches expanded into the records they stand for (docs/format.md,
"Batches"), for the tools that read a file without loading it: ``autosave dump`` and
``inspect``, the compat checker, diff and the corpus. The loader never expands: it
fills batches in place (autosave/loading)."""

from itertools import accumulate, chain, islice
from typing import Any

from ..errors import FormatError
from .forms import Record
from .wire import (COLUMN_INLINE, COLUMN_REFS, array_entry, check_lengths,
                   coroutine_entry, decode, iterator_entry, merge_mixed)


def records_of(data: bytes | bytearray | memoryview) -> tuple[list[Any], list[Record], Any]:
    """(types, records, root) of a save with every object a record, for the tools that
    read a file without loading it (``autosave dump``, ``inspect``, the compat checker):
    each batch object becomes the record it would be without batches (its type index
    and its column values; a list's items), placed at its index, so record i is the
    object of index i and references mean what they mean in the file. Checked as a
    load checks the shapes a tool relies on: column lengths, the lists' lengths."""
    types, records, root, _, _, batches = decode(data)
    if not batches:
        return types, records, root
    expanded: list[Any] = []
    coroutines = set()
    arrays = _Arrays(types)
    for b, batch in enumerate(batches):
        n = batch[1]
        columns = [_column_values(b, column) for column in islice(batch, 2, None)]
        entries = _entries_type(types, batch[0], len(columns))
        if coroutine_entry(types[batch[0]]):
            # [function, label, name, value, ...]: the record each stands for, the
            # names (the type entry's fields) said again in each
            names = types[batch[0]][2]
            if len(columns) != 2 + len(names) or any(len(c) != n for c in columns):
                raise FormatError(f"batch {b}: coroutines with {len(names)} names have "
                                  f"{2 + len(names)} columns of {n} values")
            coroutines.add(batch[0])
            expanded.extend([batch[0], fn, label, *chain.from_iterable(zip(names, values))]
                            for fn, label, *values in zip(*columns))
        elif array_entry(types[batch[0]]):
            expanded.extend(arrays.records(b, batch[0], n, columns))
        elif iterator_entry(types[batch[0]]):     # each row its record's payload
            if any(len(c) != n for c in columns):
                raise FormatError(f"batch {b}: a column does not hold {n} values")
            expanded.extend([batch[0], *row] for row in zip(*columns))
        elif entries:
            if len(columns) != entries:
                raise FormatError(f"batch {b} must have {entries} columns")
            lengths, *items = columns
            try:
                if len(lengths) != n:
                    raise FormatError(f"{len(lengths)} lengths for {n} objects")
                for column in items:
                    check_lengths(lengths, len(column), "entries")
            except FormatError as e:
                raise FormatError(f"batch {b}: {e}") from None
            if entries == 3:           # a dict record's payload: keys and values alternating
                items = [list(chain.from_iterable(zip(*items)))]
                lengths = [2 * k for k in lengths]
            it = iter(items[0])
            expanded.extend([batch[0], *islice(it, k)] for k in lengths)
        else:
            if any(len(c) != n for c in columns):
                raise FormatError(f"batch {b}: a column does not hold {n} values")
            rows = zip(*columns) if columns else [()] * n
            expanded.extend([batch[0], *row] for row in rows)
    for t in coroutines | arrays.entries:   # as a record's type entry: the names (the
        types[t] = [types[t][0], types[t][1], []]   # dtype) are in the records
    records = expanded + records
    dtypes = arrays.dtype_records(len(records), records)
    if type(root) is list and root and type(root[0]) is int and root[0] < 0:
        # the root refers back from the end of the records: past the dtypes now
        root = [root[0] - (len(dtypes) - len(records))]
    return types, dtypes, root


class _Arrays:
    """Batches of small numpy arrays and scalars (version 8) as the ``numpy.ndarray``
    records ``[t, dtype, flags, data, *shape]`` and ``numpy.scalar`` records ``[t,
    dtype, value]`` they stand for: each distinct descr a ``numpy.dtype`` record ``[t,
    descr]``, placed after every other record."""

    def __init__(self, types: list[Any]):
        self.types = types
        self.entries: set[int] = set()
        self.descrs: dict[str, int] = {}          # descr -> its place among the dtypes

    def records(self, b: int, t: int, n: int, columns: list[Any]) -> list[Any]:
        fields = self.types[t][2]
        if self.types[t][0] == "numpy.scalar":      # [t, dtype, value]
            if len(fields) != 1 or len(columns) != 1 or len(columns[0]) != n:
                raise FormatError(f"batch {b}: numpy scalars have one column of {n} "
                                  f"values")
            self.entries.add(t)
            dtype = [~self.descrs.setdefault(fields[0], len(self.descrs))]
            return [[t, dtype, value] for value in columns[0]]
        ndim = fields[1] if len(fields) == 2 else None
        if type(ndim) is not str or not ndim.isdigit() or len(columns) != 2 + int(ndim) \
                or any(len(c) != n for c in columns):
            raise FormatError(f"batch {b}: numpy arrays of {ndim} dimensions have "
                              f"{ndim} + 2 columns of {n} values")
        self.entries.add(t)
        dtype = [~self.descrs.setdefault(fields[0], len(self.descrs))]   # set below
        return [[t, dtype, flags, data, *shape] for flags, data, *shape in zip(*columns)]

    def dtype_records(self, first: int, records: list[Any]) -> list[Any]:
        """records with the dtype records appended, and the arrays' references to
        them (``~place`` until their index is known) made indices."""
        if not self.descrs:
            return records
        names = [entry[0] if type(entry) is list and entry else None for entry in self.types]
        if "numpy.dtype" in names and self.types[names.index("numpy.dtype")][2] == []:
            t = names.index("numpy.dtype")
        else:
            t = len(self.types)
            self.types.append(["numpy.dtype", 1, []])
        for rec in records[:first]:
            if rec[0] in self.entries and type(rec[1]) is list and rec[1][0] < 0:
                rec[1] = [first + ~rec[1][0]]
        return records + [[t, descr] for descr in self.descrs]


def _entries_type(types, t, ncolumns):
    """How many columns a batch of type t has if its objects are lists, tuples or
    namedtuples (2: lengths, items) or dicts (3: lengths, keys, values); 0 for
    instances (a column per field; an enum's one column of names is a record's
    payload as well). A namedtuple's type entry has no fields, and its batch two
    columns."""
    entry = types[t]
    name = entry[0] if type(entry) is list and entry else None
    if type(name) is not str:
        return 0
    entries = {"builtins.list": 2, "builtins.tuple": 2, "builtins.dict": 3}.get(name, 0)
    if not entries and ncolumns == 2 and len(entry) == 3 and entry[2] == []:
        return 2
    return entries


def _column_values(b, column):
    """A column's values with references as absolute ``[index]`` arrays."""
    if column[0] == COLUMN_INLINE:
        return column[1]
    differences = column[-1]
    if not all(type(v) is int for v in differences):
        raise FormatError(f"batch {b}: a column's references are not ints")
    refs = [[j] for j in accumulate(differences)]
    if column[0] == COLUMN_REFS:
        return refs
    try:
        return merge_mixed(column[1], column[2], refs)
    except FormatError as e:
        raise FormatError(f"batch {b}: {e}") from None
