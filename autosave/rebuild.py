"""Load: records -> objects.

1. Every type entry becomes a *plan* (an adapter, or a plan for a class built from the
   saved field names and the class as it is now: trust, renamed classes, versions,
   upgrade hooks, added and removed fields).
2. Records are built in order. Records come in post-order, so a reference to an
   earlier record finds a finished object. A reference to a later record closes a cycle:
   a mutable target is allocated early; a record that needs an immutable target not yet
   built, or whose fill hashes objects not yet filled, waits in ``deferred`` and is
   retried once what it needs exists.
3. ``__autosave_loaded__`` hooks run last, in record order.
"""

from collections import deque
from itertools import islice
from operator import is_

from .adapters import ADAPTERS_BY_NAME
from .adapters.callables import apply_default_state
from .errors import FormatError, IncompatibleSaveError, LoadError
from .format import ABSENT, STATE_FIELDS, target, type_entry
from .generated import GENERATED
from .limits import check_records
from .adapters.containers import flood_checked
from .loadcheck import bound_hook, describe
from .upgrades import run_upgrades, upgrade_chain
from .registry import REGISTRY
from .schema import schema_of



class _Missing:
    def __repr__(self):
        return "<not built yet>"


MISSING = _Missing()


def _has_missing(vals):
    return any(map(is_, vals, [MISSING] * len(vals)))


# -- plans for classes -------------------------------------------------------------------

class EnumPlan:
    mutable, has_fill, has_loaded_hook = False, False, False
    build_slice, build_finished, fill_finished, hashes = slice(1, None), None, None, False

    def __init__(self, cls):
        self.cls = cls

    def build(self, vals):
        if len(vals) == 2:
            if type(vals[1]) is not str:
                raise FormatError(f"an enum {self.cls.__qualname__} record holds a "
                                  f"member name")
            member = self.cls.__members__.get(vals[1])
            if member is None:
                raise IncompatibleSaveError(
                    f"enum {self.cls.__qualname__} has no member {vals[1]!r} any more")
            return member
        _, none, value = vals
        if type(value) not in _PLAIN:     # looked up by hash: plain values only
            raise FormatError(f"an enum {self.cls.__qualname__} record holds a "
                              f"{type(value).__name__} value")
        try:
            return self.cls(value)
        except ValueError:
            raise IncompatibleSaveError(
                f"enum {self.cls.__qualname__} has no value {value!r} any more") from None


_PLAIN = (type(None), bool, int, float, str, bytes)


class StatePlan:
    """A class saved through ``__getstate__``; filled by ``__setstate__``."""
    mutable, has_fill = True, True
    build_finished, fill_finished, hashes = None, slice(1, None), False

    def __init__(self, cls, saved_version=None):
        self.cls = cls
        self.has_loaded_hook = hasattr(cls, "__autosave_loaded__")
        self.hash_kind = 0 if cls.__hash__ in (object.__hash__, None) else 2
        self.schema = schema_of(cls)
        self.saved_version = self.schema.version if saved_version is None else saved_version
        self.upgrades = upgrade_chain(self.schema, self.saved_version)

    def allocate(self, rec):
        if len(rec) > 2:
            raise ValueError(f"a {self.cls.__qualname__} record holds one state value")
        return self.cls.__new__(self.cls)

    def fill(self, obj, vals):
        if len(vals) < 2:
            return
        state = vals[1]
        if self.upgrades:
            # a state class's hooks take its state dict, as they take others' fields
            if type(state) is not dict:
                raise IncompatibleSaveError(
                    f"{self.schema.name} version {self.saved_version} was saved with a "
                    f"{type(state).__name__} state; upgrade hooks take a dict state")
            state = run_upgrades(self.schema, self.saved_version, self.upgrades, state)
        setstate = bound_hook(obj, "__setstate__")
        try:
            if setstate is not None:
                setstate(state)
            else:
                apply_default_state(obj, state)
        except LoadError:
            raise
        except Exception as e:
            raise IncompatibleSaveError(
                f"{self.cls.__qualname__}.__setstate__ failed on the saved state: "
                f"{describe(e)}") from e


