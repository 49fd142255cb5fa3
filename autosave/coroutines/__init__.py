"""``@autosave.coroutine``: generators that can be saved while suspended.

    @autosave.coroutine
    def patrol(guard, points):
        while True:
            for p in points:
                yield from guard.walk_to(p)

The decorated function returns a state machine (``runtime.Coroutine``) that behaves
like the generator would: ``next``, ``send``, ``throw``, ``close``, ``yield from``,
return values, the same exceptions and ``finally`` blocks. ``autosave.dumps`` saves it
where it is parked, by label, with its live locals; ``autosave.loads`` brings it back.

Ahead of time (``autosave-codegen``)
------------------------------------

A shipped build needs neither the source nor the transform at run time.
``autosave-codegen`` writes ``PACKAGE/_autosave_coroutines.py``: for each coroutine
function, the output of ``transform.state_machine_source(func)``, a maker function and
a call

    register_precompiled(qualified_name, fingerprint, maker, spec)

where ``qualified_name`` is ``f"{func.__module__}.{func.__qualname__}"``,
``fingerprint`` is ``transform.fingerprint(func)`` (a hash of what the function compiles
to, so an edited function never uses a stale machine), ``maker`` the generated maker
function and ``spec`` the plain-data description (labels, live locals per label). The
module imports nothing of the game, so the decorator imports it itself, while the
game's package is still importing (``generated.PrecompiledCoroutines``): when a
function's name and fingerprint were registered, it uses that machine and never reads
the source. If the fingerprint differs, the function is transformed from its source as
in development, keeping the labels of the last build (from the package's
``autosave_manifest.json``) where the edit allows (see ``labels``). Either way the
functions, labels and saved bytes are the same. ``AUTOSAVE_CODEGEN=0`` ignores the
precompiled machines.

``use_labels({qualified_name: labels})`` gives the labels of a previous build (the
manifest codegen writes) to the run-time transform of functions that have no
precompiled machine.
"""

import inspect
import types
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any, TypeVar, overload

from ..model.adapters.base import ADAPTERS_BY_TYPE
from ..errors import CoroutineError
from ..model.generated import PRECOMPILED_COROUTINES, enabled as generated_enabled
from . import labels as labels_mod
from . import transform
from .labels import label
from .pins import RESERVED_ATTR, check_reserved, reserved_of
from .adapter import COROUTINE
from . import batches as _batches    # noqa: F401 - gives COROUTINE its batches' plan
from .runtime import HELPERS, Coroutine, Loading, DONE, NOT_STARTED
from .specs import SPECS, FunctionRef, spec_of

__all__ = ["coroutine", "label", "register_precompiled", "use_labels", "CoroutineSpec",
           "spec_of"]

PRECOMPILED: dict[str, tuple] = {}   # qualified name -> (fingerprint, maker, spec data)
LABELS = PRECOMPILED_COROUTINES.labels   # qualified name -> labels of a previous build


def register_precompiled(qualified_name, fingerprint, maker, spec):
    """Called by a module ``autosave-codegen`` generated: the state machine of the
    function ``qualified_name`` as it was when its code had ``fingerprint``."""
    if not isinstance(spec, dict) or spec.get("version") != transform.SPEC_VERSION:
        raise ValueError(f"the state machine registered for {qualified_name} was generated "
                         f"by another autosave version; run autosave-codegen again")
    PRECOMPILED[qualified_name] = (fingerprint, maker, spec)


def use_labels(mapping):
    """Labels of a previous build, ``{qualified_name: {label: info}}``, kept by the
    run-time transform wherever the code still has those resume points."""
    for qualified_name, labels in mapping.items():
        LABELS[qualified_name] = dict(labels)


