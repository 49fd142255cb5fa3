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

Recursion never changes the recursion limit (it is the process's, shared by all its
threads). Each handler gets the nesting ``depth`` of its object; a thread recurses as
far as the frames left under the limit allow (``limit`` levels), then the walk goes on
in the next thread of a chain made once per walk, while the one before waits (the depth
the limit bounds is per thread), and past MAX_THREADS of them the iterative walk of
``Walker`` writes the rest: the same records in every case. A failure is a SaveError
with the path of the object whose handler failed, as the iterative walk gives it: a save
walks the graph once, whatever happens.
"""

import sys
import threading
from itertools import chain

from .adapters import ADAPTERS_BY_TYPE
from .adapters.callables import ASSET
from .generated import GENERATED
from .registry import REGISTRY
from .paths import placed, placed_cause
from .walk import PRIMITIVES, STOP, Walker, finished

FRAMES_PER_LEVEL = 4      # at most: visit, asset_or, a handler, its list comprehension (3.11)
RESERVED_FRAMES = 60      # for what handlers call (__getstate__, __reduce__, adapters)
THREAD_FRAMES = 4         # the frames a new thread starts its target under
MAX_THREADS = 64          # then the iterative walk: about 20,000 levels by recursion
INLINE = PRIMITIVES       # written as themselves (wide ints too: format 3 has them inline)


class DirectWalker(Walker):
    def __init__(self):
        super().__init__()
        self.direct = {}              # class -> direct handler
        self.workers = []             # the threads the walk goes on in, by level
        self.segment = {}             # thread ident -> its place in that chain
        # Nesting levels a thread may recurse into. The recursion limit is the
        # process's, shared by its threads: it is never changed. The depth it bounds is
        # per thread, so past ``limit`` levels the walk goes on in a new thread while
        # this one waits; past MAX_THREADS of them, iteratively.
        self.limit = max(0, sys.getrecursionlimit() - THREAD_FRAMES - RESERVED_FRAMES) // FRAMES_PER_LEVEL
        self.visit, self.ref = self._make_visit()

    def _make_visit(self):
        memo, direct, memo_get, limit = self.memo, self.direct, self.memo.get, self.limit

        def visit(obj, cell, depth):
            """Write obj's record now (it is not written nor in progress); its cell.
            ``cell``: its memo entry if it has one (mentioned, not visited yet), else
            None. ``depth``: the nesting level of the handler calling."""
            if cell is None:
                cell = memo[id(obj)] = [None]
            if depth >= limit:
                return self.deeper(obj, cell)
            try:
                handler = direct.get(obj.__class__)
                if handler is None:
                    handler = direct[obj.__class__] = self.direct_handler_for(obj.__class__)
                handler(obj, cell, depth + 1)
            except Exception as e:
                raise placed(self, obj, e) from placed_cause(e)
            return cell

        def ref(obj, depth):
            """obj's cell once written (its index), or in progress (False: a cycle)."""
            cell = memo_get(id(obj))
            if cell is not None and cell[0] is not None:
                return cell
            return visit(obj, cell, depth)

        return visit, ref

    def release(self):
        for worker in self.workers:
            worker.stop()
        super().release()

    def tables(self):
        return (*super().tables(), self.direct)

    def deeper(self, obj, cell):
        """Write obj when this thread has no levels left: on the next thread of the
        chain (made once per walk; one runs at a time, so the walk's state needs no
        lock), or iteratively past MAX_THREADS of them."""
        here = threading.get_ident()
        level = self.segment.get(here, 0) + 1
        if level > MAX_THREADS:
            self.stack += (STOP, obj)
            self.drain()
            return cell
        if level > len(self.workers):
            self.workers.append(_Worker(self.visit))
            self.segment[self.workers[-1].ident] = level
        return self.workers[level - 1].write(obj, cell)

    def _run(self, root):
        self.root = root
        if root.__class__ in INLINE:
            root_value = root
        else:
            # As deep already as this thread is: the levels a fresh thread has, less
            # those the caller's frames take.
            used = _frames_in_use() - THREAD_FRAMES
            root_value = self.visit(root, None, max(0, used // FRAMES_PER_LEVEL + 1))
        records = self.records
        self.write_weak_entries()
        if root_value.__class__ is list:
            root_value = [root_value[0] - len(records)]
        return self.types, records, root_value

    # -- handlers ------------------------------------------------------------------------

    def direct_handler_for(self, cls):
        if cls in REGISTRY.asset_classes:
            # As the reflective walk does: the class's own handler (its checks, its
            # type-table entry) only once an instance that is not an asset is met, so
            # a class saved only as assets adds nothing to the type table.
            return self.asset_or(lambda: self.object_handler_for(cls))
        return self.object_handler_for(cls)

    def object_handler_for(self, cls):
        factory = GENERATED.save_factory(cls)
        if factory is not None:
            # The reflective handler is made first, only for its checks (trust, C
            # layouts) and its type-table entry, so both paths agree on those.
            self.plain_handler_for(cls)
            return factory(self)
        # Items are taken before any child is written, as the reflective walk takes
        # them: a child's __reduce__ that changes the container cannot make the two
        # engines disagree (or fail mid-iteration in one of them).
        if cls is tuple:
            return self.direct_items(cls, iter)
        if cls is list:
            return self.direct_items(cls, list.copy)
        if cls is dict:
            return self.direct_items(cls, _flat_dict)
        return self.wrap(self.plain_handler_for(cls))

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

        def save_items(obj, cell, depth):
            cell[0] = False
            parts = [v if v.__class__ in INLINE else
                     c if (c := memo_get(id(v))) is not None and c[0] is not None else
                     visit(v, c, depth) for v in items(obj)]
            here = len(records)
            cycle = None
            rec = [c if c.__class__ is not list else
                   [c[0] - here] if c[0] is not False else (cycle := c) for c in parts]
            rec.insert(0, t if cycle is None else ~t)
            cell[0] = here
            append(rec)
        return save_items

    def asset_or(self, make):
        """A direct handler for a class with registered assets: the asset record for
        an asset, else the handler ``make()`` returns, made at the first such object."""
        assets, asset_index, handler = self.assets, [], []
        records = self.records

        def save_asset_or_object(obj, cell, depth):
            asset_id = assets.get(id(obj))
            if asset_id is None:
                if not handler:
                    try:
                        handler.append(make())
                    except Exception as e:       # generated code may call us directly
                        raise placed(self, obj, e) from placed_cause(e)
                return handler[0](obj, cell, depth)
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

        def save_reflectively(obj, cell, depth):
            cell[0] = False
            base = len(stack)
            try:
                rec = reflective(obj)
            except Exception as e:               # generated code may call us directly
                raise placed(self, obj, e) from placed_cause(e)
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
                        visit(child, child_cell, depth)
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


class _Worker:
    """A thread that writes objects on behalf of a thread out of recursion levels.
    The caller waits while it works: exactly one thread of the walk runs at a time."""

    def __init__(self, visit):
        self.visit, self.task, self.outcome = visit, None, None
        self.go, self.done = threading.Lock(), threading.Lock()
        self.go.acquire()
        self.done.acquire()
        self.thread = threading.Thread(target=self.serve, name="autosave-deep-save",
                                       daemon=True)
        self.thread.start()
        self.ident = self.thread.ident

    def serve(self):
        while True:
            self.go.acquire()
            if self.task is None:
                return
            obj, cell = self.task
            self.task = None
            try:
                self.visit(obj, cell, 0)
            except BaseException as e:     # re-raised on the waiting thread
                self.outcome = e
            self.done.release()

    def write(self, obj, cell):
        self.task = (obj, cell)
        self.go.release()
        self.done.acquire()
        if self.outcome is not None:
            error, self.outcome = self.outcome, None
            raise error
        return cell

    def stop(self):
        self.task = None
        self.go.release()
        self.thread.join()


def _flat_dict(d):
    return [*chain.from_iterable(d.items())]


def _frames_in_use():
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth
