"""Save, reflectively: the record of each object, made from what its class is.

``Walker`` holds a save's tables (type table, records, the memo of each object's *cell*)
and one record maker per kind of class (``autosave.model.dispatch``'s order, a ``MAKERS``
entry each). A maker returns ``[type index, parts...]`` whose parts are inline values
and the cells of the objects mentioned; ``autosave.format.wire`` alone turns cells into
references when the record is emitted (``emit_record``). The engine that drives the
walk is ``saver.Saver``, whose loop (``drain``) is here: it visits what a maker
mentions depth-first, so records come in post-order, without recursion.

Errors carry the object path from the root; the path is only computed when something
fails, so the common path pays nothing for it.
"""

from __future__ import annotations

import functools
import operator
import types
from collections import deque
from itertools import chain, repeat
from typing import Any

from ..model.adapters import ADAPTERS_BY_TYPE
from ..model.adapters.callables import ASSET, FUNCTION, GLOBAL, REDUCE
from ..model.adapters.exceptions import EXCEPTION
from ..model.adapters.weak import WeakAdapter
from ..errors import SaveError
from .batchable import batchable, value_batchable
from .columns import Batches
from ..format.forms import Cell, Record, emitter, marked, reference
from ..format.wire import ABSENT, INLINE_TYPES, STATE_FIELDS
from .order import SetOrder
from .paths import find_path, placed, placed_cause
from ..model import dispatch
from ..model.anatomy import (enum_by_name, function_by_name, instance_parts,
                             labelled_parts, reduce_value)
from ..format import kernels
from ..model.reconstructors import check_state
from ..model.registry import REGISTRY
from ..model.schema import schema_of


PRIMITIVES = INLINE_TYPES    # written as themselves

# A record of at least this many parts tries to file them in bulk (Batches.refer_parts):
# measured on value-keys, 16 saves 592M instructions, 6 572M, 4 555M, 3 554M
BULK_PARTS = 4
_SEQUENCES = (list, tuple)

_FINISH = object()   # stack marker: below it the cell and record of an object whose
                     # children are now emitted

