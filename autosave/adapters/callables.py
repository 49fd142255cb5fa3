"""Callables and references: globals by name, bound methods, partials, closures and
lambdas (code identity + cells), closure cells, assets, reduce.

Nothing here calls a function it resolves, except ``reduce`` records, whose callable
must itself resolve through the registry's trust rules.
"""

import copyreg
import functools
import importlib
import operator
import sys
import types

from ..errors import IncompatibleSaveError, UntrustedTypeError
from ..registry import REGISTRY, stable_name
from .base import ADAPTERS_BY_NAME, Adapter, register_adapter


def adapter_class_names():
    return {a.name: a.types[0] for a in ADAPTERS_BY_NAME.values()
            if len(a.types) >= 1 and stable_name(a.types[0]) == a.name}


class GlobalAdapter(Adapter):
    """[stable name] -- a module-level class or function, resolved by name on load."""
    name = "autosave.global"
    _adapter_classes = None

    def parts(self, obj):
        return [self.name_of(obj)]

    @classmethod
    def name_of(cls, obj):
        name = stable_name(obj)
        if name in cls.adapter_classes():
            return name
        return REGISTRY.check_savable_name(obj, "class" if isinstance(obj, type) else "function")

    @classmethod
    def adapter_classes(cls):
        if cls._adapter_classes is None:
            cls._adapter_classes = adapter_class_names()
        return cls._adapter_classes

    def build(self, vals):
        (name,) = vals[1:]
        if type(name) is not str:
            raise ValueError("a global record holds a name")
        known = self.adapter_classes().get(name)
        return known if known is not None else REGISTRY.resolve(name, "global")


class MethodAdapter(Adapter):
    """[self, attribute name] -- a bound method, looked up again on load; or
    [self, function] for a method made by hand (``types.MethodType(f, obj)``) that the
    object does not have under its name."""
    name, types = "autosave.method", (types.MethodType, types.MethodWrapperType)
    # builtin methods ([].append) share their type with builtin functions (len): the
    # walker routes those with a non-module __self__ here

    def parts(self, obj):
        owner = obj.__self__
        name = obj.__name__
        if getattr(owner, name, None) != obj:
            mangled = f"_{type(owner).__name__.lstrip('_')}{name}"
            if getattr(owner, mangled, None) == obj:
                name = mangled
            elif isinstance(obj, types.MethodType):
                return [owner, obj.__func__]
            else:
                raise LookupError(f"method {name} of {type(owner).__qualname__} cannot be "
                                  f"found again by name")
        return [owner, name]

    def build(self, vals):
        owner, name = vals[1:]
        if type(name) is not str:
            if not callable(name):
                raise ValueError("a method record holds its name or its function")
            return types.MethodType(name, owner)
        method = getattr(owner, name)
        if getattr(method, "__self__", None) is not owner:
            raise IncompatibleSaveError(
                f"{type(owner).__qualname__}.{name} is no longer a method of the saved object")
        return method


class PartialAdapter(Adapter):
    """[func, args tuple, keywords dict, __dict__ or None]"""
    name, types = "functools.partial", (functools.partial,)
    build_finished = slice(1, None)

    def parts(self, obj):
        return [obj.func, obj.args, obj.keywords, obj.__dict__ or None]

    def build(self, vals):
        func, args, keywords, attrs = vals[1:]
        if not callable(func) or type(args) is not tuple or type(keywords) is not dict:
            raise ValueError("malformed functools.partial record")
        p = functools.partial(func, *args, **keywords)
        if attrs is not None:
            p.__dict__.update(attrs)
        return p


class CellAdapter(Adapter):
    """[] for an empty cell, else [contents] -- shared by every closure over it."""
    name, types, mutable, has_fill = "autosave.cell", (types.CellType,), True, True

    def parts(self, obj):
        try:
            return [obj.cell_contents]
        except ValueError:
            return []

    def allocate(self, rec):
        if len(rec) > 2:
            raise ValueError("a cell record holds at most one value")
        return types.CellType()

    def fill(self, obj, vals):
        if len(vals) == 2:
            obj.cell_contents = vals[1]


