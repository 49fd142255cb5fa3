"""Callables and references: globals by name, bound methods, partials, closures and
lambdas (code identity + cells), closure cells, assets, reduce.

Loading one never calls it: a callable from a save is a value. What a loaded callable
can do once the game calls it is bounded too (docs/security.md): it is a function or
class of the allowed namespaces, a pure standard-library name, a method the object's
class defines, or a getter/caller naming public attributes only.
"""

import builtins
import copyreg
import functools
import operator
import sys
import types

from ..advice import function_not_found
from ...errors import FormatError, IncompatibleSaveError, UntrustedTypeError
from ...checks.limits import charge
from ...checks.loadcheck import bound_hook, class_attribute, exact, str_dict
from ..purity import impure_names, is_pure
from ..reconstructors import check_arguments, check_inert, entry_for, named, register
from ..registry import REGISTRY, SAFE_STDLIB_NAMES, stable_name
from .base import ADAPTERS_BY_NAME, ON_REGISTER, PENDING, Adapter, activate_pending, register_adapter


# The types of the builtins module, and of None, ... and NotImplemented: a save names
# them like any class (as values: a load only returns them, docs/types.md).
BUILTIN_TYPES = {f"builtins.{t.__name__}": t for t in (
    *(v for v in vars(builtins).values() if isinstance(v, type)
      and v.__module__ == "builtins"),      # not __loader__: its methods import
    type(None), type(...), type(NotImplemented))}


def adapter_class_names():
    """The classes a save may name with nothing allowed: the adapters' own types and
    the builtin types."""
    names = dict(BUILTIN_TYPES)
    names.update({a.name: a.types[0] for a in ADAPTERS_BY_NAME.values()
                  if len(a.types) >= 1 and stable_name(a.types[0]) == a.name})
    return names


class GlobalAdapter(Adapter):
    """[stable name] -- a module-level class or function, resolved by name on load."""
    name = "autosave.global"
    _adapter_classes = None

    def parts(self, obj):
        return [self.name_of(obj)]

    @classmethod
    def name_of(cls, obj):
        name = stable_name(obj)
        if name in cls.adapter_classes() or named(name) is obj:
            return name
        module = getattr(obj, "__module__", None) or ""
        if module.startswith("_") and name not in SAFE_STDLIB_NAMES:
            # operator.add is _operator.add: saved under the public name it is listed by
            public = f"{module[1:]}.{obj.__qualname__}"
            home = sys.modules.get(module[1:])
            if public in SAFE_STDLIB_NAMES and getattr(home, obj.__qualname__, None) is obj:
                return public
        return REGISTRY.check_savable_name(obj, "class" if isinstance(obj, type) else "function")

    @classmethod
    def adapter_classes(cls):
        if PENDING:
            activate_pending()
        if cls._adapter_classes is None:
            cls._adapter_classes = adapter_class_names()
        return cls._adapter_classes

    def build(self, vals):
        (name,) = vals[1:]
        if type(name) is not str:
            raise ValueError("a global record holds a name")
        known = self.adapter_classes().get(name)
        if known is None:
            known = named(name)
        return known if known is not None else REGISTRY.resolve(name, "global")


class MethodAdapter(Adapter):
    """[self, attribute name] -- a bound method, bound again on load to the method its
    class defines under that name; or [self, function] for a method made by hand
    (``types.MethodType(f, obj)``) that the object's class does not define."""
    name, types = "autosave.method", (types.MethodType, types.MethodWrapperType)
    hash_kind = 2             # a bound method hashes its __self__
    # builtin methods ([].append) share their type with builtin functions (len): the
    # walker routes those with a non-module __self__ here

    def labels(self, parts):
        return (".__self__", ".__func__")

    def parts(self, obj):
        owner = obj.__self__
        name = obj.__name__
        for candidate in (name, f"_{type(owner).__name__.lstrip('_')}{name}"):
            try:
                if method_of(owner, candidate) == obj:
                    return [owner, candidate]
            except LookupError:
                pass
        if isinstance(obj, types.MethodType):
            func = obj.__func__
            if type(func) is types.FunctionType or (
                    isinstance(func, type) and REGISTRY.is_allowed_module(func.__module__)):
                return [owner, func]
            # what build() refuses: binding anything else by hand, a builtin included
            raise LookupError(f"method {name} binds a {type(func).__name__} to a "
                              f"{type(owner).__qualname__} by hand (types.MethodType); a "
                              f"load binds only Python functions and classes that way, so "
                              f"it would refuse it: wrap the call in a Python function")
        raise LookupError(f"method {name} of {type(owner).__qualname__} is not defined by "
                          f"its class, so a load could not bind it again")

    def build(self, vals):
        owner, name = vals[1:]
        if type(name) is str:
            try:
                return method_of(owner, name)
            except UntrustedTypeError:
                raise
            except LookupError as e:
                raise IncompatibleSaveError(str(e)) from None
        if type(name) is types.FunctionType or (
                isinstance(name, type) and REGISTRY.is_allowed_module(name.__module__)):
            return types.MethodType(name, owner)
        raise FormatError(f"a method record holds a method name or a function, the save "
                          f"holds a {type(name).__name__}")


