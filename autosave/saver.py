"""The save engine: a root -> records (type table, records, root value), in one walk.

``Saver`` writes each object's record through a *direct handler* ``h(obj, cell,
depth)``: it marks its object in progress (``cell[0] = False``), writes each child it
meets at once (``visit``), then emits its record with every reference known, through
``autosave.format``'s ``emit``. Records therefore come in post-order, and a record
refers to a later one only along a cycle.

Direct handlers come from generated code (``autosave-codegen``, which talks to the
engine only through ``SaveContext``, below), from the generic ones here (lists, tuples,
dicts, slotted and ``__dict__`` classes), or wrap a reflective record maker of
``walk.Walker`` (every other kind of class), writing the children it mentions in the
order the maker gave them. Generated or not, the records are the same bytes: the suite
saves every graph both ways.

Recursion never changes the recursion limit (it is the process's, shared by all its
threads). Each handler gets the nesting ``depth`` of its object; a thread recurses as
far as the frames left under the limit allow (``levels``), then the walk goes on in the
next thread of a chain made once per walk, while the one before waits (the depth the
limit bounds is per thread), and past ``threads`` of them in the iterative loop of
``walk.Walker.drain``: the same records in every case. A failure is a SaveError with
the path of the object whose handler failed: a save walks the graph once, whatever
happens.
"""

import operator
import sys
import threading
from itertools import chain

from . import dispatch
from .adapters import ADAPTERS_BY_TYPE
from .adapters.callables import ASSET
from .generated import GENERATED, SAVE_ABI
from .registry import REGISTRY
from .paths import placed, placed_cause
from .walk import PRIMITIVES, STOP, Walker

FRAMES_PER_LEVEL = 4      # at most: visit, asset_or, a handler, its list comprehension (3.11)
RESERVED_FRAMES = 60      # for what handlers call (__getstate__, __reduce__, adapters)
THREAD_FRAMES = 4         # the frames a new thread starts its target under
MAX_THREADS = 64          # then the iterative walk: about 20,000 levels by recursion
INLINE = PRIMITIVES       # written as themselves (wide ints too: format 3 has them inline)


class SaveContext:
    """What generated save code may use of the engine: these operations and nothing
    else (``__slots__``: anything more is an AttributeError, never a silent skip).
    Generated modules are stamped with the ABI they were written for
    (``generated.SAVE_ABI``) and are refused, loudly, when it differs.

    * ``type_index(key, name, version, fields)`` the type-table index of a layout
    * ``lookup(id(obj))`` obj's cell if the walk has one: ``[None]`` mentioned, not
      written; ``[False]`` in progress; ``[index]`` written
    * ``visit(obj, cell, depth)`` write obj now (``cell``: what lookup gave); its cell
    * ``emit(cell, t, parts)`` emit the record (parts: inline values and cells)
    * ``fallback(cls)`` the reflective direct handler of cls (an unset slot, say)
    """
    __slots__ = OPERATIONS = ("type_index", "lookup", "visit", "emit", "fallback")
    ABI = SAVE_ABI

    def __init__(self, saver):
        self.type_index = saver.index_of
        self.lookup = saver.memo.get
        self.visit = saver.visit
        self.emit = saver.emit
        self.fallback = saver.fallback_for


