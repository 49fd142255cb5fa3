"""Pinned and reserved labels: the names a developer gives resume points.

``yield autosave.label("door-2", "wait")`` pins the label of that yield: the transform
recognises the call as the yield's operand, takes its name as the label and drops the
call, so the step function yields ``"wait"`` as the plain generator would. The call is
recognised by what it resolves to in the function's globals (``autosave.label``, or
``label`` imported from autosave, under any module alias), never by spelling alone, and
the name must be a string literal: a label is part of the code, as a field name is.

``@autosave.coroutine(reserved=("door-3",))`` sets ``__autosave_reserved__`` on the
function: labels of removed resume points that no later yield may take (a pinned label
naming one is refused; an unpinned twin numbered onto one skips it). The attribute is
the one source both the decorator's transform and autosave-codegen read.
"""

import ast
import builtins

from . import labels as labels_mod
from .syntax import YIELDS, own_nodes

RESERVED_ATTR = "__autosave_reserved__"


def reserved_of(func) -> tuple[str, ...]:
    """The reserved labels of ``func`` (the plain function or the decorated one)."""
    return tuple(getattr(func, RESERVED_ATTR, ()) or ())


def check_reserved(names, error) -> tuple[str, ...]:
    """``names`` as a sorted tuple, each a valid label, else ``error(reason)``."""
    if isinstance(names, str):
        raise error("reserved= takes a tuple of labels, not one string: "
                    f"reserved=({names!r},)")
    out = []
    for name in names:
        why = labels_mod.check_name(name)
        if why is not None:
            raise error(f"cannot reserve {name!r}: {why}")
        out.append(name)
    return tuple(sorted(set(out)))


class Pins:
    """The pinned labels of one function's yields, found and stripped in its tree."""

    def __init__(self, func, fn, error):
        self.func, self.fn, self.error = func, fn, error
        self.local = self.local_names(fn)
        self.by_yield: dict[int, str] = {}

    @staticmethod
    def local_names(fn) -> set[str]:
        args = fn.args
        out = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        out |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        for n in own_nodes(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not fn:
                out.add(n.name)
            elif isinstance(n, ast.alias):
                out.add(n.asname or n.name.split(".")[0])
        return out

    def is_marker(self, node) -> bool:
        """Whether ``node`` (a call's function) resolves to ``autosave.label``."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.local:
            return False
        glb = getattr(self.func, "__globals__", {})
        if node.id in glb:
            obj = glb[node.id]
        elif hasattr(builtins, node.id):
            obj = getattr(builtins, node.id)
        else:
            return False
        try:
            for attr in reversed(parts):
                obj = getattr(obj, attr)
        except Exception:   # any attribute lookup the module makes fail: not a marker
            return False
        return obj is labels_mod.label

    def strip(self) -> dict[int, str]:
        """{id(yield node): pinned label}; each marker call is replaced by its value."""
        seen: dict[str, int] = {}
        consumed = set()
        for n in own_nodes(self.fn):
            if not isinstance(n, YIELDS) or not isinstance(n.value, ast.Call) \
                    or not self.is_marker(n.value.func):
                continue
            call = n.value
            name, value = self.arguments(call)
            why = labels_mod.check_name(name)
            if why is not None:
                raise self.error(call, f"autosave.label({name!r}): {why}")
            if name in seen:
                raise self.error(call, f"the label {name!r} is pinned on two yields (line "
                                       f"{seen[name]} and this one); give each its own")
            if name in reserved_of(self.func):
                raise self.error(call, f"the label {name!r} is reserved (reserved= of "
                                       f"@autosave.coroutine): a save parked at the removed "
                                       f"resume point would resume here; choose another")
            if value is None and isinstance(n, ast.YieldFrom):
                raise self.error(call, "yield from autosave.label(NAME, iterable) needs "
                                       "the iterable")
            seen[name] = call.lineno
            consumed.add(id(call))
            n.value = value
            self.by_yield[id(n)] = name
        for n in own_nodes(self.fn):
            if isinstance(n, ast.Call) and id(n) not in consumed and self.is_marker(n.func):
                raise self.error(n, "autosave.label names a yield: write it as the yield's "
                                    "operand, yield autosave.label(NAME, value)")
        return self.by_yield

    def arguments(self, call):
        args = list(call.args)
        for k in call.keywords:
            if k.arg == "value" and len(args) == 1:
                args.append(k.value)
            else:
                raise self.error(call, "autosave.label takes (NAME, value)")
        if not 1 <= len(args) <= 2 or any(isinstance(a, ast.Starred) for a in args):
            raise self.error(call, "autosave.label takes (NAME, value)")
        first = args[0]
        if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
            raise self.error(call, "autosave.label's NAME must be a string literal: a "
                                   "label is part of the code, as a field name is")
        value = args[1] if len(args) == 2 else None
        if isinstance(value, ast.Constant) and value.value is None:
            value = None
        return first.value, value
