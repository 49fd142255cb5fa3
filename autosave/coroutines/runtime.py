"""The run-time half of ``@autosave.coroutine``: the generator protocol, the helpers the
generated state machines call, and the per-function ``CoroutineSpec``.

A generated state machine is a subclass of ``Coroutine`` whose ``__next__``/``send``
is the generated step function. The instance *is* the frame: its ``__dict__`` holds
the locals that live across a yield (``v_<name>`` for the function's own locals,
``h_<n>`` for hidden ones: loop iterators, open ``with`` managers, ``yield from``
delegates, pending exceptions). ``_state`` holds the resume point as a small integer
(0 not started, -1 running, -2 finished, k > 0 suspended at point k); saves hold the
point's label, never the integer.
"""

import collections.abc
import sys
import types
import warnings
from copy import deepcopy as _deepcopy

NOT_STARTED, RUNNING, DONE = 0, -1, -2
_PY312 = sys.version_info >= (3, 12)
_PY313 = sys.version_info >= (3, 13)


class _Unbound:
    __slots__ = ()

    def __repr__(self):
        return "<unbound>"

    def __reduce__(self):
        raise TypeError("the unbound marker of a coroutine frame is never saved")

    def __copy__(self):
        return self                  # a singleton: copies of a frame share it

    def __deepcopy__(self, memo):
        return self


UNBOUND = _Unbound()
"""Held by a frame slot whose local is not bound at the current resume point."""


class Jump(BaseException):
    """Carries ``return``/``break``/``continue`` out of a ``try`` whose ``finally``
    holds a yield; ``args[0]`` is ``("return", value)``, ``("break",)`` or
    ``("continue",)``. Never escapes a state machine."""


