"""Save through direct handlers: the engine generated code plugs into.

``walk.Walker`` is iterative: a handler returns a record whose unwritten children are
cells, the children wait on a stack, and the record is rewritten once they are done.
``DirectWalker`` writes the very same records (same order, same offsets, same cycle
marks) by recursion instead: a *direct handler* ``h(obj, cell)`` marks its object in
progress, writes each child it meets at once, then emits its record with every offset
already known. No second pass over the record, no stack traffic, no cell per child.

Direct handlers come from generated code (``autosave-codegen``, see ``generated.py``),
from the generic ones below (lists, tuples, dicts), or wrap a reflective handler:
that runs the reflective handler, then writes the children it pushed, in order,
exactly as the iterative walk would.

Depth is bounded (``MAX_DEPTH`` nested objects); beyond it, or on an int wider than
64 bits, or on any error, ``files.dumps`` walks again with ``Walker``, which gives the
same bytes or the error with its object path.
"""

import sys
from itertools import chain

from .adapters import ADAPTERS_BY_TYPE
from .adapters.callables import ASSET
from .generated import GENERATED
from .registry import REGISTRY
from .walk import PRIMITIVES, Walker, finished

MAX_DEPTH = 20_000        # nested objects; each costs at most three Python frames
INLINE = PRIMITIVES       # written as themselves (ints too: a wide one fails the encode)


class DirectWalker(Walker):
    def __init__(self):
        # The reflective handlers this walker wraps must box wide ints as records,
        # as the retry of an iterative walk does.
        super().__init__(wide_ints=True)
        self.direct = {}              # class -> direct handler
        self.visit, self.ref = self._make_visit()

    def _make_visit(self):
        memo, direct, memo_get = self.memo, self.direct, self.memo.get

        def visit(obj, cell=None):
            """Write obj's record now (it is not written nor in progress); its cell.
            ``cell``: its memo entry if it has one (mentioned, not visited yet)."""
            if cell is None:
                cell = memo[id(obj)] = [None]
            handler = direct.get(obj.__class__)
            if handler is None:
                handler = direct[obj.__class__] = self.direct_handler_for(obj.__class__)
            handler(obj, cell)
            return cell

        def ref(obj):
            """obj's cell once written (its index), or in progress (False: a cycle)."""
            cell = memo_get(id(obj))
            if cell is not None and cell[0] is not None:
                return cell
            return visit(obj, cell)

        return visit, ref

    def run(self, root):
        limit = sys.getrecursionlimit()
        # Python-to-Python calls use no C stack (3.11+), so only the limit stands in
        # the way of deep graphs; restored before returning.
        sys.setrecursionlimit(max(limit, _frames_in_use() + 3 * MAX_DEPTH + 100))
        try:
            return self._run_direct(root)
        finally:
            sys.setrecursionlimit(limit)
            self.handlers = self.memo = self.keep = self.weak = self.structure = None
            self.root = self.stack = self.direct = self.visit = self.ref = self.order = None

    def _run_direct(self, root):
        self.root = root
        if root.__class__ in INLINE:
            root_value = root
        else:
            root_value = self.visit(root)
        records = self.records
        self.write_weak_entries()
        if root_value.__class__ is list:
            root_value = [root_value[0] - len(records)]
        return self.types, records, root_value

    # -- handlers ------------------------------------------------------------------------

    def direct_handler_for(self, cls):
        factory = GENERATED.save_factory(cls)
        if factory is not None:
            # The reflective handler is made first, only for its checks (trust, C
            # layouts) and its type-table entry, so both paths agree on those.
            self.plain_handler_for(cls)
            handler = factory(self)
        elif cls is list or cls is tuple:
            handler = self.direct_items(cls, iter)
        elif cls is dict:
            handler = self.direct_items(cls, _flat_dict)
        else:
            return self.wrap(self.handler_for(cls))   # handler_for checks assets itself
        if cls in REGISTRY.asset_classes:
            handler = self.asset_or(handler)
        return handler

    def emitter(self):
        """emit(cell, t, parts): append the record of parts (values, or cells of
        written or in-progress objects) with offsets from its own index."""
        records = self.records
        append = records.append

        def emit(cell, t, parts):
            here = len(records)
            cycle = None
            rec = [c if c.__class__ is not list else
                   [c[0] - here] if c[0] is not False else (cycle := c) for c in parts]
            rec.insert(0, t if cycle is None else ~t)
            cell[0] = here
            append(rec)
        return emit

    def direct_items(self, cls, items):
        """Lists, tuples, dicts: the hottest handler, so emit() is inlined."""
        t = self.index_of(ADAPTERS_BY_TYPE[cls])
        memo_get, visit, records = self.memo.get, self.visit, self.records
        append = records.append

        def save_items(obj, cell):
            cell[0] = False
            parts = [v if v.__class__ in INLINE else
                     c if (c := memo_get(id(v))) is not None and c[0] is not None else visit(v, c)
                     for v in items(obj)]
            here = len(records)
            cycle = None
            rec = [c if c.__class__ is not list else
                   [c[0] - here] if c[0] is not False else (cycle := c) for c in parts]
            rec.insert(0, t if cycle is None else ~t)
            cell[0] = here
            append(rec)
        return save_items

    def asset_or(self, handler):
        assets, asset_index = self.assets, []
        records = self.records

        def save_asset_or_object(obj, cell):
            asset_id = assets.get(id(obj))
            if asset_id is None:
                return handler(obj, cell)
            if not asset_index:
                asset_index.append(self.index_of(ASSET))
            cell[0] = len(records)
            records.append([asset_index[0], asset_id])
        return save_asset_or_object

    def wrap(self, reflective):
        """A direct handler from a reflective one: the children it pushes are written
        right away, in the order the iterative walk would visit them."""
        stack, memo, records, visit = self.stack, self.memo, self.records, self.visit
        closes_cycle = self.closes_cycle

        def save_reflectively(obj, cell):
            cell[0] = False
            base = len(stack)
            rec = reflective(obj)
            closes = closes_cycle[0]
            if closes:
                closes_cycle[0] = False
            if len(stack) > base:
                children = stack[base:]
                del stack[base:]
                built_at = len(records)
                for child in children:
                    child_cell = memo[id(child)]
                    if child_cell[0] is None:
                        visit(child, child_cell)
                rec = finished(rec, built_at, len(records))
            if closes:
                rec[0] = ~rec[0]
            cell[0] = len(records)
            records.append(rec)
        return save_reflectively

    def fallback_for(self, cls):
        """The reflective direct handler of cls, for the instances generated code does
        not cover (an unset slot)."""
        return self.wrap(self.save_instance)


def _flat_dict(d):
    return chain.from_iterable(d.items())


def _frames_in_use():
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth
