"""Load: a *plan* per type entry, made from the saved name, version and field names and
the class as it is now (trust, renamed classes, versions, upgrade hooks, added and
removed fields): how ``rebuild`` builds and fills that type's records and ``fill`` its
batch objects.
"""

import sys
from typing import Any
from collections import deque
from itertools import islice, repeat
from types import MemberDescriptorType

from ..model.adapters import ADAPTERS_BY_NAME
from ..model.adapters.base import ON_REGISTER
from ..model.adapters.callables import apply_default_state
from ..model.adapters.containers import flood_checked
from ..errors import FormatError, IncompatibleSaveError, LoadError, UntrustedTypeError
from ..format import kernels
from ..format.wire import ABSENT, STATE_FIELDS, type_entry
from ..checks.loadcheck import bound_hook, class_attribute, describe
from ..model.reconstructors import check_inert
from ..model.registry import REGISTRY, SAFE_STDLIB_NAMES
from ..model.schema import schema_of
from ..model.upgrades import run_upgrades, unreachable_hooks, upgrade_chain
from .protocol import schedule_of


# -- plans for classes -------------------------------------------------------------------

def has_attribute(cls: type, name: str) -> bool:
    """``hasattr(cls, name)``. A class whose metaclass is ``type`` has it when a class of
    its MRO defines it: asked so, a missing one costs no AttributeError (which 3.11
    formats a message for)."""
    if type(cls) is type:
        for klass in cls.__mro__:
            if name in klass.__dict__:
                return True
        return name in type.__dict__
    return hasattr(cls, name)


class EnumPlan:
    mutable, has_fill, has_loaded_hook, reads_parts, deep = False, False, False, False, False
    build_slice, build_finished, fill_finished, hashes = slice(1, None), None, None, False

    def __init__(self, cls: Any):      # an Enum class
        self.cls = cls

    def fresh(self) -> "EnumPlan":
        """A copy for one load (``plan_for`` keeps the one made)."""
        plan = object.__new__(EnumPlan)
        plan.__dict__ = self.__dict__.copy()
        return plan

    def build(self, vals: list[Any]) -> Any:
        if len(vals) == 2:
            if type(vals[1]) is not str:
                raise FormatError(f"an enum {self.cls.__qualname__} record holds a "
                                  f"member name")
            member = self.cls.__members__.get(vals[1])
            if member is None:
                raise IncompatibleSaveError(
                    f"enum {self.cls.__qualname__} has no member {vals[1]!r} any more "
                    f"({self.where()}); keep the old "
                    f"name in its body as an alias, {vals[1]} = <the value of the member "
                    f"it became> (or its old value), and the save loads")
            return member
        _, none, value = vals
        if type(value) not in _PLAIN:     # looked up by hash: plain values only
            raise FormatError(f"an enum {self.cls.__qualname__} record holds a "
                              f"{type(value).__name__} value")
        try:
            return self.cls(value)
        except ValueError:
            raise IncompatibleSaveError(
                f"enum {self.cls.__qualname__} has no value {value!r} any more "
                f"({self.where()}); give a member that "
                f"value again in its body (OLD_NAME = {value!r}), and the save loads") from None

    def where(self) -> str:
        return f"class {self.cls.__qualname__} in module {self.cls.__module__}"


_PLAIN = (type(None), bool, int, float, str, bytes)


class StatePlan:
    """A class saved through ``__getstate__``; filled by ``__setstate__``."""
    mutable, has_fill, reads_parts = True, True, True
    build_finished, fill_finished, hashes = None, slice(1, None), False

    def __init__(self, cls: type, saved_version: int | None = None):
        self.cls = cls
        self.has_loaded_hook = has_attribute(cls, "__autosave_loaded__")
        self.hash_kind = 0 if cls.__hash__ in (object.__hash__, None) else 2
        self.schema = schema_of(cls)
        self.saved_version = self.schema.version if saved_version is None else saved_version
        self.upgrades = upgrade_chain(self.schema, self.saved_version)
        # its __setstate__ is the class's code reading the state: all of it done first
        self.deep = class_attribute(cls, "__setstate__") is not None

    def fresh(self) -> "StatePlan":
        """A copy for one load (``plan_for`` keeps the one made)."""
        plan = object.__new__(StatePlan)
        plan.__dict__ = self.__dict__.copy()
        return plan

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
                check_inert(state, f"a {self.schema.name} record's state", callables=True)
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

    def __init__(self, cls: type, saved_name: str, saved_version: int, fields: list[str]):
        schema = self.schema = schema_of(cls)
        self.cls = cls
        # interned, as attribute names are (and as pickle's loads gives them)
        self.fields = fields = list(map(sys.intern, fields))
        if schema.renamed:          # a field's old name in the save: its current name
            self.fields = fields = [schema.renamed.get(f, f) for f in fields]
        self.nfields = len(fields)
        self.has_loaded_hook = has_attribute(cls, "__autosave_loaded__")
        self.unset_slots = 0        # unset-slot markers consumed, checked against the file
        base = schema.base
        self.base = base
        self.mutable = base is None or base in (list, dict, set, deque)
        self.has_fill = True
        self.deep = False           # its fill sets fields; it runs no code of the class
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
        self.reads_parts = bool(self.upgrades)      # upgrade hooks read the fields
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
                    raise IncompatibleSaveError(missing_field(schema, name))
        self.new = (base or object).__new__
        self.create = self.create_from_record = None
        self.direct = None          # "slots" or "dict": fields map straight onto the class
        # The class's layout (the schema's one decision) picks the fill; a record that
        # needs upgrades, defaults or skips a field takes the general one.
        simple = not self.upgrades and not self.defaults
        if simple and schema.layout == "dict" and len(self.setters) == self.nfields:
            # the general fill replaced by the layout's: a plan's calls are data
            self.fill, self.create = self.fill_dict, self.create_filled  # type: ignore[method-assign]
            self.direct = "dict"
        elif simple and schema.layout == "slots" and all(
                is_slot and type(getattr(cls, name)) is MemberDescriptorType
                for _, name, is_slot in self.setters):
            self.slot_descriptors = [getattr(cls, name) for _, name, _ in self.setters]
            self.slot_setters = [(pos, d.__set__) for (pos, _, _), d in zip(
                self.setters, self.slot_descriptors)]
            self.fill, self.create = self.fill_slots, self.create_filled  # type: ignore[method-assign]
            self.direct = "slots"

    def fresh(self) -> "InstancePlan":
        """A copy for one load (``plan_for`` keeps the one made): its own count of
        unset slots, and its calls bound to itself (a load may replace them with
        generated code's)."""
        plan = object.__new__(InstancePlan)
        plan.__dict__ = self.__dict__.copy()
        plan.unset_slots = 0
        if self.direct == "dict":
            plan.fill, plan.create = plan.fill_dict, plan.create_filled  # type: ignore[method-assign]
        elif self.direct == "slots":
            plan.fill, plan.create = plan.fill_slots, plan.create_filled  # type: ignore[method-assign]
        return plan

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


def missing_field(schema: Any, name: str) -> str:
    """What a save of the class's own version lacking field ``name`` tells the user: a
    hook alone never runs (it needs a version to upgrade from), so the fix says both."""
    v = schema.version
    text = (f"{schema.name} has a field {name!r} the save does not hold, and the field has "
            f"no default; give it a default, or bump the class's version to {v + 1} "
            f"(@autosave.saveable(version={v + 1})) and add @autosave.upgrade("
            f"{schema.name!r}, from_version={v}) setting fields[{name!r}]")
    for hook_version, hook in unreachable_hooks(schema):
        if hook_version == v:
            text += (f"; the hook {hook.__qualname__} registered from_version={v} never runs "
                     f"while the class is at version {v}")
    return text


# -- type entries -> plans ---------------------------------------------------------------