# Special methods a saved bound method may name on any object: the data protocols,
# which read or change that object only. Others (``__subclasses__``, ``__reduce_ex__``,
# ``__getattribute__``, ``__init_subclass__``...) reach the interpreter's machinery.
DATA_DUNDERS = frozenset(
    "__getitem__ __setitem__ __delitem__ __contains__ __len__ __iter__ __next__ "
    "__reversed__ __call__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __bool__ "
    "__add__ __sub__ __mul__ __truediv__ __floordiv__ __mod__ __neg__ __pos__ __abs__ "
    "__and__ __or__ __xor__ __str__ __repr__ __format__ __enter__ __exit__".split())

_BUILTIN_METHODS = (types.MethodDescriptorType, types.WrapperDescriptorType)


def method_of(owner, name):
    """``owner``'s method ``name`` as its class defines it, bound without running any
    code of the object (no instance attributes, no ``__getattr__``, no metaclass).
    LookupError when the class defines no such method; UntrustedTypeError for a
    special method outside the data protocols, unless the game's own code defines it."""
    is_class = isinstance(owner, type)
    cls = owner if is_class else type(owner)
    attr = class_attribute(cls, name)
    dunder = name.startswith("__") and name.endswith("__")
    code = attr.__func__ if type(attr) in (classmethod, staticmethod) else attr
    own_code = (type(code) is types.FunctionType
                and REGISTRY.is_allowed_module(getattr(code, "__module__", None)))
    if dunder and not own_code and (is_class or name not in DATA_DUNDERS):
        raise UntrustedTypeError(
            f"the save asks for the special method {cls.__qualname__}.{name}; a save may "
            f"bind special methods of the data protocols only")
    if not dunder and not own_code and attr is not None and not is_pure(cls, name):
        raise UntrustedTypeError(
            f"the save binds {cls.__module__}.{cls.__qualname__}.{name}, which is not a "
            f"pure method of that type; a save binds the game's own methods and, of other "
            f"types, only the pure ones that compute on their data (docs/security.md)")
    if is_class:
        if type(attr) is classmethod:
            return types.MethodType(attr.__func__, owner)
        if type(attr) is types.ClassMethodDescriptorType:
            return attr.__get__(None, owner)
    elif type(attr) is types.FunctionType:
        return types.MethodType(attr, owner)
    elif type(attr) in _BUILTIN_METHODS:
        return attr.__get__(owner, cls)
    raise LookupError(f"{cls.__qualname__}.{name} is not a method its class defines")


class PartialAdapter(Adapter):
    """[func, args tuple, keywords dict, __dict__ or None]"""
    name, types = "functools.partial", (functools.partial,)
    build_finished = slice(1, None)

    def parts(self, obj):
        return [obj.func, obj.args, obj.keywords, obj.__dict__ or None]

    def labels(self, parts):
        return (".func", ".args", ".keywords", ".__dict__")

    def build(self, vals):
        func, args, keywords, attrs = vals[1:]
        if not callable(func):
            raise FormatError(f"a functools.partial record holds a "
                              f"{type(func).__name__} as its function")
        p = functools.partial(func, *exact(args, tuple, "a partial's arguments"),
                              **str_dict(keywords, "a partial's keywords"))
        if str_dict(attrs, "a partial's attributes", allow_none=True):
            p.__dict__.update(attrs)
        return p


