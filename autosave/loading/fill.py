"""Load: the batch objects, allocated before any record and filled from their columns
once the records are built (docs/format.md, "Batches"; the save side is ``columns``).

Allocation is one ``map`` per batch; a column of references is resolved by one ``map``
over the built objects, and set by one ``map`` of the slot's setter (or one
``dict.update`` per object) when the class maps the saved fields straight onto itself.
Anything else (upgrade hooks, defaults, dropped fields, unset slots) goes through the
class plan's own fill, object by object, with the same checks as a record's.
"""

from bisect import bisect_right
from functools import partial
from itertools import accumulate, chain, compress, islice, repeat
from operator import is_

from ..format import kernels
from ..model.adapters import ADAPTERS_BY_NAME
from ..errors import FormatError
from ..format.wire import (ABSENT, COLUMN_CODED, COLUMN_INLINE, COLUMN_REFS, INLINE_TYPES,
                     check_lengths, decoded_column, merge_mixed)
from ..checks.limits import FLOOD_MIN, check_flood
from .plans import EnumPlan, InstancePlan

LIST_PLAN, DICT_PLAN = ADAPTERS_BY_NAME["builtins.list"], ADAPTERS_BY_NAME["builtins.dict"]
TUPLE_PLAN = ADAPTERS_BY_NAME["builtins.tuple"]
ENTRIES = {LIST_PLAN: ("lists", 2), DICT_PLAN: ("dicts", 3), TUPLE_PLAN: ("tuples", 2)}

_ABSENT = type(ABSENT)
_EMPTY_DICT: dict = {}               # never filled: allocate() copies it
_check_dict_flood = partial(check_flood, what="a dict")
_INLINE_VALUES = INLINE_TYPES | {_ABSENT}


def _aligned(mask, index):
    """A mixed column's reference indices placed at their values' positions, None at
    the inline values' (the mask's 0s)."""
    return list(map(next, map((repeat(None), iter(index)).__getitem__, mask)))


def allocate(plans, batches):
    """The batch objects in index order: empty, and the tuples built (from inline
    values and the other batch objects); checks each batch's type and columns."""
    objs, tuples, whole, named, made = [], [], [], [], []
    for b, batch in enumerate(batches):
        t, n = batch[0], batch[1]
        plan = plans[t]
        if getattr(plan, "batch_plan", None) is not None:
            # a batch of a type whose records have an entry of their own (iterators,
            # coroutines saving no names): for this load, its plan is the batches' (a
            # record under it is refused)
            plan = plans[t] = plan.batch_plan(())
        if plan is LIST_PLAN or plan is DICT_PLAN or plan is TUPLE_PLAN:
            what, columns = ENTRIES[plan]
            if len(batch) != 2 + columns:
                raise FormatError(f"batch {b} ({what}) must have {columns} columns, it has "
                                  f"{len(batch) - 2}")
            if plan is TUPLE_PLAN:
                tuples.append((b, len(objs), n))
                objs += repeat(None, n)      # built below, once the others exist
            elif plan is DICT_PLAN:          # copies of {}: no argument parsing, half of dict()'s cost
                objs += map(dict.copy, repeat(_EMPTY_DICT, n))
            else:
                objs += map(plan.types[0], repeat((), n))
        elif type(plan) is InstancePlan and plan.base is None:
            if len(batch) != 2 + plan.nfields:
                raise FormatError(f"batch {b} ({plan.schema.name}) must have "
                                  f"{plan.nfields} columns, it has {len(batch) - 2}")
            if built_whole(plan, batch):
                whole.append((b, len(objs), n))
            objs += map(plan.new, repeat(plan.cls, n))
        elif getattr(plan, "batch_rows", False):     # coroutines: frames, filled later
            if len(batch) != 4 + len(plan.names):
                raise FormatError(f"batch {b} ({plan.name} with {len(plan.names)} names) "
                                  f"must have {2 + len(plan.names)} columns, it has "
                                  f"{len(batch) - 2}")
            objs += plan.allocate_batch(n)
        elif getattr(plan, "build_batch", None) is not None:   # iterators: made below
            if len(batch) != 2 + plan.ncolumns:
                raise FormatError(f"batch {b} ({plan.name}) must have {plan.ncolumns} "
                                  f"columns, it has {len(batch) - 2}")
            made.append((b, len(objs), n, plan))
            objs += repeat(None, n)
        elif type(plan) is EnumPlan:
            if len(batch) != 3:
                raise FormatError(f"batch {b} (enum {plan.cls.__qualname__}) must have 1 "
                                  f"column, it has {len(batch) - 2}")
            objs += enum_members(plan, b, batch, n)
        elif namedtuple_plan(plan):
            if len(batch) != 4:
                raise FormatError(f"batch {b} ({plan.schema.name}) must have 2 columns, "
                                  f"it has {len(batch) - 2}")
            named.append((b, len(objs), n))
            objs += repeat(None, n)          # built below, from inline values only
        else:
            raise FormatError(f"batch {b}: type {t} is not one whose objects are written "
                              f"in batches")
    if whole:
        build_whole(plans, objs, batches, whole)
    if named:
        build_named(plans, objs, batches, named)
    if tuples:
        build_tuples(objs, batches, tuples)
    if made:       # from inline values and lists, all allocated by now
        filler = Filler(None, batches, objs, None)
        filler.any_missing = False
        for b, start, n, plan in made:
            try:
                plan.build_batch(filler, objs, start, n, batches[b])
            except FormatError as e:
                raise FormatError(f"batch {b}: {e}") from None
    return objs