def resolve_class(name: str) -> Any:
    """The class a type entry names. A name whose module the loading process has not
    imported gets one message naming that module, whether or not its package is trusted
    yet (importing the game's module trusts it): never a trust error, then another."""
    try:
        return REGISTRY.resolve(name, "class")
    except (UntrustedTypeError, IncompatibleSaveError) as e:
        module = name.rpartition(".")[0] if isinstance(name, str) else ""
        parts = module.split(".")
        missing = [".".join(parts[:i]) for i in range(1, len(parts) + 1)
                   if ".".join(parts[:i]) not in sys.modules]
        if not module or not missing or not all(p.isidentifier() for p in parts):
            raise
        top = parts[0]
        fix = (f"import the game's module that defines it before loading (import {module}, "
               f"if that is where it is defined)")
        if isinstance(e, UntrustedTypeError):
            # A stranger's file may name anything: the advice is for the game's own names.
            raise UntrustedTypeError(
                f"the save refers to class {name!r}, which is outside the allowed namespaces "
                f"{sorted(REGISTRY.allowed)}; nothing was imported. If it is the game's, "
                f"module {missing[0]!r} is not imported yet: {fix}; that trusts {top!r} if "
                f"the module defines @save_root or @saveable classes, else call "
                f"autosave.allow({top!r}) too") from None
        raise IncompatibleSaveError(
            f"the save refers to class {name!r}, and module {missing[0]!r} is not imported "
            f"(a load imports nothing): {fix}") from None


# -- what a type entry decides, kept across loads and saves ------------------------------
#
# A type entry decides its plan from the registry (names, trust, versions, upgrade
# hooks), the adapters, the class (its schema, hash, hooks, slot descriptors) and what
# its name resolves to in sys.modules. The plan made for one is kept, by the entry's
# exact contents, and given again (a copy: a plan counts what its load consumed) while
# none of that changed:
# * each plan is kept with the registry's ``changes`` (any change to its tables,
#   however made) and the count of adapters registered when it was decided, and is
#   not given once either differs;
# * what the class and its name resolution read is read again at each use and
#   compared (``_current``): a class rebound or reloaded under its name, a module
#   gone, a hook added or a slot replaced since make the plan anew.
# Nothing else decides a plan: generated code is picked per load (``rebuild``), and
# the choice of C or Python loops is fixed when ``kernels`` is imported.

_CLASS_PLANS = (InstancePlan, StatePlan, EnumPlan)
# key -> (plan, how its name was found (``_found_by``), its facts, the generation it was
# made in, the slots among its facts)
_CACHE: dict[tuple[Any, ...], tuple[Any, bool, tuple[Any, ...], tuple[int, int],
                                    tuple[str, ...]]] = {}
_CACHE_MAX = 4096                   # entries: a stream of odd files cannot grow it further
_ADAPTERS = [0]                     # bumped by every adapter registered (or removed)
_SEEN: list[Any] = [None]           # the generation the cache was last filled in
_STR = {str}


def _drop_cache() -> None:
    _ADAPTERS[0] += 1
    _CACHE.clear()


ON_REGISTER.append(_drop_cache)


def plan_for(index: int, entry: Any) -> Any:
    """The plan of type entry ``index``: an adapter (shared), or a class's plan (this
    caller's own)."""
    # read before anything is decided: a plan decided while the registry changes (on
    # another thread) is kept under the generation before, and never given again
    generation = (REGISTRY.changes, _ADAPTERS[0])
    if _SEEN[0] != generation:      # what was kept before will not be given: let it go
        _CACHE.clear()
        _SEEN[0] = generation
    # type_entry's checks, made here at C speed for the entries the cache may hold
    if (type(entry) is list and len(entry) == 3 and type(entry[0]) is str
            and type(entry[1]) is int and type(entry[2]) is list
            and kernels.kinds(entry[2]) <= _STR):
        name, version, fields = entry
    else:
        name, version, fields = type_entry(index, entry)
    key = (name, version, *fields)
    cached = _CACHE.get(key)
    if cached is not None:
        template, found, facts, made_in, slots = cached
        if made_in == generation:
            if template.__class__ not in _CLASS_PLANS:
                return template
            if _current(template, name, found, facts, slots):
                return template.fresh()
        _CACHE.pop(key, None)       # (another thread's load may have dropped it)
    plan = decide_plan(index, name, version, fields)
    if len(_CACHE) >= _CACHE_MAX:
        _CACHE.clear()
    if plan.__class__ not in _CLASS_PLANS:
        _CACHE[key] = (plan, True, (), generation, ())
        return plan
    schedule_of(plan)               # read once, shared by its copies
    slots = _slot_names(plan)
    _CACHE[key] = (plan, _found_by(name, plan.cls), _facts(plan, slots), generation, slots)
    return plan.fresh()


