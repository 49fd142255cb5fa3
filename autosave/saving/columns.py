"""Save: the objects written in batches, a column per field (docs/format.md, "Batches").

Plain instances (a ``slots`` or ``dict`` layout, hashed by identity, or by value when
every field holds an inline value: a load builds those whole), exact lists, dicts
keyed by inline values and tuples of inline values and such objects are not written one
record each: each type has one *batch*, and each of its fields one *column* holding
that field of every object of the batch, in order (lists, tuples and dicts: their
lengths, then their items, or keys and values, one after the other). Columns are read
off the objects, and what a column refers to is looked up, one pass each (``kernels``,
in C where the extension was built); only objects met for the first time cost a step
each. An object of a batch needs no record before the ones referring to it:
a load allocates every batch object first, so nothing refers to one "too early".

The walk (``walk.Walker``) meets batch objects in records and in columns; each is
numbered in the order it is met, and its memo entry is the int ``-serial``: its
*reference* (an int, not a cell: no object per reference but the int, and columns'
references index the tail as they are). A record holds it as ``(-serial,)``, which
``mention`` and ``Walker.cell_of`` make, so that the walk's cells and ``SetOrder`` read
it as they read a record's cell. When the walk ends and every batch's
size is known, ``Batches.number`` maps serials to indices (``tail[-serial]``), and the
references held by columns and records are written as indices.
"""

from collections import deque
from itertools import chain, compress, repeat
from operator import is_, itemgetter, not_
from typing import Any

from ..format.wire import (ABSENT, COLUMN_INLINE, COLUMN_MIXED, COLUMN_REFS, INLINE_TYPES,
                     inline_column)
from ..model import dispatch
from ..model.adapters import ADAPTERS_BY_TYPE
from .batchable import (batch_kind, batchable, dict_columns, enum_names, inline_fields,
                        inline_keys, slot_columns, value_batchable)
from .paths import placed, placed_cause
from .rows import RowFiler
from ..model.registry import REGISTRY

_ABSENT_TYPE = type(ABSENT)
_first = itemgetter(0)
_INLINE_COLUMN = INLINE_TYPES | {_ABSENT_TYPE}


class Batch:
    """The objects of one type entry, in discovery order, and their columns so far."""
    __slots__ = ("t", "objs", "serials", "done", "segments", "get", "lengths", "rows")

    def __init__(self, t, nfields, get, lengths=0):
        self.t = t
        self.objs = []
        self.serials = []              # runs of the serials of objs, in order: ranges,
                                       # or 1-tuples (an object filed alone)
        self.done = 0                  # objects whose columns are taken
        self.segments = [[] for _ in range(nfields)]   # per column: [(kind, values)]
        self.get = get                 # objs -> one sequence per column
        self.rows = []                 # a row per object, for row batches (row_handler)
        # how many columns come first that hold inline values only: lengths (len()'s
        # ints), and a dict batch's keys (its dicts are those keyed by inline values)
        self.lengths = lengths