class FunctionAdapter(Adapter):
    """[module, code qualname, index, name, defaults, kwdefaults, closure cells, __dict__]

    A function that cannot be found by name (a closure or lambda): its code is found
    again inside the module (the ``index``-th code object with that qualname under its
    host), its state is its defaults and closure cells.
    """
    name = "autosave.function"

    def parts(self, obj):
        code = obj.__code__
        module = obj.__module__
        host, candidates = code_candidates(module, code.co_qualname)
        index = next((i for i, c in enumerate(candidates) if c is code), None)
        if index is None:
            raise LookupError(
                f"function {obj.__qualname__} ({code.co_filename}:{code.co_firstlineno}) "
                f"cannot be found again from module {module!r}; define it at module "
                f"level or inside a module-level function or class")
        REGISTRY.check_savable_name(host, "function host")
        return [module, code.co_qualname, index, obj.__name__, obj.__defaults__,
                obj.__kwdefaults__, obj.__closure__, obj.__dict__ or None]

    def build(self, vals):
        module, qualname, index, fname, defaults, kwdefaults, closure, attrs = vals[1:]
        if type(module) is not str or type(qualname) is not str or type(index) is not int:
            raise ValueError("malformed function record")
        _, candidates = code_candidates(module, qualname, resolve=True)
        if not 0 <= index < len(candidates):
            raise IncompatibleSaveError(
                f"function {module}.{qualname} (#{index}) no longer exists in the game's code")
        code = candidates[index]
        if closure is not None and (type(closure) is not tuple or not all(
                type(c) is types.CellType for c in closure)):
            raise ValueError("a function's closure is a tuple of cells")
        if len(closure or ()) != len(code.co_freevars):
            raise IncompatibleSaveError(
                f"function {module}.{qualname} now closes over {code.co_freevars}, "
                f"the save holds {len(closure or ())} cells")
        if defaults is not None and type(defaults) is not tuple:
            raise ValueError("function defaults are a tuple")
        fn = types.FunctionType(code, _module(module).__dict__, fname, defaults, closure)
        if kwdefaults is not None:
            fn.__kwdefaults__ = dict(kwdefaults)
        if attrs is not None:
            fn.__dict__.update(attrs)
        return fn


def _module(name):
    if not REGISTRY.is_allowed_module(name):
        raise UntrustedTypeError(f"the save refers to a function of module {name!r}, "
                                 f"outside the allowed namespaces; nothing was imported")
    return importlib.import_module(name)


def code_candidates(module_name, qualname, resolve=False):
    """(host, [code objects with this qualname under host, in a stable order])."""
    module = _module(module_name) if resolve else sys.modules.get(module_name)
    if module is None:
        raise LookupError(f"module {module_name!r} is not imported")
    path = qualname.split(".<locals>.")[0].split(".")
    host = module
    for i, part in enumerate(path):
        nxt = getattr(host, part, None) if not part.startswith("<") else None
        if (nxt is None or isinstance(nxt, types.ModuleType)
                or getattr(nxt, "__module__", None) != module_name):
            break         # only the module's own functions and classes host its code
        host = nxt
    found, seen = [], set()

    def visit_code(code):
        if id(code) in seen:
            return
        seen.add(id(code))
        if code.co_qualname == qualname:
            found.append(code)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit_code(const)

    def visit_namespace(ns):
        for value in list(vars(ns).values()):
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                for f in (value.fget, value.fset, value.fdel):
                    if isinstance(f, types.FunctionType):
                        visit_code(f.__code__)
            if isinstance(value, types.FunctionType) and value.__module__ == module_name:
                visit_code(value.__code__)

    host_fn = getattr(host, "__func__", host)
    if isinstance(host_fn, types.FunctionType):
        visit_code(host_fn.__code__)
    elif isinstance(host, (type, types.ModuleType)):
        visit_namespace(host)
    return host if not isinstance(host, types.ModuleType) else _ModuleHost(module), found