def _slot_names(plan: Any) -> tuple[str, ...]:
    """The slots a class plan sets (their descriptors are among its facts)."""
    return tuple(name for _, name, is_slot in getattr(plan, "setters", ()) if is_slot)


def _facts(plan: Any, slots: tuple[str, ...]) -> tuple[Any, ...]:
    """What a class plan read of its class besides the (cached) schema: its hash, its
    loaded hook (``has_attribute``), its ``__setstate__`` (``class_attribute``) and the
    descriptors of its ``slots`` (``_slot_names``). Asked at every use of a kept plan:
    a class whose metaclass is ``type`` has its MRO read once for both hooks."""
    cls = plan.cls
    if type(cls) is type:
        loaded, setstate, found = False, None, False
        for klass in cls.__mro__:
            namespace = klass.__dict__
            if not loaded and "__autosave_loaded__" in namespace:
                loaded = True
            if not found and "__setstate__" in namespace:
                setstate, found = namespace["__setstate__"], True
        loaded = loaded or "__autosave_loaded__" in type.__dict__
    else:
        loaded = has_attribute(cls, "__autosave_loaded__")
        setstate = class_attribute(cls, "__setstate__")
    return (schema_of(cls), cls.__hash__, loaded, setstate,
            *map(getattr, repeat(cls), slots, repeat(None)))


def _found_by(name: str, cls: type) -> Any:
    """How ``name`` resolved to ``cls`` (``REGISTRY.resolve``), for ``_current`` to ask
    again cheaply: True, by the registry's names; (module name, module, attribute,
    cls.__module__), by the longest allowed module of the name in sys.modules, which
    holds the class as its attribute, the class's home allowed (the path resolve took
    first, and ends with); else False (resolved in full at every use)."""
    if REGISTRY.by_name.get(name) is cls:
        return True
    module_name, _, attr = name.rpartition(".")
    home = cls.__module__
    if (module_name and name not in SAFE_STDLIB_NAMES and type(home) is str
            and REGISTRY.is_allowed_module(module_name) and REGISTRY.is_allowed_module(home)):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, attr, None) is cls:
            return (module_name, module, attr, home)
    return False


def _current(plan: Any, name: str, found: Any, facts: tuple[Any, ...],
             slots: tuple[str, ...]) -> bool:
    """Whether ``plan`` is what its entry decides now, the registry unchanged: its name
    still resolves to its class (found in the registry's names, that is the registry's;
    else through sys.modules, which is looked at again: the module ``_found_by`` noted
    still there, its attribute still the class and the class's home unchanged, or
    else resolved in full), and the class is as it was. (The registry's tables, and so
    what is allowed, are the same: the plan is kept under their generation.)"""
    if found is not True and not (
            found is not False and sys.modules.get(found[0]) is found[1]
            and getattr(found[1], found[2], None) is plan.cls
            and plan.cls.__module__ == found[3]):
        try:
            if resolve_class(name) is not plan.cls:
                return False
        except LoadError:
            return False            # decided again, to raise what it raises
    return _facts(plan, slots) == facts


def decide_plan(index: int, name: str, version: int, fields: list[str]) -> Any:
    """The plan a type entry decides now (``plan_for`` keeps it)."""
    adapter = ADAPTERS_BY_NAME.get(name)
    if adapter is not None:
        if fields:
            # a type whose batches name their rows' fields (coroutines: the saved names)
            batch_plan = getattr(adapter, "batch_plan", None)
            if batch_plan is None:
                raise FormatError(f"type entry {index} ({name}) must not list fields")
            return batch_plan(fields)
        return adapter
    cls = resolve_class(name)
    if not isinstance(cls, type):
        raise IncompatibleSaveError(f"the save's type {name!r} now names a "
                                    f"{type(cls).__name__}, not a class")
    schema = schema_of(cls)
    if schema.strategy == "enum":
        return EnumPlan(cls)
    if fields == list(STATE_FIELDS):
        return StatePlan(cls, version)
    return InstancePlan(cls, name, version, fields)


def release_plans(plans: list[Any]) -> None:
    """Empty the plans of a load (or of a save's check that it would load): a plan keeps
    its own bound methods (``fill``, ``create``), a cycle per class for the collector.
    Adapters are shared and hold none."""
    for plan in plans:
        if type(plan) in (InstancePlan, StatePlan, EnumPlan):
            vars(plan).clear()