class InstancePlan:
    """A class saved field by field, mapped onto the class as it is now."""

    def __init__(self, cls, saved_name, saved_version, fields):
        schema = self.schema = schema_of(cls)
        self.cls = cls
        self.fields = fields
        self.nfields = len(fields)
        self.has_loaded_hook = hasattr(cls, "__autosave_loaded__")
        self.unset_slots = 0        # unset-slot markers consumed, checked against the file
        base = schema.base
        self.base = base
        self.mutable = base is None or base in (list, dict, set, deque)
        self.has_fill = True
        self.build_slice = slice(1 + self.nfields, None)
        self.build_finished = self.build_slice if base is frozenset else None
        self.fill_finished = {dict: slice(1 + self.nfields, None, 2),
                              set: self.build_slice}.get(base)
        self.hashes = base in (dict, set, frozenset)
        hash_ = cls.__hash__
        self.hash_kind = (1 if hash_ is tuple.__hash__ else
                          0 if hash_ in (object.__hash__, None, frozenset.__hash__) else 2)
        self.saved_version = saved_version
        self.upgrades = upgrade_chain(schema, saved_version)
        self.slots = frozenset(schema.slots)
        self.setters = []           # (record position, name, is_slot)
        for pos, name in enumerate(fields, 1):
            if name in schema.transient:
                continue
            if name in self.slots:
                self.setters.append((pos, name, True))
            elif schema.has_dict:
                self.setters.append((pos, name, False))
        present = set(fields) - schema.transient
        self.defaults = []          # (name, FieldDefault) to apply after the fields
        if not self.upgrades:       # with hooks, what they return decides (fill_upgraded)
            for name in schema.declared or ():
                if name in present:
                    continue
                d = schema.defaults.get(name)
                if d is not None and d.exists:
                    self.defaults.append((name, d))
                elif name not in schema.transient:
                    raise IncompatibleSaveError(
                        f"{schema.name} has a field {name!r} the save does not hold, and "
                        f"the field has no default; give it a default or an "
                        f"@autosave.upgrade hook")
        self.new = (base or object).__new__
        self.create = self.create_from_record = None
        # The class's layout (the schema's one decision) picks the fill; a record that
        # needs upgrades, defaults or skips a field takes the general one.
        simple = not self.upgrades and not self.defaults
        if simple and schema.layout == "dict" and len(self.setters) == self.nfields:
            self.fill, self.create = self.fill_dict, self.create_filled
        elif simple and schema.layout == "slots" and all(is_slot for _, _, is_slot in self.setters):
            self.slot_setters = [(pos, getattr(cls, name).__set__) for pos, name, _ in self.setters]
            self.fill, self.create = self.fill_slots, self.create_filled

    def allocate(self, rec):
        if len(rec) != 1 + self.nfields and self.base is None:
            raise ValueError(f"a {self.schema.name} record holds {self.nfields} fields, "
                             f"found {len(rec) - 1}")
        return self.new(self.cls)

    def create_filled(self, rec, vals):
        obj = self.allocate(rec)
        self.fill(obj, vals)
        return obj

    def fill_dict(self, obj, vals):
        obj.__dict__.update(zip(self.fields, islice(vals, 1, None)))

    def fill_slots(self, obj, vals):
        for pos, set_slot in self.slot_setters:
            v = vals[pos]
            if v is not ABSENT:
                set_slot(obj, v)
            else:
                self.unset_slots += 1

    def build(self, vals):
        payload = vals[1 + self.nfields:]
        base = self.base
        if base is frozenset:
            flood_checked(vals, 1 + self.nfields, 1, f"a {self.schema.name}")
        if base is tuple or base is frozenset:
            return base.__new__(self.cls, payload)
        (value,) = payload
        if type(value) is not base and not (base is int and type(value) is int):
            raise ValueError(f"a {self.schema.name} record holds a {base.__name__} value")
        return base.__new__(self.cls, value)

    def fill(self, obj, vals):
        nf = self.nfields
        if self.upgrades:
            self.fill_upgraded(obj, vals)
        else:
            setattr_ = object.__setattr__
            d = obj.__dict__ if self.schema.has_dict else None
            for pos, name, is_slot in self.setters:
                v = vals[pos]
                if is_slot:
                    if v is not ABSENT:
                        setattr_(obj, name, v)
                    else:
                        self.unset_slots += 1
                else:
                    d[name] = v
        for name, default in self.defaults:
            self.set_field(obj, name, default.make(obj))
        base = self.base
        if base is list:
            list.extend(obj, islice(vals, 1 + nf, None))
        elif base is dict:
            flood_checked(vals, 1 + nf, 2, f"a {self.schema.name}")
            it = islice(vals, 1 + nf, None)
            dict.update(obj, zip(it, it))
        elif base is set:
            flood_checked(vals, 1 + nf, 1, f"a {self.schema.name}")
            set.update(obj, islice(vals, 1 + nf, None))
        elif base is deque:
            maxlen = vals[1 + nf]
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise ValueError("a deque's maxlen must be None or a non-negative int")
            deque.__init__(obj, islice(vals, 2 + nf, None), maxlen)

    def set_field(self, obj, name, value):
        if name in self.slots:
            object.__setattr__(obj, name, value)
        elif self.schema.has_dict:
            obj.__dict__[name] = value

    def fill_upgraded(self, obj, vals):
        fields = {}
        for name, v in zip(self.fields, islice(vals, 1, None)):
            if v is not ABSENT:
                fields[name] = v
            elif name in self.slots:
                self.unset_slots += 1
        schema = self.schema
        fields = run_upgrades(schema, self.saved_version, self.upgrades, fields)
        declared = schema.declared
        for name, value in fields.items():
            if name not in schema.transient:
                self.set_field(obj, name, value)     # a field the class lost is dropped
        for name in declared or ():
            if name in fields or name in schema.transient:
                continue
            d = schema.defaults.get(name)
            if d is None or not d.exists:
                raise IncompatibleSaveError(
                    f"{schema.name} field {name!r} has no value after the upgrade hooks from "
                    f"version {self.saved_version} ran, and no default; the hook for "
                    f"version {schema.version - 1} must supply it")
            self.set_field(obj, name, d.make(obj))