class CoroutineSpec:
    """Everything the runtime and the save adapter know about one coroutine function."""

    def __init__(self, function, factory, cls, placeholder, data):
        self.function, self.factory, self.cls, self.placeholder = function, factory, cls, placeholder
        self.data = data
        self.name = data["name"]
        self.qualname = data["qualname"]
        self.qualified_name = f"{data['module']}.{data['qualname']}"
        self.ref = FunctionRef(data["module"], data["qualname"])
        self.frame = tuple(attr for _, attr in data["frame"])
        cells = set(data["cells"])
        params = data["params"]
        points = data["points"]
        self.labels = {NOT_STARTED: labels_mod.START, DONE: labels_mod.DONE}
        self.state_of = {labels_mod.START: NOT_STARTED, labels_mod.DONE: DONE}
        start = sorted([(p, "v_" + p, False) for p in params]
                       + [(c, "v_" + c, False) for c in cells if c not in params])
        self.saved = {NOT_STARTED: tuple((n, a) for n, a, _ in start), DONE: ()}
        # saved name -> (frame attribute, required, holds a cell), per state
        self.slots = {NOT_STARTED: {n: (a, True, n in cells) for n, a, _ in start}, DONE: {}}
        # a parameter a save lacks (added since, with a default) gets its default
        self.param_defaults = _param_defaults(function, params)
        self.delegates = {}
        finalizing = set()
        for k, p in enumerate(points, 1):
            self.labels[k] = p["label"]
            self.state_of[p["label"]] = k
            self.saved[k] = tuple((n, a) for n, a, _, _ in p["live"])
            # a save of an earlier autosave held only the needed locals: only those
            # (bound for sure there) are required on load
            self.slots[k] = {n: (a, needed and not guarded, n in cells)
                             for n, a, guarded, needed in p["live"]}
            self.delegates[k] = p["delegate"]
            if p["finalize"]:
                finalizing.add(k)
        self.finalizing = frozenset(finalizing)

    def label_of(self, state):
        return self.labels.get(state, "<running>")

    def __repr__(self):
        return f"<CoroutineSpec {self.qualified_name}>"