class Walker:
    def __init__(self):
        self.types = []          # [name, version, [fields]]
        self.type_index = {}     # adapter or (class, shape) -> index
        self.records = []
        self.loops = kernels.loops()     # chosen once: the memo is made by them
        self.memo = self.loops.new_memo()   # id(obj) -> its cell: [None] unvisited, [False] in
                                 # progress, [index] once its record is emitted; or a
                                 # batch object's reference, -serial (columns.py)
        self.stack = []
        self.weak = []           # (holder, adapter, [(strong values, target)]): see write_weak
        self.handlers = {}       # class -> fn(obj) -> record
        self.prims = PRIMITIVES  # ints of any width are inline (wide ones: an extension)
        self.assets = REGISTRY.asset_id_of
        # The memo is keyed by id(), so an object must outlive the walk once mentioned.
        # Objects of the graph do; parts a handler makes on the fly (a __getstate__ dict,
        # reduce arguments, adapter part lists) are kept here by the handler that made them.
        self.keep = []
        # What user code gave this walk (a __getstate__ value, a __reduce__ value), by
        # id: an error's object path is found from these, never by calling it again.
        self.made = {}
        self.unset = 0           # unset-slot markers written (a load checks their count)
        self.root = None
        self.current = None      # the object a failure outside its handler is about
        self.structure = None    # id -> structural index, see structural_index()
        self.cells = []          # the cells of the records, in record order
        self.emit_record = emitter(self.records, self.cells)
        self.batches = Batches(self)
        self.order = SetOrder(self.cell_of, self.structural_index, lambda: self.root)
        self.mention, self.refs = self._make_mention()

    def cell_of(self, obj: Any) -> Cell | tuple[int] | None:
        """obj's cell (a batch object's: its reference as a record holds it,
        ``(-serial,)``), or None if the walk has not met it. Batch objects of classes
        hashed and compared by identity that a column met first are in the batches'
        own table only (``Batches.by_object``)."""
        cell = self.memo.get(id(obj))
        if cell is None and obj.__class__ in self.batches.keyed:
            cell = self.batches.by_object.get(obj)
        return (cell,) if cell.__class__ is int else cell

    def _make_mention(self):
        memo, push, prims = self.memo, self.stack.append, self.prims
        memo_get = memo.get
        keyed, by_object = self.batches.keyed, self.batches.by_object

        def mention(obj):
            """What a record holds for ``obj``: the inline value, or its cell (scheduling
            its visit, depth-first, if it has none yet)."""
            cell = memo_get(id(obj))
            if cell is not None:
                if cell.__class__ is int:
                    return (cell,)
                if cell[0] is None:
                    push(obj)            # mentioned, not visited yet: visit it here
                return cell
            if obj.__class__ is int or obj is ABSENT:
                return obj
            if obj.__class__ in keyed:       # a batch object a column met first?
                ref = by_object.get(obj)
                if ref is not None:
                    memo[id(obj)] = ref
                    return (ref,)
            cell = memo[id(obj)] = [None]
            push(obj)
            return cell

        bulk = self.batches.refer_parts

        def refs(tindex, parts):
            # many parts: filed in bulk where a visit of each would file it in a batch
            if parts.__class__ in _SEQUENCES and len(parts) >= BULK_PARTS:
                rec = bulk(tindex, parts)
                if rec is not None:
                    return rec
            # a written or in-progress object's cell without a call; mention() the rest
            rec = [v if v.__class__ in prims else
                   c if (c := memo_get(id(v))).__class__ is list and c[0] is not None else
                   mention(v) for v in parts]
            rec.insert(0, tindex)
            return rec

        return mention, refs

    # -- the traversal -----------------------------------------------------------------

    def run(self, root: Any) -> tuple:
        types, records, root_value, finish = self.run_deferred(root)
        return types, records, root_value, finish()

    def run_deferred(self, root: Any) -> tuple:
        """(types, records, root value, finish): ``run`` with what follows the reading
        of the graph left to ``finish()``, which returns the batches as the body holds
        them. What the walk returns is a snapshot: inline values (immutable) and lists
        the walk made, never an object of the graph (but for out-of-band buffers, views
        of arrays' memory, which only ``dumps(buffer_callback=...)`` asks for, through
        ``out_of_band``); ``finish`` reads only those too,
        so another thread may call it while the game changes its graph (a log's
        writer thread). It may be called again after it raised, and frees the walk's
        tables once it returns."""
        batches: Any = None
        try:
            out = self._run(root)
            batches, (first, end) = self.batches, self.first_record_end
        except (SaveError, MemoryError):
            raise
        except Exception as e:
            # Handler failures are turned into SaveError where they happen; anything
            # else (the weak-entry pass, a defect of autosave's own) still names the
            # object it was at, never escapes as a bare KeyError.
            at = self.current
            raise SaveError(f"{type(at).__qualname__} could not be saved: "
                            f"{type(e).__name__}: {e}",
                            find_path(root, at, self.made) if at is not None else "root") from e
        finally:
            self.release(keep_batches=batches is not None)
        done: list[Any] = []

        def finish() -> Any:
            if not done:
                done.append(batches.written(first, end))
                batches.clear()             # its batch handlers close over it in turn
            return done[0]
        return (*out, finish)

    def release(self, keep_batches: bool = False):
        """Forget everything. The handlers are closures over this walker (a cycle the
        collector would have to find, with the whole memo and every record behind it),
        and the tables of handlers are closed over by the handlers in turn: emptying
        them and the walker frees it all now, so nothing of a save outlives the call
        (``keep_batches``: but the batches, which ``run_deferred``'s finish frees)."""
        unset = vars(self).get("unset", 0)
        self.handlers.clear()
        self.memo.clear()
        if "batches" in vars(self) and not keep_batches:
            self.batches.clear()
        vars(self).clear()
        self.unset = unset       # the one fact a caller reads after the walk (copy())

    def _run(self, root):
        """(types, records, root value) of the graph from root; the batches' columns
        are written by ``finish`` (run_deferred).

        Records are walked depth-first from the root; then the columns of the batch
        objects met are taken, which meets more objects, walked in turn, until a step
        takes nothing. Then every object gets its index: batch objects first, in batch
        order, then records (a record's cell, its record number until now, is moved
        past the batch objects)."""
        self.root = root
        root_value = self.value(root)
        self.drain()
        batches = self.batches
        while batches.step():
            pass
        self.first_record = first = batches.number()
        deque(map(list.__setitem__, self.cells, repeat(0),
                  range(first, first + len(self.cells))), 0)
        index = batches.index
        for rec in self.records:             # references to batch objects: indices
            if tuple in map(type, rec):
                rec[:] = [[index(v[0])] if v.__class__ is tuple else v for v in rec]
        self.write_weak_entries()
        self.check_walk()
        # Nothing looks an object up any more: the memo (a cell and an id per object)
        # goes before the columns are written, so the two are never held together.
        self.memo.clear()
        batches.by_object.clear()
        self.first_record_end = (first, first + len(self.cells))
        self.unset += batches.unset
        return self.types, self.records, self.root_reference(root_value)

    def check_walk(self):
        """Called once the walk has numbered everything, while objects can still be
        looked up (``Saver`` checks here that the records would load)."""

    def root_reference(self, root_value):
        if root_value.__class__ is list:     # the root's cell: its index by now
            return reference(root_value[0], self.first_record + len(self.records))
        return root_value

    def drain(self) -> None:
        """Visit what the stack holds, and everything it reaches, depth-first: each
        record is emitted once the objects it mentions are."""
        stack, memo = self.stack, self.memo
        handlers, pop, emit_record = self.handlers, self.stack.pop, self.emit_record
        while stack:
            obj = pop()
            if obj is _FINISH:           # its children are written: so is it now
                cell = pop()
                emit_record(cell, pop())
                continue
            cell = memo[id(obj)]
            if cell.__class__ is not list or cell[0] is not None:   # visited meanwhile
                continue
            cell[0] = False
            base = len(stack)
            try:
                handler = handlers.get(obj.__class__)
                if handler is None:
                    handler = handlers[obj.__class__] = self.handler_for(obj.__class__)
                rec = handler(obj)
            except Exception as e:
                raise placed(self, obj, e) from placed_cause(e)
            if rec is None:                  # filed in its batch: no record
                continue
            if len(stack) > base:            # visit the children first, in order
                children = stack[base:]
                children.reverse()
                stack[base:] = [rec, cell, _FINISH, *children]
            else:
                emit_record(cell, rec)

    def mention_in_order(self, objs):
        """Mention objs so that the walk visits them in this order (the stack is
        last in, first out), each once: objs may repeat one (a column's, met at once)."""
        stack, mention = self.stack, self.mention
        objs = dict(zip(map(id, objs), objs)).values()      # a mention each is dearer
        base = len(stack)
        for obj in objs:
            mention(obj)
        if len(stack) - base > 1:
            stack[base:] = stack[base:][::-1]

    def write_weak_entries(self):
        for holder, adapter, entries in self.weak:
            self.current = holder
            self.write_weak(holder, adapter, entries)
        self.current = None

    def value(self, v: Any) -> Any:
        return v if v.__class__ in self.prims else self.mention(v)

    # -- type table --------------------------------------------------------------------

    def index_of(self, key: Any, name: str | None = None, version: int = 1,
                 fields: tuple | list = ()) -> int:
        index = self.type_index.get(key)
        if index is None:
            index = self.type_index[key] = len(self.types)
            self.types.append([name or key.name, version, list(fields)])
        return index

    # -- dispatch: one handler per class -------------------------------------------------

    def handler_for(self, cls):
        """Classes with registered assets check each instance for being one first; the
        others pay nothing for assets."""
        if cls not in REGISTRY.asset_classes:
            return self.plain_handler_for(cls)
        assets, plain = self.assets, []

        def save_asset_or_object(obj):
            asset_id = assets.get(id(obj))
            if asset_id is not None:
                return [self.index_of(ASSET), asset_id]
            if not plain:            # a class may be saveable only as assets
                plain.append(self.plain_handler_for(cls))
            return plain[0](obj)
        return save_asset_or_object

    def handler_of(self, cls):
        handler = self.handlers.get(cls)
        if handler is None:
            handler = self.handlers[cls] = self.handler_for(cls)
        return handler

    def plain_handler_for(self, cls):
        kind, detail = dispatch.kind_of(cls)
        if kind == dispatch.ADAPTER and getattr(detail, "batch_row", None) is not None:
            # coroutines (a batch per shape), loop iterators: records when they do not fit
            return self.batches.row_handler(
                cls, detail, lambda: self.record_handler_for(cls, kind, detail))
        if batchable(cls, kind, detail):
            if kind != dispatch.ADAPTER:
                REGISTRY.check_savable_name(cls, "class")
            return self.batches.handler(cls, kind, detail)
        if cls in self.batches.fits:         # dicts and tuples: those that fit
            return self.batches.some_handler(cls, self.record_handler_for(cls, kind, detail))
        if value_batchable(cls, kind, detail):   # hashed by value: inline-only ones
            return self.batches.value_handler(cls, kind, detail,
                                              self.record_handler_for(cls, kind, detail))
        return self.record_handler_for(cls, kind, detail)

    def record_handler_for(self, cls, kind, detail):
        return self.MAKERS[kind](self, cls, detail)

    # One maker per kind of class (autosave.model.dispatch), each followed by its table entry.
    MAKERS = {}

    def function_handler(self, cls, _):
        return self.save_function
    MAKERS[dispatch.FUNCTION] = function_handler

    def global_handler(self, cls, _):
        return self.save_global
    MAKERS[dispatch.GLOBAL] = global_handler

    def builtin_function_handler(self, cls, _):
        return self.save_builtin_function
    MAKERS[dispatch.BUILTIN_FUNCTION] = builtin_function_handler

    def refusing_handler(self, cls, reason):
        return functools.partial(self.refuse, reason)
    MAKERS[dispatch.UNSAVEABLE] = refusing_handler

    def exception_handler(self, cls, _):
        return self.adapter_handler(cls, EXCEPTION)
    MAKERS[dispatch.EXCEPTION] = exception_handler

    def reduce_handler(self, cls, schema):
        return self.save_reduce
    MAKERS["reduce"] = reduce_handler

    def enum_handler(self, cls, schema):
        REGISTRY.check_savable_name(cls, "class")
        return self.save_enum
    MAKERS["enum"] = enum_handler

    def state_handler(self, cls, schema):
        REGISTRY.check_savable_name(cls, "class")
        return self.save_state
    MAKERS["state"] = state_handler

    def c_object_handler(self, cls, schema):
        raise SaveError(schema.refusal())
    MAKERS["c-object"] = c_object_handler

    def slots_handler(self, cls, schema):
        REGISTRY.check_savable_name(cls, "class")
        slots = schema.saved_slots
        t = self.index_of((cls, slots), schema.name, schema.version, slots)
        if not slots:
            return lambda obj: [t]
        get = operator.attrgetter(*slots)
        refs, save_instance = self.refs, self.save_instance

        if len(slots) == 1:
            def save_slotted(obj):
                try:
                    return refs(t, (get(obj),))
                except AttributeError:   # an unset slot
                    return save_instance(obj)
        else:
            def save_slotted(obj):
                try:
                    values = get(obj)
                except AttributeError:   # an unset slot
                    return save_instance(obj)
                return refs(t, values)
        return save_slotted
    MAKERS["slots"] = slots_handler

    def dict_handler(self, cls, schema):
        REGISTRY.check_savable_name(cls, "class")
        shapes, refs = {}, self.refs

        def save_dict(obj):
            d = obj.__dict__
            shape = tuple(d)
            t = shapes.get(shape)
            if t is None:
                t = shapes[shape] = self.index_of((cls, shape), schema.name, schema.version, shape)
            return refs(t, d.values())
        return save_dict
    MAKERS["dict"] = dict_handler

    def fields_handler(self, cls, schema):
        REGISTRY.check_savable_name(cls, "class")
        return self.save_instance
    MAKERS["fields"] = MAKERS["extends"] = fields_handler

    def adapter_handler(self, cls, adapter):
        """Builtin containers get handlers without a per-object dispatch or copy."""
        if isinstance(adapter, WeakAdapter):
            return functools.partial(self.save_weak, adapter)
        save_record = getattr(adapter, "save_record", None)
        if save_record is not None:      # one type, several record kinds (numpy arrays)
            return functools.partial(save_record, self)
        t = self.index_of(adapter)
        refs, parts = self.refs, adapter.parts
        if cls is list or cls is tuple:
            return lambda obj: refs(t, obj)
        if cls is dict:
            return lambda obj: refs(t, chain.from_iterable(obj.items()) if len(obj) < BULK_PARTS
                                    else list(chain.from_iterable(obj.items())))
        if cls is set or cls is frozenset:
            order = self.order
            return lambda obj: refs(t, order(obj))
        keep = self.keep.append

        def save_parts(obj):
            made = parts(obj)
            keep(made)
            return refs(t, made)
        return save_parts

    MAKERS[dispatch.ADAPTER] = adapter_handler

    def refuse(self, reason, obj):
        if isinstance(obj, types.GeneratorType):
            code = obj.gi_code
            reason = (f"generator {code.co_qualname}() ({code.co_filename}:{code.co_firstlineno}) "
                      f"is {reason}")
        else:
            reason = f"{type(obj).__qualname__} is {reason}"
        raise SaveError(reason)

    def save_adapter(self, adapter, obj):
        made = adapter.parts(obj)
        self.keep.append(made)
        return self.refs(self.index_of(adapter), made)

    def structural_index(self, obj: Any) -> int:
        """obj's place in a breadth-first walk from the root that does not enter sets
        (so it depends on the graph's shape, never on hashes); past the end if only
        sets reach it. Computed once per save, the first time set members tie."""
        if self.structure is None:
            self.structure = {}
            kinds = self.order.kinds
            queue = deque([self.root])
            while queue:
                node = queue.popleft()
                if id(node) in self.structure:
                    continue
                self.structure[id(node)] = len(self.structure)
                if isinstance(node, (set, frozenset)):
                    continue
                try:
                    children = [c for _, c in labelled_parts(node, None, kinds)]
                except Exception:
                    continue
                queue.extend(c for c in children if c.__class__ not in PRIMITIVES)
        return self.structure.get(id(obj), len(self.structure))

    def save_weak(self, adapter, obj):
        """Walk the strong parts now; write the entries once the walk shows which weak
        targets were saved (write_weak)."""
        prims, mention = self.prims, self.mention
        entries = [(strong, target) for strong, target in adapter.entries(obj)
                   if target is not None]
        for strong, _ in entries:
            for v in strong:
                if v.__class__ not in prims:
                    mention(v)           # walked now, referred to when written
        self.keep.append(entries)
        self.weak.append((obj, adapter, entries))
        return [self.index_of(adapter)]

    def write_weak(self, holder, adapter, entries):
        memo, index = self.memo, self.batches.index
        here = memo[id(holder)][0]          # a record's index: the walk has numbered it

        def ref(there):
            return reference(index(there), here)

        cell_of = self.cell_of
        saved = [(index(cell[0]), strong) for strong, target in entries
                 if (cell := cell_of(target)) is not None]
        if adapter.ordered_by_target:
            saved.sort(key=lambda entry: entry[0])
        payload = []
        prims = self.prims
        for there, strong in saved:
            strong = [v if v.__class__ in prims else ref(cell_of(v)[0]) for v in strong]
            payload.extend(adapter.payload(strong, ref(there)))
        if adapter.keeps_dead and not saved:
            payload.append(None)
        record = self.records[here - self.first_record]
        record.extend(payload)
        if any(there > here for there, _ in saved):
            record[0] = marked(record[0])

    def save_global(self, obj):
        return [self.index_of(GLOBAL), GLOBAL.name_of(obj)]

    def save_builtin_function(self, obj):
        owner = obj.__self__
        if owner is None or isinstance(owner, types.ModuleType):
            return self.save_global(obj)
        return self.save_adapter(ADAPTERS_BY_TYPE[types.MethodType], obj)

    def save_function(self, obj):
        if function_by_name(obj):
            return self.save_global(obj)
        try:
            parts = FUNCTION.parts(obj)
        except LookupError as e:
            raise SaveError(str(e)) from None
        self.keep.append(parts)
        return self.refs(self.index_of(FUNCTION), parts)

    def save_enum(self, obj):
        schema = schema_of(obj.__class__)
        t = self.index_of(obj.__class__, schema.name, schema.version)
        if enum_by_name(obj):
            return [t, obj._name_]
        return self.refs(t, [None, obj._value_])

    def save_reduce(self, obj):
        rv = reduce_value(obj)
        if isinstance(rv, str):
            return [self.index_of(GLOBAL), f"{obj.__module__}.{rv}"]
        try:
            parts = REDUCE.parts_of(obj, rv)
        except LookupError as e:
            raise SaveError(str(e)) from None
        # what error paths read (model.anatomy): the items, read once, are in the parts
        self.made[id(obj)] = parts
        self.keep.append(parts)
        return self.refs(self.index_of(REDUCE), parts)

    def save_state(self, obj):
        cls = obj.__class__
        schema = schema_of(cls)
        t = self.index_of((cls, STATE_FIELDS), schema.name, schema.version, STATE_FIELDS)
        state = self.made[id(obj)] = obj.__getstate__()
        if state is not None:
            check_state(cls, state)      # what a load would hand its __setstate__
        return [t] if state is None else self.refs(t, [state])

    def save_instance(self, obj: Any) -> Record:
        cls = obj.__class__
        schema = schema_of(cls)
        shape = schema.shape_of(obj)
        t = self.type_index.get((cls, shape))
        if t is None:
            t = self.index_of((cls, shape), schema.name, schema.version, shape)
        values = instance_parts(schema, obj, self.order)
        if schema.saved_slots:
            self.unset += values[:len(schema.saved_slots)].count(ABSENT)
        if schema.base is not None:
            self.keep.append(values)
        return self.refs(t, values)