def namedtuple_plan(plan):
    """Whether plan's batches are namedtuples': a tuple subclass with no fields."""
    return type(plan) is InstancePlan and plan.base is tuple and not plan.nfields


def built_whole(plan, batch):
    """Whether a batch's objects are complete as it is allocated, before any record
    (``allocate``; the fill passes them by): enum members and namedtuples always, from
    inline values; instances when their class hashes by value (records may hash its
    objects: dict keys, set members) and their columns hold inline values only, so
    nothing they need is built later."""
    if type(plan) is EnumPlan or namedtuple_plan(plan):
        return True
    if getattr(plan, "batch_rows", False) or getattr(plan, "build_batch", None):
        return getattr(plan, "whole", False)
    hash_ = plan.cls.__hash__
    return hash_ is not object.__hash__ and hash_ is not None and all(
        column[0] == COLUMN_INLINE or column[0] == COLUMN_CODED
        for column in islice(batch, 2, None))


def build_whole(plans, objs, batches, whole):
    """Fill the batches ``built_whole`` chose, as ``Filler.fill`` fills the others
    (upgrade hooks included: they read inline values only)."""
    filler = Filler(plans, batches, objs, None)
    for b, start, n in whole:
        batch = batches[b]
        try:
            columns = [filler.resolve(column, n) for column in islice(batch, 2, None)]
            filler.fill_instances(plans[batch[0]], objs[start:start + n], columns, False,
                                  start)
        except FormatError as e:
            raise FormatError(f"batch {b}: {e}") from None


def enum_members(plan, b, batch, n):
    """The members an enum's batch names, looked up as their records would be."""
    try:
        if batch[2][0] not in (COLUMN_INLINE, COLUMN_CODED):
            raise FormatError("an enum's batch holds references, not member names")
        names, _, _ = Filler(None, [batch], [], None).resolve(batch[2], n)
    except FormatError as e:
        raise FormatError(f"batch {b}: {e}") from None
    t = batch[0]
    return [plan.build([t, name]) for name in names]