class CellAdapter(Adapter):
    """[] for an empty cell, else [contents] -- shared by every closure over it."""
    reads_parts = False       # keeps a reference only
    name, types, mutable, has_fill = "autosave.cell", (types.CellType,), True, True

    def parts(self, obj):
        try:
            return [obj.cell_contents]
        except ValueError:
            return []

    def labels(self, parts):
        return (".cell_contents",)

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
            raise LookupError(function_not_found(obj, module))
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
        if defaults is not None:
            exact(defaults, tuple, "a function's defaults")
        exact(fname, str, "a function's name")
        fn = types.FunctionType(code, _module(module).__dict__, fname, defaults, closure)
        if str_dict(kwdefaults, "a function's keyword defaults", allow_none=True) is not None:
            fn.__kwdefaults__ = dict(kwdefaults)
        if str_dict(attrs, "a function's attributes", allow_none=True):
            fn.__dict__.update(attrs)
        return fn


def _module(name):
    if not REGISTRY.is_allowed_module(name):
        raise UntrustedTypeError(f"the save refers to a function of module {name!r}, "
                                 f"outside the allowed namespaces; nothing was imported")
    module = sys.modules.get(name)
    if module is None:        # a load imports nothing: the game imports its modules
        raise IncompatibleSaveError(f"the save refers to a function of module {name!r}, "
                                    f"which is not imported; import it before loading")
    return module


def code_candidates(module_name, qualname, resolve=False):
    """(host, [code objects with this qualname under host, in a stable order])."""
    module = _module(module_name) if resolve else sys.modules.get(module_name)
    if module is None:
        raise LookupError(f"module {module_name!r} is not imported")
    path = qualname.split(".<locals>.")[0].split(".")
    host = module
    for part in path:
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
    # a constructor reads its arguments, a __setstate__ its state: everything they
    # reach is done first (objects on a cycle back aside), as pickle's order gives it
    build_finished = slice(3, 4)
    fill_finished = slice(4, None)
    deep = True

    def parts_of(self, obj, rv):
        func, args, state, listitems, dictitems, *setter = (*rv, None, None, None, None)[:6]
        if setter and setter[0] is not None:
            raise LookupError("a reduce value with a state setter is not supported")
        newobj = func is copyreg.__newobj__
        if newobj:
            func, args = args[0], args[1:]
        check_constructor(func, obj, newobj, tuple(args))
        # items may come as iterators (pickle's protocol): read each once
        listitems, dictitems = list(listitems or ()), list(dictitems or ())
        check_handed(obj, state, listitems, dictitems)
        dict_flat = []
        for k, v in dictitems:
            dict_flat.extend((k, v))
        return [func, newobj, tuple(args), state, listitems, dict_flat]

    def build(self, vals):
        func, newobj, args = vals[1:4]
        exact(args, tuple, "reduce arguments")
        if type(newobj) is not bool:
            raise FormatError("a reduce record's second part is a bool")
        if PENDING:                  # a package's reconstructors, once it is imported
            activate_pending()
        entry = entry_for(func, newobj, len(args))
        check_arguments(entry, args, f"a reduce record of {_name(func)}:")
        return func.__new__(func, *args) if newobj else func(*args)

    def fill(self, obj, vals):
        state, listitems, dictitems = vals[4:]
        cls = type(obj)
        if cls in SAFE_CONSTRUCTORS:
            if state is not None or listitems or dictitems:
                raise FormatError(f"a {cls.__name__} record holds state or items")
            return
        what = f"a reduce record of {cls.__module__}.{cls.__qualname__}:"
        if state is not None:
            setstate = bound_hook(obj, "__setstate__")
            if setstate is not None:
                check_inert(state, f"{what} the state", callables=True)
                setstate(state)
            else:
                apply_default_state(obj, state)
        if exact(listitems, list, "reduce list items"):
            if code_reads(cls, "extend"):
                check_inert(listitems, f"{what} the list items", callables=True)
            if class_attribute(cls, "extend") is not None:
                bound_hook(obj, "extend")(listitems)
            else:                    # as pickle: append one by one without extend
                append = bound_hook(obj, "append")
                if append is None:
                    raise FormatError(f"the save gives list items to a "
                                      f"{cls.__qualname__}, which has no extend "
                                      f"or append")
                for item in listitems:
                    append(item)
        if exact(dictitems, list, "reduce dict items"):
            if len(dictitems) % 2:
                raise FormatError("reduce dict items come in key, value pairs")
            setitem = bound_hook(obj, "__setitem__")
            if setitem is None:
                raise FormatError(f"the save gives dict items to a "
                                  f"{cls.__qualname__}, which has no __setitem__")
            if code_reads(cls, "__setitem__"):
                check_inert(dictitems, f"{what} the dict items", callables=True)
            it = iter(dictitems)
            for k, v in zip(it, it):
                setitem(k, v)