def _param_defaults(function, params):
    """{parameter: its default} of the user's function (positional or keyword)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in signature.parameters.items()
            if n in params and p.default is not inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)}


def _rename(code, old_prefix, new_qualname, name=None):
    """Give generated code the user's names (tracebacks, error messages, and finding
    closures made inside the coroutine again when a save holds them)."""
    def renamed(const):
        if isinstance(const, types.CodeType):
            return _rename(const, old_prefix, new_qualname)
        # a class body sets __qualname__ from a string constant
        if isinstance(const, str) and const.startswith(old_prefix + "."):
            return new_qualname + const[len(old_prefix):]
        return const
    consts = tuple(renamed(c) for c in code.co_consts)
    qual = code.co_qualname
    if qual == old_prefix:
        qual = new_qualname
    elif qual.startswith(old_prefix + "."):
        qual = new_qualname + qual[len(old_prefix):]
    changes = {"co_consts": consts, "co_qualname": qual}
    if name is not None:
        changes["co_name"] = name
    return code.replace(**changes)


def instantiate(func, maker, data):
    """The decorated function (the factory making state machines) for ``func``."""
    prefix = data["prefix"]
    maker_name = data["maker"]
    step_code = factory_code = None
    for c in maker.__code__.co_consts:
        if isinstance(c, types.CodeType):
            if c.co_name == prefix + "step":
                step_code = c
            elif c.co_name == prefix + "factory":
                factory_code = c
    if step_code is None or factory_code is None:
        raise CoroutineError("the registered state machine is malformed; run "
                             "autosave-codegen again", function=func.__qualname__)
    cells = {f"{prefix}h_{k}": types.CellType(v) for k, v in HELPERS.items()}
    cls_cell = cells[f"{prefix}h_cls"] = types.CellType()
    user = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))

    def closure(code):
        out = []
        for n in code.co_freevars:
            cell = user.get(n) or cells.get(n)
            if cell is None:
                raise CoroutineError(f"the state machine needs {n!r}, which the function "
                                     f"does not close over; run autosave-codegen again",
                                     function=func.__qualname__)
            out.append(cell)
        return tuple(out)

    step_code = _rename(step_code, f"{maker_name}.<locals>.{prefix}step", func.__qualname__,
                        func.__name__)
    factory_code = _rename(factory_code, f"{maker_name}.<locals>.{prefix}factory",
                           func.__qualname__, func.__name__)
    factory_code = factory_code.replace(co_consts=factory_code.co_consts + (step_code,))
    step = types.FunctionType(step_code, func.__globals__, func.__name__, (None, None),
                              closure(step_code))
    factory = types.FunctionType(factory_code, func.__globals__, func.__name__,
                                 func.__defaults__, closure(factory_code))
    factory.__kwdefaults__ = func.__kwdefaults__
    factory.__qualname__ = func.__qualname__
    factory.__module__ = func.__module__
    factory.__doc__ = func.__doc__
    factory.__annotations__ = dict(getattr(func, "__annotations__", {}))
    factory.__dict__.update(func.__dict__)
    factory.__wrapped__ = func
    step.__qualname__ = func.__qualname__
    step.__module__ = func.__module__

    namespace = {"__slots__": (), "__next__": step, "send": step, "_step": step,
                 "__name__": func.__name__, "__module__": func.__module__,
                 "__doc__": func.__doc__}
    cls = type(func.__name__, (Coroutine,), namespace)
    cls.__qualname__ = func.__qualname__
    placeholder = type(func.__name__, (Loading,), {"__slots__": (), "_real": cls,
                                                   "__module__": func.__module__})
    placeholder.__qualname__ = func.__qualname__
    spec = CoroutineSpec(func, factory, cls, placeholder, data)
    cls._spec = placeholder._spec = spec
    cls._finalizing = spec.finalizing
    if spec.finalizing:
        cls.__del__ = Coroutine._close_when_collected
    cls_cell.cell_contents = cls
    factory.__autosave_coroutine__ = spec
    SPECS[factory] = spec
    ADAPTERS_BY_TYPE[cls] = COROUTINE
    return factory


def build(func):
    """The maker and spec data for ``func``: precompiled when registered with this
    function's fingerprint, else made now from its source."""
    qualified = f"{func.__module__}.{func.__qualname__}"
    PRECOMPILED_COROUTINES.prepare(func.__module__)
    fp = transform.fingerprint(func)
    registered = PRECOMPILED.get(qualified) if generated_enabled() else None
    if registered is not None and registered[0] == fp \
            and tuple(registered[2].get("reserved", ())) == reserved_of(func):
        return registered[1], registered[2]
    previous = LABELS.get(qualified)
    if previous is None and registered is not None:
        previous = registered[2].get("labels")
    module, data = transform.transform(func, previous)
    try:
        code = compile(module, func.__code__.co_filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise CoroutineError(f"the state machine does not compile: {e.msg}",
                             func.__code__.co_filename, e.lineno, func.__qualname__) from None
    namespace = {"register_precompiled": lambda *args: None}
    exec(code, namespace)
    return namespace[data["maker"]], data


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def coroutine(func: _F, /) -> _F: ...


@overload
def coroutine(*, reserved: Iterable[str] = ()) -> Callable[[_F], _F]: ...


def coroutine(func: Any = None, /, *, reserved: Iterable[str] = ()) -> Any:
    """Make a generator function's generators resumable and saveable. Its generators
    keep the generator protocol (next, send, throw, close), so the type is unchanged.

    ``@autosave.coroutine(reserved=("LABEL", ...))``: labels of removed resume points
    that no later yield may take (docs/coroutines.md, "Pinned and reserved labels")."""
    if func is None:
        return lambda f: _decorate(f, reserved)
    return _decorate(func, reserved)


def _decorate(func, reserved):
    if isinstance(func, (staticmethod, classmethod)):
        return type(func)(_decorate(func.__func__, reserved))
    if func in SPECS:
        return func
    if reserved:
        def error(reason):
            return CoroutineError(reason, function=getattr(func, "__qualname__", None))
        setattr(func, RESERVED_ATTR, check_reserved(reserved, error))
    maker, data = build(func)
    return instantiate(func, maker, data)