def build_named(plans, objs, batches, named):
    """Build the batches of tuple subclasses with no fields (namedtuples), whose items
    are inline values only: each object as its record would be (docs/format.md,
    "Batches"), before any record hashes one."""
    filler = Filler(None, batches, objs, None)
    filler.any_missing = False
    for b, start, n in named:
        batch = batches[b]
        plan = plans[batch[0]]
        try:
            lengths, _, _ = filler.resolve(batch[2], n, lengths=True)
            items, index, _ = filler.resolve(batch[3], None)
            check_lengths(lengths, len(items), f"{plan.schema.name} objects")
            if index is not None:
                raise FormatError(f"a {plan.schema.name}'s item in a batch is not an "
                                  f"inline value")
            if _ABSENT in kernels.kinds(items):
                raise FormatError(f"a {plan.schema.name}'s item is an unset-slot marker")
        except FormatError as e:
            raise FormatError(f"batch {b}: {e}") from None
        it = iter(items)
        if plan.upgrades or plan.defaults:   # what the record's fill would run
            objs[start:start + n] = [_record_built(plan, [batch[0], *islice(it, k)])
                                     for k in lengths]
        else:
            objs[start:start + n] = map(tuple.__new__, repeat(plan.cls),
                                        map(islice, repeat(it), lengths))


def _record_built(plan, vals):
    obj = plan.build(vals)
    plan.fill(obj, vals)
    return obj


def build_tuples(objs, batches, tuples):
    """Build the tuples of the tuple batches, whose items are inline values and batch
    objects other than tuples (docs/format.md, "Batches")."""
    filler = Filler(None, batches, objs, None)
    filler.any_missing = False
    others = [range(start, start + n) for _, start, n in tuples]
    for b, start, n in tuples:
        batch = batches[b]
        try:
            lengths, _, _ = filler.resolve(batch[2], n, lengths=True)
            items, index, _ = filler.resolve(batch[3], None)
            check_lengths(lengths, len(items), "tuples")
            if index is not None and any(any(map(r.__contains__, index)) for r in others):
                raise FormatError("a tuple's item is a tuple of a batch")
            if _ABSENT in kernels.kinds(items):
                raise FormatError("a tuple's item is an unset-slot marker")
        except FormatError as e:
            raise FormatError(f"batch {b}: {e}") from None
        it = iter(items)
        objs[start:start + n] = map(tuple, map(islice, repeat(it), lengths))