class Saver(Walker):
    """The one save engine. ``generated``: use generated handlers where the game has
    them. ``levels`` and ``threads`` bound the recursion (tests shrink them to walk
    small graphs through the thread chain and the iterative continuation)."""

    def __init__(self, generated=True, levels=None, threads=None):
        super().__init__()
        self.generated = generated
        self.direct = {}              # class -> direct handler
        self.workers = []             # the threads the walk goes on in, by level
        self.segment = {}             # thread ident -> its place in that chain
        # Nesting levels a thread may recurse into. The recursion limit is the
        # process's, shared by its threads: it is never changed. The depth it bounds is
        # per thread, so past ``limit`` levels the walk goes on in a new thread while
        # this one waits; past ``max_threads`` of them, iteratively.
        self.limit = (max(0, sys.getrecursionlimit() - THREAD_FRAMES - RESERVED_FRAMES)
                      // FRAMES_PER_LEVEL) if levels is None else levels
        self.max_threads = MAX_THREADS if threads is None else threads
        self.visit, self.ref = self._make_visit()
        self.context = None

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
        if level > self.max_threads:
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
        self.write_weak_entries()
        return self.types, self.records, self.root_reference(root_value)

    # -- handlers ------------------------------------------------------------------------

    def direct_handler_for(self, cls):
        if cls in REGISTRY.asset_classes:
            # As the reflective walk does: the class's own handler (its checks, its
            # type-table entry) only once an instance that is not an asset is met, so
            # a class saved only as assets adds nothing to the type table.
            return self.asset_or(lambda: self.object_handler_for(cls))
        return self.object_handler_for(cls)

    def object_handler_for(self, cls):
        factory = GENERATED.save_factory(cls) if self.generated else None
        if factory is not None:
            # The reflective maker is made first, only for its checks (trust, C
            # layouts) and its type-table entry, so both paths agree on those.
            self.plain_handler_for(cls)
            if self.context is None:
                self.context = SaveContext(self)
            return factory(self.context)
        # Items are taken before any child is written, as the reflective maker takes
        # them: a child's __reduce__ that changes the container cannot make the
        # handlers disagree (or fail mid-iteration).
        if cls is tuple:
            return self.items_handler(self.index_of(ADAPTERS_BY_TYPE[cls]), iter)
        if cls is list:
            return self.items_handler(self.index_of(ADAPTERS_BY_TYPE[cls]), list.copy)
        if cls is dict:
            return self.items_handler(self.index_of(ADAPTERS_BY_TYPE[cls]), _flat_dict)
        reflective = self.plain_handler_for(cls)
        kind, schema = dispatch.kind_of(cls)
        if kind == "slots" and schema.saved_slots:
            return self.slots_direct(cls, schema)
        if kind == "dict":
            return self.dict_direct(cls, schema)
        return self.wrap(reflective)

    def items_handler(self, t, items):
        """A direct handler writing ``items(obj)`` as the parts of a type-``t`` record:
        lists, tuples and dicts, the hottest handlers."""
        memo_get, visit, emit = self.memo.get, self.visit, self.emit

        def save_items(obj, cell, depth):
            cell[0] = False
            emit(cell, t, [v if v.__class__ in INLINE else
                           c if (c := memo_get(id(v))) is not None and c[0] is not None else
                           visit(v, c, depth) for v in items(obj)])
        return save_items

    def slots_direct(self, cls, schema):
        slots = schema.saved_slots
        t = self.index_of((cls, slots), schema.name, schema.version, slots)
        get = operator.attrgetter(*slots)
        items = get if len(slots) > 1 else lambda obj: (get(obj),)
        memo_get, visit, emit = self.memo.get, self.visit, self.emit
        unset_slot = self.wrap(self.save_instance)

        def save_slotted(obj, cell, depth):
            try:
                values = items(obj)
            except AttributeError:        # an unset slot: the general maker writes it
                return unset_slot(obj, cell, depth)
            cell[0] = False
            emit(cell, t, [v if v.__class__ in INLINE else
                           c if (c := memo_get(id(v))) is not None and c[0] is not None else
                           visit(v, c, depth) for v in values])
        return save_slotted

    def dict_direct(self, cls, schema):
        memo_get, visit, emit, index_of = self.memo.get, self.visit, self.emit, self.index_of
        shapes = {}

        def save_dict(obj, cell, depth):
            d = obj.__dict__
            shape = tuple(d)
            t = shapes.get(shape)
            if t is None:
                t = shapes[shape] = index_of((cls, shape), schema.name, schema.version, shape)
            cell[0] = False
            emit(cell, t, [v if v.__class__ in INLINE else
                           c if (c := memo_get(id(v))) is not None and c[0] is not None else
                           visit(v, c, depth) for v in d.values()])
        return save_dict

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
        """A direct handler from a reflective record maker: the children it mentions are
        written right away, in the order the iterative loop would visit them."""
        stack, memo, visit, emit_record = self.stack, self.memo, self.visit, self.emit_record

        def save_reflectively(obj, cell, depth):
            cell[0] = False
            base = len(stack)
            try:
                rec = reflective(obj)
            except Exception as e:               # generated code may call us directly
                raise placed(self, obj, e) from placed_cause(e)
            if len(stack) > base:
                children = stack[base:]
                del stack[base:]
                for child in children:
                    child_cell = memo[id(child)]
                    if child_cell[0] is None:
                        visit(child, child_cell, depth)
            emit_record(cell, rec)
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
