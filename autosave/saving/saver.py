"""The save engine: a root -> records (type table, records, root value), in one walk.

``Saver`` is the one engine every save runs through. It walks iteratively
(``walk.Walker.drain``): an object's handler returns its record, whose parts are inline
values and the *cells* of the objects it mentions; the objects mentioned and not yet
written are visited next, depth-first, and the record is emitted once they are, so
records come in post-order and a record refers to a later one only along a cycle. No
recursion, so no recursion limit and no depth at which the walk changes its ways: a
graph a million levels deep is saved like a flat one.

Handlers come from generated code (``autosave-codegen``), which sees nothing of the
engine but ``SaveContext`` below, or from reflection (``walk``: one maker per kind of
class, in ``autosave.model.dispatch``'s order). Generated or not, the records are the same
bytes: the suite saves every graph both ways. A failure is a SaveError with the path
of the object whose handler failed: a save walks the graph once, whatever happens.
"""

from operator import itemgetter
from typing import Any

from ..errors import FormatError, LoadError, SaveError
from ..model.generated import GENERATED, SAVE_OPERATIONS
from ..checks.limits import check_records
from ..loading.protocol import plan_names, schedule_of
from .paths import find_path
from ..loading.plans import plan_for, release_plans
from .walk import Walker


class SaveContext:
    """What generated save code may use of the engine: these operations and nothing
    else (``__slots__``: anything more is an AttributeError, never a silent skip).
    Generated modules are stamped with the interface version they were written for
    (``generated.SAVE_ABI``) and refused, loudly, when it differs.

    * ``type_index(key, name, version, fields)`` the type-table index of a layout
    * ``lookup(id(obj))`` obj's cell if the walk has one: ``[None]`` mentioned, not
      written yet; ``[False]`` in progress; ``[index]`` written; or, for an object
      saved in a batch, its reference, an int (a record holds ``mention(obj)`` then)
    * ``mention(obj)`` what a record holds for a non-inline ``obj``: its cell,
      scheduling its visit if it is not written yet
    * ``fallback(cls)`` the reflective handler of cls, for the instances generated code
      does not cover (an unset slot)
    """
    __slots__ = OPERATIONS = SAVE_OPERATIONS

    def __init__(self, saver):
        self.type_index = saver.index_of
        self.lookup = saver.memo.get
        self.mention = saver.mention
        self.fallback = saver.fallback_for


class Saver(Walker):
    """The one save engine. ``generated``: use the game's generated handlers where it
    has them (configured once per save, by ``dumps``)."""

    # What this save offers out of band (autosave.format.buffers.SavePolicy), set by
    # dumps(buffer_callback=...) on its own walker; read by the numpy adapter.
    out_of_band: object = None
    # Whether the bytes are made before the game runs again (dumps, set on its own
    # walker): records may then hold views of the graph's memory instead of copies.
    # Never for a walk encoded later (dumps_later, a log's step), whose output is a
    # snapshot the game may change under.
    encodes_now: bool = False

    def __init__(self, generated: bool = True):
        super().__init__()
        self.generated = generated
        self.context = None

    def record_handler_for(self, cls, kind, detail):
        factory = GENERATED.save_factory(cls) if self.generated else None
        if factory is None:
            return super().record_handler_for(cls, kind, detail)
        # The reflective maker is made first, only for its checks (trust, C layouts)
        # and its type-table entry, so both paths agree on those.
        super().record_handler_for(cls, kind, detail)
        if self.context is None:
            self.context = SaveContext(self)
        return factory(self.context)

    def check_walk(self) -> None:
        self.check_loadable(self.types, self.records)

    def check_loadable(self, types: list[Any], records: list[Any]) -> None:
        """Refuse a graph that would save but not load: the loader's bounds (chains
        CPython frees or hashes by unchecked C recursion, hash work) are checked here
        on the records, with the plans a load would make, so no save is ever written
        that its own game could not read back."""
        if not records:                  # batches only: no chain to bound, no key to hash
            return
        plans: list[Any] = []
        try:
            # The bounds are about records alone (batch objects end every chain): only
            # the types records have are planned, as a load would plan them; a save of
            # batches and a few records plans those few. (check_records reads
            # ``schedules[t]`` and ``names[t]`` for those types only.)
            # Finding those types is a pass over the records: worth it where the records
            # are few for the types (planning a type costs some hundreds of records'
            # pass); else every type is planned, which decides the same.
            used: Any = (sorted({t if t >= 0 else ~t for t in set(map(itemgetter(0), records))})
                         if len(records) < 256 * len(types) else range(len(types)))
            plans.extend(plan_for(t, types[t]) for t in used)
            check_records(dict(zip(used, map(schedule_of, plans))), records,
                          self.first_record, dict(zip(used, plan_names(plans))))
        except LoadError as e:
            if not isinstance(e, FormatError) or not hasattr(e, "record"):
                raise SaveError(f"this graph would save but not load: {e}", "root") from e
            index = self.first_record + e.record
            ids = {i for i, cell in self.memo.items()
                   if cell.__class__ is list and cell[0] == index}
            path = find_path(self.root, None, self.made, lambda obj: id(obj) in ids)
            raise SaveError(f"this graph would save but not load: its {e}", path) from None
        finally:
            release_plans(plans)

    def fallback_for(self, cls):
        """The reflective handler of cls, for the instances generated code does not
        cover (an unset slot)."""
        return self.save_instance