class Filler:
    """Fills the batch objects of one load, once every record is built or waiting."""

    def __init__(self, plans, batches, objs, missing):
        self.plans, self.batches, self.objs = plans, batches, objs
        self.missing = missing        # the loader's marker of a record not built yet
        self.patches = {}             # index of a record not built -> [(setter, args, k)]
        self.pending = {}             # batch object -> its values still to patch in
        self._edges = None            # batch -> {object: indices}: see refers_to()
        self._starts = None           # each batch's first index: see refers_to()
        self.reading = {}             # batch object whose fill runs upgrade hooks -> the
                                      # record it is filled from, as a record that reads
        self.restores = {}            # batch object shown without its missing values ->
                                      # what makes it whole (None: nothing to do)
        self._whole = None            # the index ranges of batches built whole

    def whole(self, k):
        """Whether batch object k was built whole when allocated (``built_whole``): its
        hash is final before any record is built."""
        whole = self.whole_flags()
        return k < len(whole) and whole[k] == 1

    def whole_flags(self) -> bytearray:
        """A byte per batch object, in index order: 1 where ``whole`` says so."""
        whole = self._whole
        if whole is None:                  # a byte per batch object: asked per key
            whole = bytearray()
            for batch in self.batches:
                plan = self.plans[batch[0]]
                n = batch[1]
                whole += (b"\x01" if plan not in ENTRIES and built_whole(plan, batch)
                          else b"\x00") * n
            self._whole = whole
        return whole

    def fill(self, any_missing):
        """Fill every batch; a value not built yet (a record the loader still waits
        for) is patched in when it is (``patches``)."""
        objs, start = self.objs, 0
        self.any_missing = any_missing
        finishing = []
        for b, batch in enumerate(self.batches):
            n = batch[1]
            plan = self.plans[batch[0]]
            if plan is TUPLE_PLAN or (          # built when allocated
                    plan not in ENTRIES and built_whole(plan, batch)):
                start += n
                continue
            if getattr(plan, "finish_batch", None) is not None:
                finishing.append((b, plan))      # list iterators: once lists are filled
                start += n
                continue
            members = objs[start:start + n]
            entries = plan in ENTRIES          # lengths, then entries
            rows = not entries and getattr(plan, "batch_rows", False)
            reads = not entries and not rows and bool(plan.upgrades)
            try:
                columns = [self.resolve(column, None if entries and i else n, reads,
                                        lengths=entries and not i)
                           for i, column in enumerate(islice(batch, 2, None))]
                if plan is LIST_PLAN:
                    self.fill_lists(members, columns, any_missing, start)
                elif plan is DICT_PLAN:
                    self.fill_dicts(members, columns, any_missing, start)
                elif rows:
                    self.fill_rows(plan, members, columns, any_missing, start)
                elif reads:
                    self.read_later(batch[0], n, columns, start)
                else:
                    self.fill_instances(plan, members, columns, any_missing, start)
            except FormatError as e:
                raise FormatError(f"batch {b}: {e}") from None
            start += n
        # before hide_missing: a list still waiting for a value has its saved length
        for b, plan in finishing:
            try:
                plan.finish_batch()
            except FormatError as e:
                raise FormatError(f"batch {b}: {e}") from None

    def completed(self):
        """The load is complete, before any ``__autosave_loaded__`` hook: the plans
        that finish their batch objects then (coroutine frames take their function's
        class) do."""
        done = set()
        for batch in self.batches:
            plan = self.plans[batch[0]]
            completed = getattr(plan, "completed", None)
            if completed is not None and id(plan) not in done:
                done.add(id(plan))
                completed()

    def resolve(self, column, n, aligned=False, lengths=False):
        """(values, index, unset): the column's values resolved; when some may not be
        built yet (or ``aligned``), the index each value refers to (None for inline
        values); whether it holds unset-slot markers. ``lengths``: the lengths column
        of lists, tuples or dicts, whose inline values ``check_lengths`` checks are all
        ints, so they need no pass here."""
        kind = column[0]
        if kind == COLUMN_CODED:               # from autosave.copy: a file's are decoded
            column = decoded_column(column)
            kind = COLUMN_INLINE
        size = len(column[1])
        if n is not None and size != n:
            raise FormatError(f"a column holds {size} values for {n} objects")
        if kind == COLUMN_INLINE:
            values = column[1]
            if lengths:
                return values, None, False
            kinds = kernels.kinds(values)
            if not kinds <= _INLINE_VALUES:
                raise FormatError("a column of inline values holds a reference")
            return values, None, _ABSENT in kinds
        index, refs = self.indices(column[-1])
        if kind == COLUMN_REFS:
            return refs, index, False
        mask, inline = column[1], column[2]
        kinds = kernels.kinds(inline)
        if not kinds <= _INLINE_VALUES:
            raise FormatError("a mixed column's inline values hold a reference")
        values = merge_mixed(mask, inline, refs)
        if self.any_missing or aligned:
            index = _aligned(mask, index)
        return values, index, _ABSENT in kinds

    def indices(self, differences):
        """(indices, objects) of a column's references, in one pass (``kernels``)."""
        try:
            return kernels.resolve_refs(differences, self.objs)
        except IndexError:
            raise FormatError(f"a column refers past the {len(self.objs)} objects of "
                              f"the save") from None
        except TypeError:
            raise FormatError("a column's references are not ints") from None

    def waiting(self, values, index, any_missing):
        """(position, record index) of the values not built yet."""
        if not any_missing or index is None:
            return ()
        missing = list(map(is_, values, repeat(self.missing)))
        if not any(missing):
            return ()
        return list(compress(zip(range(len(values)), index), missing))

    def patch(self, j, setter, args, k):
        """Set a value of batch object ``k`` once record ``j`` is built; until then
        ``k`` counts as unfinished (``pending``)."""
        self.patches.setdefault(j, []).append((setter, args, k))
        self.pending[k] = self.pending.get(k, 0) + 1

    def fill_lists(self, lists, columns, any_missing, start):
        (lengths, _, _), (items, index, _) = columns
        check_lengths(lengths, len(items), "lists")
        kernels.fill_lists(lists, lengths, items)
        for owner, at, j in self.owners(lengths, self.waiting(items, index, any_missing)):
            self.patch(j, list.__setitem__, (lists[owner], at), start + owner)

    def fill_dicts(self, dicts, columns, any_missing, start):
        (lengths, _, _), (keys, key_index, absent), (values, index, _) = columns
        if key_index is not None or absent:
            raise FormatError("a dict's keys must be inline values")
        check_lengths(lengths, len(keys), "dicts")
        if len(values) != len(keys):
            raise FormatError(f"the dicts hold {len(keys)} keys and {len(values)} values")
        # the dicts of FLOOD_MIN keys or more are checked by the kernel, before it fills
        kernels.fill_dicts(dicts, lengths, keys, values, _check_dict_flood, FLOOD_MIN)
        for owner, at, j in self.owners(lengths, self.waiting(values, index, any_missing)):
            key = keys[sum(lengths[:owner]) + at]
            self.patch(j, dict.__setitem__, (dicts[owner], key), start + owner)

    @staticmethod
    def owners(lengths, waiting):
        """(owner, position in it, record index) of values waiting, in an entries
        column: the owner is the object whose entries hold the value."""
        if not waiting:
            return
        starts = list(accumulate(lengths, initial=0))
        owner = 0
        for pos, j in waiting:
            while starts[owner + 1] <= pos:
                owner += 1
            yield owner, pos - starts[owner], j

    def read_later(self, t, n, columns, start):
        """Objects whose class has upgrade hooks: the hooks may read what the fields
        refer to, which post-order had finished before them and batches do not, so
        each is filled as a record that reads is, once what it reaches is complete
        (``readers``): from the record it would have been, references as indices."""
        parts = [values if index is None else
                 [v if j is None else [j] for v, j in zip(values, index)]
                 for values, index, _ in columns]
        rows = map(list, zip(repeat(t), *parts)) if parts else ([t] for _ in range(n))
        self.reading.update(zip(range(start, start + n), rows))

    def fill_rows(self, plan, objs, columns, any_missing, start):
        """Objects filled a row at a time by their plan (coroutines): those whose values
        are all built at once, in bulk; each of the others when the last of its values
        is (its restore, as ``fill_instances``'s)."""
        if any(absent for _, _, absent in columns):
            raise FormatError(f"a {plan.name}'s column holds an unset-slot marker")
        values = [v for v, _, _ in columns]
        late = {}
        for field, (v, index, _) in enumerate(columns, 1):
            for k, j in self.waiting(v, index, any_missing):
                late.setdefault(k, []).append((field, j))
        refers = [index is not None for _, index, _ in columns]
        if not late:
            plan.fill_rows(objs, values, refers)
            return
        ready = [k not in late for k in range(len(objs))]
        plan.fill_rows(list(compress(objs, ready)), [list(compress(v, ready)) for v in values],
                       refers)
        for k, waits in late.items():
            row = [None, *(v[k] for v in values)]
            for field, j in waits:
                self.patch(j, row.__setitem__, (field,), start + k)
            self.restores[start + k] = partial(plan.fill_row, objs[k], row)

    def fill_instances(self, plan, objs, columns, any_missing, start):
        values = [v for v, _, _ in columns]
        waiting = [self.waiting(v, index, any_missing) for v, index, _ in columns]
        absent = any(has_absent for _, _, has_absent in columns)
        direct = plan.direct if not absent and not plan.upgrades else None
        if direct == "slots":      # a field the class dropped has a column, no setter
            kernels.fill_slots(plan.slot_descriptors, objs,
                               [values[pos - 1] for pos, _ in plan.slot_setters])
            for pos, set_slot in plan.slot_setters:
                for k, j in waiting[pos - 1]:
                    self.patch(j, set_slot, (objs[k],), start + k)
            return
        if direct == "dict":
            fields = plan.fields
            kernels.fill_attributes(objs, fields, values)
            for name, late in zip(fields, waiting):
                for k, j in late:
                    self.patch(j, dict.__setitem__, (objs[k].__dict__, name), start + k)
            return
        # The plan's own fill, one object at a time, on a record's row [t, values...];
        # an object whose values are not all built is filled when the last of them is
        # (its "restore", run by ``gave``): until then it is unfinished, like any
        # batch object waiting for a value.
        rows = list(zip(repeat(None), *values)) if values else [(None,)] * len(objs)
        late = {}
        for field, stretch in enumerate(waiting, 1):
            for k, j in stretch:
                late.setdefault(k, []).append((field, j))
        for k, (obj, row) in enumerate(zip(objs, rows)):
            waits = late.get(k)
            if waits is None:
                plan.fill(obj, row)
                continue
            row = list(row)
            for field, j in waits:
                self.patch(j, row.__setitem__, (field,), start + k)
            self.restores[start + k] = partial(plan.fill, obj, row)

    def gave(self, j, k):
        """Record j's value is patched into batch object k: whether k is now whole
        (then, if it was shown without its missing values, it is made whole again)."""
        self.pending[k] -= 1
        if self.pending[k]:
            return False
        restore = self.restores.pop(k, None)
        if restore is not None:
            restore()
        return True

    def hide_missing(self):
        """Take the values not built yet out of the batch objects waiting for them, as
        pickle shows an object on a cycle: without them. A list or dict shows the
        values it has (its full contents are kept aside, in order, and patched there);
        a slot is left unset; an instance filled by its plan (it has a restore
        already) is not filled at all yet. Done once, right after the fill: code that
        reads waits for what it reaches to be whole (``readers``), so only code on a
        cycle through the records that give those values sees an object without them."""
        by_object = {}
        for j, entries in self.patches.items():
            for n, (setter, args, k) in enumerate(entries):
                if self.pending.get(k) and k not in self.restores:
                    by_object.setdefault(k, []).append((j, n, setter, args))
        for k, entries in by_object.items():
            setter, args = entries[0][2], entries[0][3]
            target = args[0]
            if setter is list.__setitem__ or setter is dict.__setitem__:
                kind = list if setter is list.__setitem__ else dict
                full = kind(target)
                if kind is list:
                    target[:] = [v for v in full if v is not self.missing]
                    self.restores[k] = lambda t=target, f=full: t.__setitem__(slice(None), f)
                else:
                    for key in [key for key, v in full.items() if v is self.missing]:
                        del target[key]
                    self.restores[k] = lambda t=target, f=full: (t.clear(), t.update(f))
                for j, n, setter, args in entries:     # patch the full contents instead
                    self.patches[j][n] = (setter, (full, *args[1:]), k)
            else:                                      # a slot: unset until patched
                for _, _, setter, args in entries:
                    setter.__self__.__delete__(args[0])
                self.restores[k] = None

    def refers_to(self, k):
        """The indices batch object k refers to. Each batch's are found the first time
        one of its objects is asked about, so a load pays only for the batches that
        the records it orders reach."""
        if self._edges is None:
            self._edges = {}
            self._starts = list(accumulate((batch[1] for batch in self.batches), initial=0))
        b = bisect_right(self._starts, k) - 1
        edges = self._edges.get(b)
        if edges is None:
            edges = self._edges[b] = {}
            batch, start = self.batches[b], self._starts[b]
            n = batch[1]
            entries = self.plans[batch[0]] in ENTRIES
            lengths = batch[2][1] if entries else None
            for column in islice(batch, 3 if entries else 2, None):
                if column[0] == COLUMN_INLINE or column[0] == COLUMN_CODED:
                    continue
                index = list(accumulate(column[-1]))
                if column[0] != COLUMN_REFS:       # mixed: only where the mask says
                    index = _aligned(column[1], index)
                owners = (chain.from_iterable(map(repeat, range(start, start + n), lengths))
                          if entries else range(start, start + n))
                for owner, j in zip(owners, index):
                    if j is not None:
                        edges.setdefault(owner, []).append(j)
        return edges.get(k, ())
