"""How a suspended coroutine is saved and loaded.

Record ``autosave.coroutine``: ``[function, label, name, value, name, value, ...]``.

* ``function`` a reference to an ``autosave.global`` record naming the decorated
  function (``module.Qual.name``), so loading resolves it under the trust rules of any
  other name: only functions of the allowed namespaces, nothing imported outside them;
* ``label`` the resume point (``<start>``, ``<done>``, or a label from ``labels``);
* then the locals live at that point, by name, sorted by name; hidden locals (open loop
  iterators, ``with`` managers, ``yield from`` delegates, pending exceptions) have names
  like ``iter@1f3a2c``. Unbound locals are left out.

Loading a label the function no longer has, or without a local the point needs, is an
``IncompatibleSaveError`` naming the function and the label.
"""

import types

from ..adapters.base import ADAPTERS_BY_TYPE, Adapter, register_adapter
from ..adapters.callables import GLOBAL
from ..advice import local_coroutine
from ..errors import IncompatibleSaveError, SaveError
from .runtime import DONE, RUNNING, UNBOUND, Loading
from .specs import FunctionRef, spec_of


class CoroutineAdapter(Adapter):
    name = "autosave.coroutine"
    types = ()
    mutable, has_fill, has_loaded_hook = True, True, True

    def parts(self, obj):
        spec = obj._spec
        state = obj._state
        if state == RUNNING:
            raise SaveError(f"coroutine {obj.__qualname__}() is running: the save was taken "
                            f"inside its own step; save between steps")
        if "<locals>" in spec.ref.__qualname__:
            raise SaveError(local_coroutine(spec.ref.__module__, spec.ref.__qualname__))
        out = [spec.ref, spec.labels[state]]
        d = obj.__dict__
        for saved, attr in spec.saved[state]:
            value = d[attr]
            if value is not UNBOUND:
                out.append(saved)
                out.append(value)
        return out

    def allocate(self, rec):
        if len(rec) < 3 or len(rec) % 2 == 0:
            raise ValueError("a coroutine record holds a function, a label and name/value pairs")
        return Loading.__new__(Loading)

    def fill(self, obj, vals):
        fn, label = vals[1], vals[2]
        spec = spec_of(fn)
        if spec is None:
            raise IncompatibleSaveError(
                f"the save holds a coroutine of {getattr(fn, '__module__', '?')}."
                f"{getattr(fn, '__qualname__', fn)!r}, which is not an @autosave.coroutine "
                f"function any more")
        if type(label) is not str:
            raise ValueError("a coroutine's label is a string")
        state = spec.state_of.get(label)
        if state is None:
            raise IncompatibleSaveError(
                f"coroutine {spec.qualified_name} was saved at label {label!r}, which it no "
                f"longer has; its labels are {sorted(spec.state_of)}")
        slots = spec.slots[state]
        d = obj.__dict__
        if state != DONE:
            for attr in spec.frame:
                d[attr] = UNBOUND
        found = set()
        for i in range(3, len(vals), 2):
            saved, value = vals[i], vals[i + 1]
            if type(saved) is not str:
                raise ValueError("a coroutine's local names are strings")
            slot = slots.get(saved)
            if slot is None:
                continue                   # no longer live there: dropped
            attr, _, holds_cell = slot
            if holds_cell and type(value) is not types.CellType:
                value = types.CellType(value)
            elif not holds_cell and type(value) is types.CellType:
                value = _cell_value(value)
            d[attr] = value
            found.add(saved)
        for saved, (attr, required, holds_cell) in slots.items():
            if saved in found:
                continue
            if holds_cell:
                d[attr] = types.CellType()
            elif required:
                raise IncompatibleSaveError(
                    f"coroutine {spec.qualified_name} at label {label!r} needs the local "
                    f"{saved!r}, which the save does not hold")
        obj.__qualname__ = spec.qualname
        obj._state = state
        obj.__class__ = spec.placeholder

    def create(self, rec, vals):
        obj = self.allocate(rec)
        self.fill(obj, vals)
        return obj


COROUTINE = register_adapter(CoroutineAdapter())
# the function reference is written as a plain global name
ADAPTERS_BY_TYPE[FunctionRef] = GLOBAL


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return UNBOUND
