"""Save: objects written in batches a row each (format 7; docs/format.md, "Batches"):
suspended coroutines, one batch per sequence of saved names, and the list and range
iterators of loops. The adapter gives each object's row (``batch_row``: the saved
names and the values, or None for an object that stays a record); a batch's columns
are its rows read down, taken when the walk takes its batches' columns
(``columns.Batches.step``).
"""

from itertools import compress, repeat
from operator import is_, itemgetter
from typing import Any

_first, _second = itemgetter(0), itemgetter(1)


class RowFiler:
    """Files the objects of one class into the row batches of its adapter: one at a
    time as the walk visits it (``file_row``), or a column's at once (``file_rows``,
    which ``Batches.meet_class`` calls: never in ``by_class``). The record handler,
    for the objects that are no row, is made (and its type entry) when one first is."""

    def __init__(self, batches: Any, cls: type, adapter: Any, record: Any, batch: type):
        self.batches, self.adapter, self.make_record = batches, adapter, record
        self.Batch = batch             # columns.Batch
        # an adapter whose rows depend on the walk (a save's out-of-band policy) says so
        row_for = getattr(adapter, "batch_row_for", None)
        self.batch_row = adapter.batch_row if row_for is None else row_for(batches.walker)
        # a column's objects at once where the adapter can (the same answers as
        # batch_row's, in order)
        # (the row function is closed over, never self: a filer referring to itself
        # would be a cycle the collector must find after every save)
        batch_row = self.batch_row
        self.batch_rows = getattr(adapter, "batch_rows", None) or \
            (lambda objs: list(map(batch_row, objs)))
        self.name = getattr(adapter, "batch_name", adapter.name)
        # rows of inline values only (arrays: their bytes may be out-of-band markers,
        # which the encoder writes): no pass over the columns for references
        self.inline = getattr(adapter, "batch_inline", False)
        self.record: Any = None
        batches.row_files[cls] = self.file_rows

    def batch_of(self, names: tuple[str, ...], row: list[Any]) -> Any:
        batches, adapter = self.batches, self.adapter
        batch = batches.row_batches.get((adapter, names))
        if batch is None:
            batch = batches.row_batches[adapter, names] = self.Batch(
                batches.walker.index_of((adapter, names), self.name, 1, names),
                len(row), None, len(row) if self.inline else 0)
            batch.get = rows_of(batch)
            batches.all.append(batch)
        return batch

    def file_row(self, obj: Any) -> Any:
        found = self.batch_row(obj)
        if found is None:
            if self.record is None:
                self.record = self.make_record()
            return self.record(obj)
        names, row = found
        batches = self.batches
        batch = self.batch_of(names, row)
        cell = batches.memo[id(obj)]
        cell[0] = (batches.add(batch, obj),)
        batch.rows.append(row)
        batches.stale.append(cell)
        return None

    def file_rows(self, objs: list[Any], keys: Any = None) -> None:
        """objs met in a column, none met before: filed a batch (a shape) at a time, in
        the order met; those that are records walked after them."""
        found = self.batch_rows(objs)
        rest: Any = ()
        if any(map(is_, found, repeat(None))):
            rest = [obj for obj, f in zip(objs, found) if f is None]
            objs = [obj for obj, f in zip(objs, found) if f is not None]
            found = [f for f in found if f is not None]
            keys = None
        if found:
            self.file_found(objs, found, keys)
        if rest:
            self.batches.walker.mention_in_order(rest)

    def file_found(self, objs: list[Any], found: list[Any], keys: Any) -> None:
        # an adapter gives one names tuple per shape it meets (equal shapes of other
        # origins may be other tuples: a group each, one batch)
        batches = self.batches
        shaped = list(map(_first, found))
        if shaped.count(shaped[0]) == len(shaped):
            distinct = [shaped[0]]
        else:
            ids = list(map(id, shaped))
            distinct = [shaped[ids.index(i)] for i in dict.fromkeys(ids)]
        for names in distinct:
            if len(distinct) == 1:
                group, got = objs, found
            else:
                chosen = list(map(is_, shaped, repeat(names)))
                group, got, keys = list(compress(objs, chosen)), \
                    list(compress(found, chosen)), None
            batch = self.batch_of(names, got[0][1])
            batches.add_all(batch, group, keys)
            if batches.filed[0] is group:
                batch.rows += map(_second, got)
            else:        # a repeated object: filed once, the first time
                by_id = dict(zip(map(id, group), map(_second, got)))
                batch.rows += map(by_id.__getitem__, map(id, batches.filed[0]))


def rows_of(batch: Any) -> Any:
    """A row batch's ``get``: the columns of the objects filed since the last step,
    their rows read down (each row is let go once read)."""
    def get(objs: list[Any]) -> list[list[Any]]:
        rows, batch.rows = batch.rows, []
        assert len(rows) == len(objs)
        return list(map(list, zip(*rows)))
    return get