def check_constructor(func, obj, newobj=False, args=()):
    """Refuse at save time a reduce value a load would refuse (autosave/model/reconstructors.py:
    a load calls registered reconstructors and classes' own Python ``__reduce__``, on
    inert arguments), saying how to make it loadable."""
    what = f"{type(obj).__module__}.{type(obj).__qualname__}"
    where = _name(func)
    if PENDING:
        activate_pending()
    try:
        entry = entry_for(func, newobj, len(args))
    except UntrustedTypeError:
        # __getstate__/__setstate__ help only once the class's own __reduce__ is gone:
        # a __reduce__ of the class's Python code takes precedence over them.
        own = next((k for k in type(obj).__mro__ if k is not object and (
            "__reduce__" in vars(k) or "__reduce_ex__" in vars(k))), None)
        state = ("" if own is None or not isinstance(vars(own).get(
                     "__reduce__", vars(own).get("__reduce_ex__")), types.FunctionType)
                 else f", replace {own.__qualname__}.__reduce__ with "
                      f"__getstate__/__setstate__")
        kind = "class" if isinstance(func, type) else "function"
        raise LookupError(
            f"{what}: its __reduce__ rebuilds it by calling the {kind} {where}, which is "
            f"not a registered reconstructor, so a load would refuse it. If that "
            f"{kind} is safe to call on the data a file holds, register it with "
            f"autosave.reconstructor({where}{_callables(args)}){state}; or mark the field "
            f"autosave.transient") from None
    try:
        check_arguments(entry, tuple(args), f"{what}: its __reduce__ gives {where}")
    except FormatError as e:
        fix = _callables(args, entry.callables if entry is not None else ())
        fix = (f"; if {where} is written to take a callable there, register it with "
               f"autosave.reconstructor({where}{fix})" if fix else "")
        raise LookupError(f"{e}{fix}") from None


def code_reads(cls, hook):
    """Whether what a reduce record hands ``cls``'s ``hook`` reaches code that may read
    it: the class's own ``__setstate__``; an ``extend`` (or, with none, ``append``) other
    than list's; a ``__setitem__`` other than dict's. The load checks what it hands such
    code, and the save refuses what the load would (one rule for both)."""
    if hook == "__setstate__":
        return class_attribute(cls, "__setstate__") is not None
    if hook == "extend":
        return class_attribute(cls, "extend") is not list.extend
    return class_attribute(cls, "__setitem__") is not dict.__setitem__


def check_handed(obj, state, listitems, dictitems):
    """Refuse at save time a state or items that a load would not hand to the class's
    own ``__setstate__`` / ``extend`` / ``__setitem__``: they must be inert."""
    cls = type(obj)
    what = f"{cls.__module__}.{cls.__qualname__}"
    handed = [(hook, value) for hook, value in (("__setstate__", state),
                                                ("extend", listitems),
                                                ("__setitem__", dictitems))
              if value and code_reads(cls, hook)]
    for hook, value in handed:
        try:
            check_inert(value, f"{what}: what its __reduce__ hands its {hook}",
                        callables=True)
        except FormatError as e:
            raise LookupError(
                f"{e}; keep iterators in fields a load fills itself (no "
                f"__setstate__ of the class's own), or mark the field "
                f"autosave.transient") from None


def _callables(args, allowed=()):
    """``, callables=(...)`` for the argument positions holding a callable, or '' when
    none does beyond those ``allowed`` already."""
    bad = tuple(i for i, a in enumerate(args) if _holds_callable(a))
    return f", callables={bad!r}" if set(bad) - set(allowed) else ""


def _holds_callable(value):
    try:
        check_inert(value, "")
    except FormatError:
        return True
    return False


def _name(obj):
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _public_names(what, names):
    """Getter and caller names reach attributes: public ones only, so a save cannot
    walk to ``__globals__``, ``__subclasses__``, ``__builtins__`` or a private field."""
    for name in names:
        if type(name) is not str:
            raise FormatError(f"{what} names are strings")
        if any(not part or part.startswith("_") for part in name.split(".")):
            raise UntrustedTypeError(f"the save asks for {what} of {name!r}; a save may "
                                     f"name public attributes only")