class Batches:
    """The batches of one walk, in the order their types were first met."""

    def __init__(self, walker):
        self.walker = walker
        self.memo = walker.memo
        self.loops = walker.loops
        self.by_class = {}             # class -> Batch, or (class -> {shape: Batch})
        self.all = []
        self.serial = 0                # batch objects met so far
        self.tail = None               # a cell's value -> its index (make_tail)
        self.stale = []                # cells of batch objects met as records would be
        # Classes whose every instance is a batch object; a tuple of them and of
        # inline values can be built before any record, so it goes in a batch too.
        self.plain = set(INLINE_TYPES)
        # A dict goes in a batch when its keys are inline (they hash the same before
        # and after the fills); a tuple when its items are plain.
        self.fits = {dict: inline_keys, tuple: self.plain_items}
        self.whole = set()             # classes whose batch objects a load builds whole
        self.unset = 0
        # A dict for memo (the Python loops) is keyed by id(): objects of batched
        # classes hashed and compared by identity are keyed by themselves instead, in
        # a second table: a column of them is looked up without an id() each, and
        # without comparing int keys, which touches each key (twice the memory
        # traffic). The C loops' memo (a Memo) keys every object by its address,
        # which costs neither: it needs no second table.
        self.memo_by_id = self.memo.__class__ is dict
        self.keyed = set()
        self.by_object = {}
        self.decided = set()           # classes a column has met
        self.filed = ((), None)        # the objects add_all filed last, and their serials
        self.row_batches = {}          # (adapter, names) -> its Batch
        self.row_files = {}            # class filed by row_handler -> fn(objs, keys)

    # -- meeting objects -------------------------------------------------------------

    def batch_of(self, cls, kind, schema):
        """The batch of cls (for dict layouts: a function of the shape to its batch)."""
        walker = self.walker
        if kind == "slots":
            slots = schema.saved_slots
            batch = Batch(walker.index_of((cls, slots), schema.name, schema.version, slots),
                          len(slots), slot_columns(cls, slots, self.loops))
            self.all.append(batch)
            return batch
        if kind == "dict":
            shapes = {}

            def shaped(shape):
                batch = shapes.get(shape)
                if batch is None:
                    batch = shapes[shape] = Batch(
                        walker.index_of((cls, shape), schema.name, schema.version, shape),
                        len(shape), dict_columns(shape, self.loops))
                    self.all.append(batch)
                return batch
            return shaped
        if kind == "enum":             # one column: the members' names
            batch = Batch(walker.index_of(cls, schema.name, schema.version), 1, enum_names, 1)
        elif kind == "extends":        # a namedtuple: lengths, then the items
            batch = Batch(walker.index_of((cls, ()), schema.name, schema.version, ()), 2,
                          self.loops.list_columns, 1)
        elif cls is dict:
            batch = Batch(walker.index_of(ADAPTERS_BY_TYPE[dict]), 3, self.loops.dict_entries,
                          2)
        else:                          # lists, tuples: lengths, then the items
            batch = Batch(walker.index_of(ADAPTERS_BY_TYPE[cls]), 2, self.loops.list_columns,
                          1)
        self.all.append(batch)
        return batch

    def handler(self, cls, kind, schema):
        """The walk's handler for cls: files the object in its batch, writes no record."""
        batch = self.batch_of(cls, kind, schema)
        if cls not in REGISTRY.asset_classes:     # assets are told apart one by one
            self.by_class[cls] = batch
            self.plain.add(cls)
            if self.memo_by_id and cls.__hash__ is object.__hash__ and \
                    cls.__eq__ is object.__eq__:
                self.keyed.add(cls)
        memo, add = self.memo, self.add
        stale = self.stale.append
        if kind == "dict":
            def file_dict(obj):
                cell = memo[id(obj)]
                cell[0] = (add(batch(tuple(obj.__dict__)), obj),)
                stale(cell)
            return file_dict

        def file(obj):
            cell = memo[id(obj)]         # what records met so far hold: now the reference
            cell[0] = (add(batch, obj),)
            stale(cell)                  # columns may hold it too: numbered at the end
        return file

    def some_handler(self, cls, record):
        """The walk's handler for dicts and tuples, which go in their batch when they
        fit (``fits``) and are records, made by ``record``, when they do not."""
        batch = self.batch_of(cls, dispatch.ADAPTER, None)
        if cls not in REGISTRY.asset_classes:     # assets are told apart one by one
            self.by_class[cls] = batch
        memo, add, stale = self.memo, self.add, self.stale.append
        fits = self.fits[cls]

        def file_or_record(obj):
            if not fits(obj):
                return record(obj)
            cell = memo[id(obj)]
            cell[0] = (add(batch, obj),)
            stale(cell)
        return file_or_record

    def value_handler(self, cls, kind, schema, record):
        """The walk's handler for a class hashed by value: its instances whose fields
        are all inline values go in its batch (built whole when a load allocates
        them), the others are records, made by ``record``."""
        batch = self.batch_of(cls, kind, schema)
        if cls not in REGISTRY.asset_classes:     # assets are told apart one by one
            self.by_class[cls] = batch
            self.whole.add(cls)
        fits = self.fits[cls] = inline_fields(kind, schema, cls, self.loops)
        memo, add, stale = self.memo, self.add, self.stale.append
        shaped = kind == "dict"

        def file_or_record(obj):
            if not fits(obj):
                return record(obj)
            cell = memo[id(obj)]
            cell[0] = (add(batch(tuple(obj.__dict__)) if shaped else batch, obj),)
            stale(cell)
        return file_or_record

    def row_handler(self, cls, adapter, record):
        """The walk's handler for a type whose objects are written in batches a row
        each (coroutines, loop iterators: ``rows.RowFiler``)."""
        return RowFiler(self, cls, adapter, record, Batch).file_row

    def add(self, batch, obj):
        serial = self.serial = self.serial + 1
        ref = -serial
        self.memo[id(obj)] = ref
        if obj.__class__ in self.keyed:
            self.by_object[obj] = ref
        batch.objs.append(obj)
        serials = batch.serials
        if serials and serials[-1][-1] == serial - 1:
            last = serials[-1]
            serials[-1] = range(last[0], serial + 1)
        else:                          # batches met in turn: a run each (see number)
            serials.append((serial,))
        return ref

    def add_all(self, batch, objs, keys=None):
        """File objects met for the first time, all of batch's type, at C speed, each
        once (objs may repeat one). ``keys``: the objs' keys in the memo, when the
        lookup that missed them made them."""
        if objs and objs[0].__class__ in self.keyed:     # one class: see meet_class
            table, keys = self.by_object, objs           # and only there: cell_of
        else:
            table = self.memo
            if keys is None:
                keys = list(map(id, objs)) if self.memo_by_id else objs
        serial = self.serial
        distinct = self.loops.file_all(table, keys, objs, serial)
        if distinct is not None:       # a repeat: each was filed once, the first
            objs = distinct
        n = len(objs)
        self.serial += n
        serials = range(serial + 1, serial + n + 1)
        self.filed = (objs, serials)   # see filed_as
        batch.objs += objs
        if n:                          # a run of serials: see number()
            batch.serials.append(serials)

    def meet(self, objs, classes, keys=None):
        """Objects a column refers to that the walk has not met, in order, each met
        once (they may repeat): filed in batches in bulk where they share a batched
        class, else mentioned. ``classes``: the column's (a superset of theirs);
        ``keys``: the objs' memo keys, if a lookup made them."""
        # one class in the column (the common case): no pass to find the objects' own
        if len(classes) == 1:
            self.meet_class(next(iter(classes)), objs, keys)
            return
        kinds, groups = self.loops.group_kinds(objs)
        if len(kinds) == 1:
            self.meet_class(kinds[0], objs, keys)
            return
        # Classes filed in batches (decided already: ``decide_all``): each in bulk,
        # in the order met; the rest are walked in order (their handlers, and type
        # entries, made as they come).
        by_class, row_files = self.by_class, self.row_files
        rest = [cls for cls in kinds if cls not in by_class and cls not in row_files]
        for cls, group in zip(kinds, groups):
            if cls in by_class or cls in row_files:
                self.meet_class(cls, group)
        if len(rest) == 1:
            self.walker.mention_in_order(groups[kinds.index(rest[0])])
        elif rest:
            if len(rest) < len(kinds):
                objs = list(compress(objs, map(set(rest).__contains__, map(type, objs))))
            self.walker.mention_in_order(objs)

    def batched(self, cls):
        """Whether cls is filed in batches (without making its handler): what
        ``Walker.plain_handler_for`` decides, asset classes aside."""
        kind = batch_kind(cls)
        return kind is not None and (batchable(cls, *kind) or cls in self.fits
                                     or value_batchable(cls, *kind))

    def decide(self, cls, obj):
        """Make cls's handler, which files cls in by_class if it is batched; obj, one
        of its instances, is what an error names."""
        try:
            self.walker.handler_of(cls)
        except Exception as e:
            raise placed(self.walker, obj, e) from placed_cause(e)

    def meet_class(self, cls, objs, keys=None):
        walker = self.walker
        if cls not in self.by_class:
            self.decide(cls, objs[0])
        file_rows = self.row_files.get(cls)
        if file_rows is not None:       # coroutines, loop iterators: a row each
            file_rows(objs, keys)
            return
        batch = self.by_class.get(cls)
        if batch is not None:
            fits = self.fits.get(cls)
            if fits is not None and not (      # only those that fit: see some_handler
                    cls is tuple and set(map(type, chain.from_iterable(objs))) <= self.plain):
                fit = self.loops.inline_keyed(objs) if cls is dict else list(map(fits, objs))
                if fit is not None and not all(fit):
                    fitting = list(compress(objs, fit))
                    if fitting:
                        self.file_class(batch, fitting)
                    self.walker.mention_in_order(list(compress(objs, map(not_, fit))))
                    return
            self.file_class(batch, objs, keys)
            return
        walker.mention_in_order(objs)

    def refer_parts(self, tindex: int, parts: Any) -> list[Any] | None:
        """The record ``[tindex, *parts]`` of a container whose objects are all met here
        first and all go in batches (a set of frozen positions, a dict of them, a list
        of agents): filed in bulk, as ``meet_class`` files a column's, and referred to
        by their references. None, with nothing filed, unless visiting them one by one
        would have filed each in its batch, in this order, and made the same decisions
        in the same order: then the bytes are the same either way."""
        loops = self.loops
        kinds = loops.kinds(parts)
        if kinds <= _INLINE_COLUMN:
            return [tindex, *parts]
        mask = inline = None
        objs = parts
        if not kinds.isdisjoint(_INLINE_COLUMN):
            mask, inline, objs = loops.split(parts, _INLINE_COLUMN)
        ids, cells, new = loops.look_up_ids(self.memo, objs)
        if cells.count(None) != len(cells):
            return None                  # met before: the walk visits them in its order
        keyed = self.keyed
        if not keyed.isdisjoint(kinds) and any(map(
                self.by_object.__contains__, [o for o in objs if o.__class__ in keyed])):
            return None
        classes, groups = loops.group_kinds(objs)
        batches = self.bulk_batches(classes, groups, objs)
        if batches is None:
            return None
        for batch, group in zip(batches, groups):
            self.file_class(batch, group)
        if not keyed.isdisjoint(kinds):
            self.remember(objs)
        refs = [(ref,) for ref in loops.fill_missing(self.memo, ids, cells)]
        return [tindex, *(refs if mask is None else loops.merge_mixed(mask, inline, refs))]

    def bulk_batches(self, classes: list[type], groups: list[list[Any]],
                     objs: Any) -> list[Any] | None:
        """The batch of each class, if every object fits its batch (``some_handler``,
        ``value_handler``), deciding the classes and asking ``fits`` in the order a
        visit of objs one by one would (a tuple's ``fits`` decides its items' classes);
        None at the first that does not fit or is no batch's."""
        by_class, fits, row_files = self.by_class, self.fits, self.row_files
        if len(classes) == 1:
            batch = self.bulk_batch(classes[0], objs[0], by_class, row_files)
            fit = fits.get(classes[0])
            try:
                ok = batch is not None and (fit is None or all(map(fit, objs)))
            except Exception:            # the visit one by one raises it, placed
                return None
            return [batch] if ok else None
        found: dict[type, Any] = {}
        for obj in objs:
            cls = obj.__class__
            if cls not in found:
                batch = found[cls] = self.bulk_batch(cls, obj, by_class, row_files)
                if batch is None or batch.__class__ is not Batch:
                    return None          # shapes' batches made in another order
            fit = fits.get(cls)
            try:
                if fit is not None and not fit(obj):
                    return None
            except Exception:
                return None
        return [found[cls] for cls in classes]

    def bulk_batch(self, cls: type, obj: Any, by_class: dict[type, Any],
                   row_files: dict[type, Any]) -> Any:
        """cls's batch, deciding cls now if its first object (obj) is met now; None if
        it has none (records, assets) or is written a row each."""
        if cls not in by_class and cls not in self.walker.handlers:
            self.decide(cls, obj)
        return None if cls in row_files else by_class.get(cls)

    def file_class(self, batch, objs, keys=None):
        """File objs, all of one class filed in batches, in its batch (dict layouts:
        the batch of each one's shape)."""
        if batch.__class__ is Batch:
            self.add_all(batch, objs, keys)
            return
        distinct, which = self.loops.shapes(objs)
        if which is None:
            self.add_all(batch(distinct[0]), objs, keys)
            return
        for i, shape in enumerate(distinct):      # by shape, each in the order met
            self.add_all(batch(shape), list(compress(objs, map(i.__eq__, which))))

    def plain_items(self, t):
        """Whether tuple t's items all exist before any record: inline values, objects
        of classes always in batches, and objects a load builds whole as it allocates
        them (hashed by value with inline fields, namedtuples, enum members)."""
        kinds = set(map(type, t))
        if kinds <= self.plain:
            return True
        kinds -= self.plain
        undecided = kinds - self.whole
        for v in t:            # met here first: its handler decides now, in item order
            cls = v.__class__
            if cls in undecided:
                undecided.discard(cls)
                if cls not in self.walker.handlers and self.built_whole(cls):
                    self.decide(cls, v)
        if not kinds <= self.whole:
            return False
        fits = self.fits
        return all(fits[v.__class__](v) for v in t if v.__class__ in kinds)

    @staticmethod
    def built_whole(cls):
        """Whether cls's objects with inline fields are built whole in a batch."""
        kind = batch_kind(cls)
        return kind is not None and value_batchable(cls, *kind)

    # -- columns -----------------------------------------------------------------------

    def step(self):
        """Take the columns of every batch object met since the last step; False when
        there were none. What they refer to is met, and walked, in turn."""
        taken = False
        for batch in self.all:
            if batch.done == len(batch.objs):
                continue
            taken = True
            objs = batch.objs[batch.done:]
            batch.done = len(batch.objs)
            columns = zip(batch.segments, batch.get(objs))
            for _ in range(batch.lengths):     # inline: no pass to find their types
                segments, column = next(columns)
                segments.append((COLUMN_INLINE, column))
            for segments, column in columns:
                segments.append(self.classify(column))
                self.walker.drain()
        return taken

    def classify(self, column):
        """(kind, values) of a stretch of a column, meeting what it refers to; a mixed
        stretch's values are (mask, inline values, objects referred to)."""
        kinds = self.loops.kinds(column)
        if _ABSENT_TYPE in kinds:            # unset slots: a load checks their count
            self.unset += sum(map(is_, column, repeat(ABSENT)))
        if kinds <= _INLINE_COLUMN:
            return COLUMN_INLINE, column
        if kinds.isdisjoint(_INLINE_COLUMN):
            return COLUMN_REFS, self.refer(column, kinds)
        mask, inline, refs = self.loops.split(column, _INLINE_COLUMN)
        return COLUMN_MIXED, (mask, inline, self.refer(refs, kinds - _INLINE_COLUMN))

    def refer(self, objs, kinds):
        """The cells of objs (each holds the object's index once the walk numbers
        everything), meeting the objects the walk has not met yet. ``kinds``: their
        classes."""
        if not kinds <= self.decided:
            self.decide_all(objs, kinds)
        if kinds <= self.keyed:
            cells, new = self.loops.look_up(self.by_object, objs)
            if not new:
                return cells
            self.meet(new, kinds)
            return self.filed_as(objs, new) or \
                self.loops.fill_missing(self.by_object, objs, cells)
        memo = self.memo
        keyed = not kinds.isdisjoint(self.keyed)
        if keyed:                         # some may be in by_object only
            self.remember(objs)
        ids, cells, new = self.loops.look_up_ids(memo, objs)
        if new:
            self.meet(new, kinds, ids if new is objs else None)
            if keyed:                     # filed in bulk just now: in by_object only
                self.remember(new)
            cells = self.filed_as(objs, new) or self.loops.fill_missing(memo, ids, cells)
        # met before but only mentioned ([None]): the walk visits them
        return cells

    def filed_as(self, objs, new):
        """If meeting objs filed them all, in this order, in one batch (a column of
        objects met for the first time, each once: a common one), the range of their
        serials, which stands for their cells: one run, so their indices will be
        consecutive (``number``) and their differences ones. Else None."""
        if len(new) == len(objs) and self.filed[0] is new:
            return self.filed[1]
        return None

    def remember(self, objs):
        """Give the memo the references of the objects of keyed classes among objs
        that the walk has met (in by_object only, until a lookup by id needs them)."""
        mine = list(compress(objs, map(self.keyed.__contains__, map(type, objs))))
        refs = list(map(self.by_object.get, mine))
        self.memo.update(compress(zip(map(id, mine), refs), refs))

    def decide_all(self, objs, kinds):
        """Decide the batched classes among kinds not met in a column before, in the
        order of their first objects (the type table's order, as ``meet`` would): an
        object of a class with no handler yet is new, so this decides nothing early."""
        self.decided |= kinds
        new = {cls for cls in kinds if cls not in self.by_class and self.batched(cls)}
        # where each first is: a search that stops there, not a list of every class
        first = {cls: next(compress(range(len(objs)), map(is_, map(type, objs), repeat(cls))))
                 for cls in new}
        for cls in sorted(new, key=first.__getitem__):
            self.decide(cls, objs[first[cls]])

    def clear(self) -> None:
        """Forget everything, once the batches are written or the walk is let go. A row
        batch's ``get`` refers to its batch (``rows.rows_of``), a cycle of its own; the
        handlers close over these tables, which emptying them breaks."""
        for batch in self.all:
            batch.get = None
        vars(self).clear()

    # -- the end of the walk -------------------------------------------------------------

    def number(self):
        """Give every batch object its index, batches first, in order: ``index`` maps
        a serial to it; the records come after them. Returns how many batch objects
        there are."""
        # serial -> index, for every batch object: objects filed one at a time in
        # batches that interleave make a run each, too many to search per cell
        by_serial = self.by_serial = [0] * (self.serial + 1)
        start = 0
        for batch in self.all:
            runs = batch.serials
            n = len(batch.objs)
            if len(runs) * 8 <= n:          # long runs (filed in bulk): a slice each
                for run in runs:
                    by_serial[run[0]:run[0] + len(run)] = range(start, start + len(run))
                    start += len(run)
            else:                           # short ones: each serial, at C speed
                deque(map(by_serial.__setitem__, chain.from_iterable(runs),
                          range(start, start + n)), 0)
                start += n
        for cell in self.stale:
            cell[0] = by_serial[-cell[0][0]]
        return start

    def index(self, value):
        """The index of what a cell holds once the walk is numbered: a record's index
        as it is, a batch object's serial (-serial) mapped."""
        return value if value >= 0 else self.by_serial[-value]

    def make_tail(self, batched, indices):
        """``tail``, what a cell's value names (``kernels.differences``): tail[i] is i
        for each of the ``indices`` a cell holds (a record's, or a batch object's in a
        stale cell; the first ``batched`` are the batch objects'), and tail[-serial] is
        a batch object's index (``number``'s table, reversed). Made once nothing else
        of the walk's is held (its ints are many)."""
        total = self.serial
        # The records' indices map to themselves; of the batch objects' indices, only
        # those stale cells hold do (an int each for them, not for all).
        tail = self.tail = [0] * batched
        tail += range(batched, indices)
        stale = list(map(_first, self.stale))
        deque(map(tail.__setitem__, stale, stale), 0)
        assert len(self.by_serial) == total + 1
        tail += self.by_serial[:0:-1]          # tail[-serial]: by_serial[serial]
        self.by_serial = None

    def written(self, batched, indices):
        """The batches as the body holds them: [t, n, column...], once the ``indices``
        (the ``batched`` objects' first, then the records') are known. Called again
        after it raised, it starts over (``make_tail`` is done once)."""
        if self.by_serial is not None:
            self.make_tail(batched, indices)
        out = []
        for batch in self.all:
            if not batch.objs:             # every dict or tuple met was a record
                continue
            columns = []
            for segments in batch.segments:
                kinds = {k for k, _ in segments}
                if kinds == {COLUMN_INLINE}:
                    values = segments[0][1]     # taken in one step: as it is (a list or,
                    if len(segments) > 1:       # from a row per object, a tuple)
                        values = _joined([v for _, v in segments])
                    columns.append(inline_column(values))
                elif kinds == {COLUMN_REFS}:
                    columns.append([COLUMN_REFS, self.differences([v for _, v in segments])])
                else:
                    columns.append(self.mixed(segments))
            out.append([batch.t, len(batch.objs), *columns])
        return out

    def differences(self, parts):
        """The index differences that refer to the objects of these parts' cells, in
        order. A part is a list of cells, or a range of serials filed as one run
        (``filed_as``), whose indices follow one another: its differences are ones,
        after the first."""
        out, last, cells = [], 0, []
        for part in parts:
            if part.__class__ is not range:
                cells.append(part)
                continue
            if not part:
                continue
            if cells:
                last = self.cells_after(out, last, cells)
                cells = []
            first = self.tail[-part.start]
            out.append(first - last)
            out += repeat(1, len(part) - 1)
            last = first + len(part) - 1
        if cells:
            self.cells_after(out, last, cells)
        return out

    def cells_after(self, out, last, parts):
        """Append to out the differences of the cells of parts, the first taken from
        index last; returns the index of the last cell (or last, when there is none)."""
        cells = _joined(parts)
        if not cells:
            return last
        differences = self.loops.differences(cells, self.tail)
        differences[0] -= last
        out += differences
        cell = cells[-1]
        return self.tail[cell if cell.__class__ is int else cell[0]]

    def mixed(self, segments):
        masks, inline, refs = [], [], []
        for kind, values in segments:
            if kind == COLUMN_INLINE:
                masks.append(bytes(len(values)))
                inline.append(values)
            elif kind == COLUMN_REFS:
                masks.append(b"\x01" * len(values))
                refs.append(values)
            else:
                masks.append(values[0])
                inline.append(values[1])
                refs.append(values[2])
        return [COLUMN_MIXED, b"".join(masks), _joined(inline),
                self.differences(refs)]


def _joined(parts: list[Any]) -> list[Any]:
    """The items of parts (lists and tuples), in one list: ``+=`` copies each part's
    items at once, where ``list(chain(...))`` takes them one at a time and grows as
    it goes."""
    out: list[Any] = []
    for part in parts:
        out += part
    return out