# -- type entries -> plans ---------------------------------------------------------------

def plan_for(index, entry):
    name, version, fields = type_entry(index, entry)
    adapter = ADAPTERS_BY_NAME.get(name)
    if adapter is not None:
        if fields:
            raise FormatError(f"type entry {index} ({name}) must not list fields")
        return adapter
    cls = REGISTRY.resolve(name, "class")
    if not isinstance(cls, type):
        raise IncompatibleSaveError(f"the save's type {name!r} now names a "
                                    f"{type(cls).__name__}, not a class")
    schema = schema_of(cls)
    if schema.strategy == "enum":
        return EnumPlan(cls)
    if fields == list(STATE_FIELDS):
        return StatePlan(cls, version)
    return InstancePlan(cls, name, version, fields)


def release_plans(plans):
    """Empty the plans of a load (or of a save's check that it would load): a plan keeps
    its own bound methods (``fill``, ``create``), a cycle per class for the collector.
    Adapters are shared and hold none."""
    for plan in plans:
        if type(plan) in (InstancePlan, StatePlan, EnumPlan):
            vars(plan).clear()


# -- records -> objects ------------------------------------------------------------------

class Loader:
    def __init__(self, types, records, unset_markers=0, closes_cycle=None):
        self.records = records
        self.objs = []
        self.plans = [plan_for(i, e) for i, e in enumerate(types)]
        check_records(self.plans, records)
        if not unset_markers:
            # Generated code builds records straight into their objects; it never sees
            # unset-slot markers, so it is used only when the file holds none.
            for plan in self.plans:
                if isinstance(plan, InstancePlan) and plan.create is not None:
                    factory = GENERATED.load_factory(plan.cls)
                    # The load side of the generated-code interface (SAVE_ABI): the
                    # saved field names, whether each maps straight onto the class as
                    # it is (no upgrades, defaults or dropped fields), the built objects.
                    plain = (not plan.upgrades and not plan.defaults
                             and len(plan.setters) == plan.nfields)
                    made = (factory(tuple(plan.fields), plain, self.objs)
                            if factory is not None else None)
                    if made is not None:
                        plan.create, plan.fill, plan.create_from_record = made
        self.early = {}            # index -> mutable allocated before its record
        self.unfinished = set()    # allocated, not yet filled
        self.unset_markers = unset_markers
        self.closes_cycle = closes_cycle if closes_cycle is not None else bytearray(len(records))
        self.hash_ready = set()    # records known to hash by their final value
        self.current = None
        self.forwarded_missing = False   # forward() gave MISSING: vals may hold it

    def release(self):
        """A plan keeps its own bound methods (``fill``, ``create``): a cycle per class.
        The plans are this load's own (adapters are shared and hold none), so emptying
        them and the loader frees this load's bookkeeping now, not at a collection."""
        release_plans(self.plans)
        vars(self).clear()

    def run(self, root_value):
        records, objs = self.records, self.objs
        early, unfinished = self.early, self.unfinished
        deferred, hooks = [], []
        has_missing = False
        # Per type: (plan, mutable, fill or None, fill_finished, has __autosave_loaded__,
        #            create or None, generated create_from_record or None)
        info = [(p, p.mutable, p.fill if p.has_fill else None, p.fill_finished, p.has_loaded_hook,
                 getattr(p, "create", None),
                 p.create_from_record if isinstance(p, InstancePlan) else None)
                for p in self.plans]
        append = objs.append
        closes_cycle = self.closes_cycle
        i = 0
        try:
            for i, rec in enumerate(records):
                plan, mutable, fill, fill_finished, hook, create, from_record = info[rec[0]]
                if from_record is not None and not closes_cycle[i] and not has_missing \
                        and not (early and i in early):
                    try:
                        append(from_record(rec))   # generated: resolves its references
                    except IndexError:          # an unmarked forward reference: below
                        pass
                    else:
                        if hook:
                            hooks.append(i)
                        continue
                if closes_cycle[i]:
                    slow = True                 # refers to a later record: resolve below
                else:
                    try:
                        vals = [objs[v[0]] if v.__class__ is list else v for v in rec]
                        slow = has_missing and _has_missing(vals)
                    except IndexError:          # an unmarked forward reference
                        slow = True
                if create is not None and not slow and (fill_finished is None or not unfinished) \
                        and not (early and i in early):
                    append(create(rec, vals))   # the common case: nothing to wait for
                    if hook:
                        hooks.append(i)
                    continue
                if slow:
                    forward, built = self.forward, len(objs)
                    vals = [v if v.__class__ is not list else
                            objs[v[0]] if v[0] < built else forward(v[0], i) for v in rec]
                    maybe_missing = has_missing or self.forwarded_missing
                if mutable:
                    obj = early.pop(i, None) if early else None
                    if obj is None:
                        obj = plan.allocate(rec)
                    append(obj)
                elif (slow and maybe_missing and _has_missing(vals[plan.build_slice])) or (
                        plan.build_finished is not None and (slow or unfinished)
                        and self.blocker(rec, plan.build_finished, i, plan.hashes) is not None):
                    append(MISSING)
                    has_missing = True
                    deferred.append(i)
                    continue
                else:
                    obj = plan.build(vals)
                    append(obj)
                if fill is not None:
                    if (slow and maybe_missing and _has_missing(vals)) or (
                            fill_finished is not None and (slow or unfinished)
                            and self.blocker(rec, fill_finished, i, plan.hashes) is not None):
                        unfinished.add(i)
                        deferred.append(i)
                    else:
                        fill(obj, vals)
                        if unfinished:
                            unfinished.discard(i)
                if hook:
                    hooks.append(i)
        except BaseException:
            self.current = i
            raise
        if deferred:
            self.finish_deferred(deferred, hooks)
        self.current = None
        consumed = sum(getattr(p, "unset_slots", 0) for p in self.plans)
        if consumed != self.unset_markers:
            raise FormatError(f"the save holds {self.unset_markers} unset-slot markers, "
                              f"{self.unset_markers - consumed} of them outside a slot field")
        root = self.value(root_value)
        for i in sorted(hooks) if deferred else hooks:
            obj = objs[i]
            try:
                bound_hook(obj, "__autosave_loaded__")()
            except Exception as e:
                raise LoadError(f"{type(obj).__qualname__}.__autosave_loaded__ failed: "
                                f"{describe(e)}") from e
        return root

    def blocker(self, rec, part, here, hashes):
        """The first record that rec[part] needs finished and is not, or None.

        Reading contents needs the referenced objects built and filled. Hashing them
        needs more: a key's hash may run through its fields into objects beyond it, so
        everything reachable through objects hashed by value must be done; an object
        hashed by identity ends the search, its hash never changes.
        """
        unfinished, records = self.unfinished, self.records
        todo = self.targets(rec, part, here)
        if not hashes:
            return next((j for j in todo if j != here and (
                self.obj_at(j) is MISSING or j in unfinished)), None)
        seen, ready = set(), self.hash_ready
        while todo:
            j = todo.pop()
            if j in seen or j in ready:
                continue
            seen.add(j)
            obj = self.obj_at(j)
            if obj is MISSING:
                return j
            hash_ = type(obj).__hash__
            if hash_ is object.__hash__ or hash_ is None:
                continue              # identity hash, or unhashable (fails on its own)
            if j in unfinished:
                return j
            todo.extend(self.targets(records[j], ALL, j))
        ready |= seen                 # all done: they hash by their final values
        return None

    def obj_at(self, j):
        objs = self.objs
        return objs[j] if j < len(objs) else self.early.get(j, MISSING)

    def value(self, v):
        if v.__class__ is list:
            n = len(self.objs)
            if len(v) != 1 or type(v[0]) is not int or not -n <= v[0] < n:
                raise FormatError(f"the root reference is malformed or out of range "
                                  f"(0..{n - 1})")
            return self.objs[v[0]]
        return v

    def resolve(self, rec, here):
        """Resolve record ``here``'s references one by one; a reference to a record not
        reached yet allocates it early if it is mutable, else gives MISSING."""
        objs = self.objs
        built = len(objs)
        vals = [rec[0]]
        for v in islice(rec, 1, None):
            if v.__class__ is list:
                j = v[0]
                if len(v) != 1 or j.__class__ is not int:
                    raise FormatError(f"record {here}: a reference is malformed")
                if j < 0:
                    j += here
                v = objs[j] if 0 <= j < built else self.forward(j, here)
            vals.append(v)
        return vals

    def forward(self, j, here):
        if not 0 <= j < len(self.records):
            raise FormatError(f"record {here}: reference to record {j} is out of range "
                              f"(0..{len(self.records) - 1})")
        obj = self.early.get(j)
        if obj is None:
            target = self.records[j]
            plan = self.plans[target[0]]
            if not plan.mutable:
                self.forwarded_missing = True
                return MISSING
            obj = self.early[j] = plan.allocate(target)
            self.unfinished.add(j)
        return obj

    def finish_deferred(self, deferred, hooks):
        """Complete the records that waited, each as soon as what it waits for is done.

        A waiting record registers on every record blocking it: on being *built* (an
        immutable not made yet) or on being *finished* (a mutable not filled yet), and is
        retried only when all of them are done, so this is linear in the references
        whatever a file says. When nothing is ready but records remain, only cycles are
        left: records that wait just for fills go ahead anyway, as pickle does, those
        whose blockers hash by identity first (their hash cannot change when filled).
        """
        objs, unfinished = self.objs, self.unfinished
        on_built, on_finished = {}, {}
        need = {}                 # waiting record -> [built blockers left, fill blockers]
        waiting = set(deferred)
        ready = deque(deferred)
        only_fills = set()        # waiting, and blocked by nothing but unfinished fills

        def complete(j, table, built):
            for i in table.pop(j, ()):
                if i in waiting:
                    counts = need[i]
                    counts[0 if built else 1] -= 1
                    if counts == [0, 0]:
                        ready.append(i)
                    elif counts[0] == 0:
                        only_fills.add(i)

        def attempt(i, force):
            self.current = i
            rec = self.records[i]
            plan = self.plans[rec[0]]
            if objs[i] is MISSING:
                building, missing_part, finished_part = True, plan.build_slice, plan.build_finished
            else:
                building, missing_part, finished_part = False, ALL, plan.fill_finished
            need_built = [j for j in self.targets(rec, missing_part, i) if objs[j] is MISSING]
            need_finished = []
            if not force and finished_part is not None:
                j = self.blocker(rec, finished_part, i, plan.hashes)
                if j is not None:
                    (need_built if objs[j] is MISSING else need_finished).append(j)
            if need_built or need_finished:
                need[i] = [len(need_built), len(need_finished)]
                for j in need_built:
                    on_built.setdefault(j, []).append(i)
                for j in need_finished:
                    on_finished.setdefault(j, []).append(i)
                if not need_built:
                    only_fills.add(i)
                return
            only_fills.discard(i)
            vals = self.resolve(rec, i)
            if building:
                objs[i] = plan.build(vals)
                if plan.has_loaded_hook:
                    hooks.append(i)
                complete(i, on_built, True)
                if plan.has_fill:
                    unfinished.add(i)
                    ready.appendleft(i)   # its fill next (may wait in turn)
                    return
            else:
                plan.fill(objs[i], vals)
            unfinished.discard(i)
            waiting.discard(i)
            complete(i, on_finished, False)

        def hashes_safely(i):
            rec = self.records[i]
            plan = self.plans[rec[0]]
            part = plan.build_finished if objs[i] is MISSING else plan.fill_finished
            return all(type(objs[j]).__hash__ is object.__hash__
                       for j in self.targets(rec, part or ALL, i) if j in unfinished)

        while waiting:
            while ready:
                i = ready.popleft()
                if i in waiting:
                    attempt(i, False)
            if waiting:
                stuck = sorted(only_fills & waiting)
                if not stuck:
                    raise FormatError(
                        f"records {sorted(waiting)[:10]} form a reference cycle through "
                        f"immutable objects that cannot be rebuilt")
                safe = [i for i in stuck if hashes_safely(i)]
                for i in safe or stuck:
                    only_fills.discard(i)
                    if i in waiting:
                        attempt(i, True)

    def targets(self, rec, part, here):
        """Absolute record indices of the references in rec[part]; rec is record ``here``."""
        return [target(v[0], here) for v in rec[part] if v.__class__ is list]


ALL = slice(1, None)


def load_records(types, records, root_value, unset_markers=0, closes_cycle=None):
    loader = None
    try:
        loader = Loader(types, records, unset_markers, closes_cycle)
        return loader.run(root_value)
    except LoadError:
        raise
    except RecursionError:
        raise FormatError("the save nests values too deeply") from None
    except Exception as e:
        where = (f"record {loader.current}" if loader and loader.current is not None
                 else "the type table" if loader is None else "the root")
        raise FormatError(f"{where} is malformed: {describe(e)}") from e
    finally:
        if loader is not None:
            loader.release()