class _ModuleHost:
    """Stands for a module as a function host, for the trust check."""
    def __init__(self, module):
        self.__module__ = module.__name__
        self.__qualname__ = "<module>"


class AssetAdapter(Adapter):
    """[asset id] -- static data, never its content."""
    name = "autosave.asset"

    def build(self, vals):
        (asset_id,) = vals[1:]
        if type(asset_id) is not str:
            raise ValueError("an asset record holds its id")
        try:
            return REGISTRY.asset_by_id[asset_id]
        except KeyError:
            raise IncompatibleSaveError(
                f"the save refers to asset {asset_id!r}, which is not registered; "
                f"register it with autosave.asset(obj, {asset_id!r}) before loading") from None


class ReduceAdapter(Adapter):
    """[callable, args tuple, state, list items, dict items (alternating)]

    For classes that define ``__reduce_ex__``/``__reduce__``. The callable is saved by
    name and must resolve through the registry, so a save cannot make a load call
    anything the game did not allow. ``copyreg.__newobj__`` is saved as the class itself.
    """
    name, has_fill = "autosave.reduce", True
    build_slice = slice(1, 4)
    fill_finished = slice(4, None)

    def parts_of(self, obj, rv):
        func, args, state, listitems, dictitems, *setter = (*rv, None, None, None, None)[:6]
        if setter and setter[0] is not None:
            raise LookupError("a reduce value with a state setter is not supported")
        newobj = func is copyreg.__newobj__
        if newobj:
            func, args = args[0], args[1:]
        dict_flat = []
        for k, v in (dictitems or ()):
            dict_flat.extend((k, v))
        return [func, newobj, tuple(args), state, list(listitems or ()), dict_flat]

    # Standard-library classes whose constructors only store their arguments.
    SAFE_CONSTRUCTORS = frozenset((operator.itemgetter, operator.attrgetter, operator.methodcaller))

    def build(self, vals):
        func, newobj, args = vals[1:4]
        if type(args) is not tuple:
            raise ValueError("reduce arguments are a tuple")
        self.check_constructor(func)
        return func.__new__(func, *args) if newobj else func(*args)

    def check_constructor(self, func):
        """A reduce record may only construct a class of the game's own allowed
        namespaces (or a constructor that just stores its arguments). Functions and
        standard-library types are never called: list(map(f, xs)), deque(count()) and
        the like would turn a save into a program."""
        if func in self.SAFE_CONSTRUCTORS:
            return
        if not isinstance(func, type) or not REGISTRY.is_allowed_module(func.__module__):
            raise UntrustedTypeError(
                f"the save asks to construct {getattr(func, '__module__', '?')}."
                f"{getattr(func, '__qualname__', repr(func))}; a save may only construct "
                f"classes of the allowed namespaces {sorted(REGISTRY.allowed)}")

    def fill(self, obj, vals):
        state, listitems, dictitems = vals[4:]
        if state is not None:
            setstate = getattr(obj, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                apply_default_state(obj, state)
        if listitems:
            obj.extend(listitems)
        if dictitems:
            it = iter(dictitems)
            for k, v in zip(it, it):
                obj[k] = v


def apply_default_state(obj, state):
    """What pickle does for a state without ``__setstate__``: dict, or (dict, slots)."""
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        obj.__dict__.update(state)
    if slotstate:
        for k, v in slotstate.items():
            object.__setattr__(obj, k, v)


GLOBAL = register_adapter(GlobalAdapter())
FUNCTION = register_adapter(FunctionAdapter())
ASSET = register_adapter(AssetAdapter())
REDUCE = register_adapter(ReduceAdapter())
for _adapter in (MethodAdapter, PartialAdapter, CellAdapter):
    register_adapter(_adapter())