def _check_itemgetter(args):
    if not args:
        raise FormatError("an itemgetter record needs at least one item")


def _check_attrgetter(args):
    if not args:
        raise FormatError("an attrgetter record needs at least one name")
    _public_names("an attrgetter", args)


def _check_methodcaller(args):
    if not args:
        raise FormatError("a methodcaller record needs a method name")
    _public_names("a methodcaller", args[:1])
    if args[0] in impure_names():
        raise UntrustedTypeError(
            f"the save asks for a methodcaller of {args[0]!r}, an impure method of a "
            f"value type (file system, imports or attribute paths); a methodcaller may "
            f"name pure methods and the game's own (docs/security.md)")


_PLAIN_VALUES = (str, int, float, bool, bytes, type(None))


def _check_plain_values(args):
    """``str(x)``, ``int(x, base)``...: only on plain values, whose conversion runs no
    code of any object (a ``__reduce__`` returning ``(str, ("text",))``)."""
    if len(args) > 2 or any(type(a) not in _PLAIN_VALUES for a in args):
        raise UntrustedTypeError("a save may construct a builtin value type from plain "
                                 "values only")
    if any(type(a) is str and len(a) > 10_000 for a in args):
        raise FormatError("a builtin value's text is too long")
    if len(args) == 2 and type(args[0]) in (bytes, str) and type(args[1]) is str:
        # str(b, codec) / bytes(s, codec): a codec not loaded yet is imported by name
        if args[1].lower().replace("_", "-") not in TEXT_CODECS:
            raise UntrustedTypeError(
                f"the save decodes text with the codec {args[1][:40]!r}; a load uses the "
                f"codecs {sorted(TEXT_CODECS)} only (another may import a module)")


TEXT_CODECS = frozenset(("utf-8", "utf8", "utf-16", "utf-16-le", "utf-16-be", "utf16",
                         "utf-32", "utf-32-le", "utf-32-be", "utf32", "latin-1", "latin1",
                         "iso-8859-1", "iso8859-1", "ascii", "us-ascii"))


def _check_bytes(args):
    """``bytes(n)`` allocates n zero bytes: charged to the file's budget (limits.py)."""
    _check_plain_values(args)
    if args and type(args[0]) is int and args[0] > 0:
        charge(args[0], 0, f"bytes({args[0]:,})")


# Standard-library classes whose constructors only store their arguments, or convert
# plain values, each with the check its arguments must pass.
SAFE_CONSTRUCTORS = {operator.itemgetter: _check_itemgetter,
                     operator.attrgetter: _check_attrgetter,
                     operator.methodcaller: _check_methodcaller,
                     **dict.fromkeys((str, int, float, bool, complex), _check_plain_values),
                     bytes: _check_bytes}
for _func, _check in SAFE_CONSTRUCTORS.items():
    register(_func, _check, source="autosave")


def apply_default_state(obj, state):
    """What pickle does for a state without ``__setstate__``: dict, or (dict, slots).
    Slot names must be slots the class declares."""
    slotstate = None
    if type(state) is tuple and len(state) == 2:
        state, slotstate = state
    if str_dict(state, "a state dict", allow_none=True):
        obj.__dict__.update(state)
    if str_dict(slotstate, "a slot state dict", allow_none=True):
        slots = _declared_slots(type(obj))
        for k, v in slotstate.items():
            if k == "__dict__" and "__dict__" in _declared(type(obj)):
                # a class listing __dict__ among its slots: pickle's setattr replaces
                # the instance dict with it; its keys are attribute names
                obj.__dict__.update(str_dict(v, "a slot state's __dict__"))
                continue
            if k not in slots:
                raise FormatError(f"the save's slot state names {k!r}, which is not a "
                                  f"slot of {type(obj).__qualname__}")
            object.__setattr__(obj, k, v)


def _declared(cls):
    names = set()
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        names.update((declared,) if isinstance(declared, str) else declared)
    return names


def _declared_slots(cls):
    return _declared(cls) - {"__dict__", "__weakref__"}


ON_REGISTER.append(lambda: setattr(GlobalAdapter, "_adapter_classes", None))
GLOBAL = register_adapter(GlobalAdapter())
FUNCTION = register_adapter(FunctionAdapter())
ASSET = register_adapter(AssetAdapter())
REDUCE = register_adapter(ReduceAdapter())
for _adapter in (MethodAdapter, PartialAdapter, CellAdapter):
    register_adapter(_adapter())