class YFResult:
    """What ``yf_step`` returns when the ``yield from`` delegate has finished."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def yf_step(d, val, exc):
    """One step of ``yield from d``: the value ``d`` yields, or a YFResult when done."""
    # send, throw and close are looked up on the delegate's class: its instance
    # attributes may be a save's data (docs/security.md)
    if exc is None:
        if val is None:
            step, args = next, (d,)
        else:
            step, args = getattr(type(d), "send", None), (d, val)
            if step is None:
                raise AttributeError(f"'{type(d).__name__}' object has no attribute 'send'")
        try:
            return step(*args)
        except StopIteration as e:
            return YFResult(e.value)
    if isinstance(exc, GeneratorExit):
        close = getattr(type(d), "close", None)
        if close is not None:
            close(d)
        raise exc
    throw = getattr(type(d), "throw", None)
    if throw is not None:
        throw = throw.__get__(d)
    if throw is None:
        raise exc
    handled = sys.exception()
    try:
        return throw(exc)
    except StopIteration as e:
        return YFResult(e.value)
    except BaseException as e:
        # thrown back into the delegating coroutine: chained to the exception it is
        # handling, as CPython chains an exception thrown into a generator frame
        if handled is not None and e is not handled:
            e.__context__ = handled
        raise


def enter(manager):
    """``type(m).__enter__(m)``, checking ``__exit__`` first, as ``with`` does."""
    cls = type(manager)
    try:
        enter_ = cls.__enter__
        _ = cls.__exit__         # looked up first, as `with` does
    except AttributeError:
        raise TypeError(f"'{cls.__name__}' object does not support the context manager "
                        f"protocol") from None
    return enter_(manager)


def exit_(manager, exc):
    """``__exit__`` with the exception ``exc`` (or None): whether to suppress it."""
    if exc is None:
        return type(manager).__exit__(manager, None, None, None)
    return type(manager).__exit__(manager, type(exc), exc, exc.__traceback__)


def _normalize_throw(typ, val, tb):
    if isinstance(typ, BaseException):
        if val is not None:
            raise TypeError("instance exception may not have a separate value")
        exc = typ
    elif isinstance(typ, type) and issubclass(typ, BaseException):
        if isinstance(val, typ):
            exc = val
        elif val is None:
            exc = typ()
        elif isinstance(val, tuple):
            exc = typ(*val)
        else:
            exc = typ(val)
    else:
        raise TypeError(f"exceptions must be classes or instances deriving from "
                        f"BaseException, not {type(typ).__name__}")
    if tb is not None:
        if not isinstance(tb, types.TracebackType):
            raise TypeError("throw() third argument must be a traceback object")
        exc = exc.with_traceback(tb)
    return exc


class Coroutine:
    """Base of every generated state machine: the generator protocol around the
    generated step function ``_step(value=None, exc=None)``."""

    __slots__ = ("_state", "__qualname__", "__dict__", "__weakref__")
    _spec = None                 # the CoroutineSpec, set on each generated class
    _finalizing: frozenset[int] = frozenset()   # states whose close() at collection may run user code

    def __iter__(self):
        return self

    def __reduce_ex__(self, protocol):
        raise TypeError(
            f"{self.__qualname__}() is a suspended @autosave.coroutine, which pickle cannot "
            f"save; save the state that holds it with autosave.dumps() or autosave.save(), "
            f"or copy it with autosave.copy() or copy.deepcopy()")

    def __copy__(self):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._state, new.__qualname__ = self._state, self.__qualname__
        return new

    def __deepcopy__(self, memo):
        # what copy.deepcopy does for a plain object, which the __reduce_ex__ above refuses
        new = object.__new__(type(self))
        memo[id(self)] = new
        new._state, new.__qualname__ = self._state, self.__qualname__
        new.__dict__.update(_deepcopy(self.__dict__, memo))
        return new

    def _inactive(self, val, exc):
        """A step asked of a coroutine that is running or finished."""
        if self._state == RUNNING:
            raise ValueError("generator already executing")
        if exc is not None:
            raise exc
        raise StopIteration

    def _finish(self):
        self._state = DONE
        self.__dict__.clear()

    def throw(self, typ, val=None, tb=None):
        if val is not None or tb is not None:
            if _PY312:
                warnings.warn("the (type, exc, tb) signature of throw() is deprecated, "
                              "use the single-arg signature instead.",
                              DeprecationWarning, stacklevel=2)
        exc = _normalize_throw(typ, val, tb)
        if self._state == DONE:
            raise exc
        # Hand the coroutine over without keeping it in this frame: a traceback that
        # outlives the step reaches this frame (f_back), and must not keep the coroutine
        # alive (a native generator's does not).
        holder = [self]
        del self
        return type(holder[0])._step(holder.pop(), None, exc)

    def _unstarted_error(self, exc):
        """What a throw into a coroutine not started yet raises (from its first line):
        the exception itself; before 3.12 a StopIteration becomes a RuntimeError."""
        self._finish()
        if isinstance(exc, StopIteration) and not _PY312:
            error = RuntimeError("generator raised StopIteration")
            error.__cause__ = error.__context__ = exc
            return error
        return exc

    def close(self):
        state = self._state
        if state == NOT_STARTED:
            self._finish()
            return None
        if state == DONE:
            return None
        if state == RUNNING:
            raise ValueError("generator already executing")
        holder = [self]
        del self
        try:
            type(holder[0])._step(holder.pop(), None, GeneratorExit())
        except GeneratorExit:
            return None
        except StopIteration as e:
            return e.value if _PY313 else None
        raise RuntimeError("generator ignored GeneratorExit")

    def _close_when_collected(self):
        """``__del__`` of the classes whose function has a yield inside ``try`` or
        ``with``: like a native generator, close it so its ``finally`` blocks and
        ``__exit__`` run."""
        if self._state in self._finalizing:
            self.close()

    # -- introspection, as on native generators ---------------------------------------

    @property
    def gi_running(self):
        return self._state == RUNNING

    @property
    def gi_suspended(self):
        return self._state > 0

    @property
    def gi_frame(self):
        return None if self._state == DONE else self

    @property
    def gi_code(self):
        return self._spec.function.__code__

    @property
    def gi_yieldfrom(self):
        state = self._state
        if state > 0:
            attr = self._spec.delegates[state]
            if attr is not None:
                return self.__dict__.get(attr)
        return None

    @property
    def label(self):
        """The label of the point this coroutine is parked at (``<start>``,
        ``<done>``, or a resume point's label)."""
        return self._spec.label_of(self._state)

    def __repr__(self):
        return f"<autosave coroutine {self.__qualname__} at {self.label!r}>"


collections.abc.Generator.register(Coroutine)


class Loading(Coroutine):
    """What a coroutine record is while its save loads: no protocol, nothing runs on
    collection. Becomes its function's class once the whole graph has loaded."""
    __slots__ = ()

    def __autosave_loaded__(self):
        # a local saved in a cell that is a plain local now holds the cell's contents,
        # read now that the cell is filled (coroutines/adapter.py)
        cells = self.__dict__.pop("cells@", None)
        if cells is not None:
            d = self.__dict__
            for attr in cells:
                try:
                    d[attr] = d[attr].cell_contents
                except ValueError:
                    d[attr] = UNBOUND
        self.__class__ = self._real


HELPERS = {
    "UNBOUND": UNBOUND,
    "Jump": Jump,
    "YFResult": YFResult,
    "yf_step": yf_step,
    "enter": enter,
    "exit": exit_,
    "iter": iter,
    "new": object.__new__,
    "cell": types.CellType,
    "BaseException": BaseException,
    "StopIteration": StopIteration,
    "RuntimeError": RuntimeError,
    "TypeError": TypeError,
    "NameError": NameError,
    "AssertionError": AssertionError,
    "isinstance": isinstance,
    "tuple": tuple,
    "super": super,
}
"""Names the generated code reaches through its closure, never through the game's
module globals (which may shadow builtins)."""
