"""The attributes of a plain class, read from its ``__init__`` (and its bases') source.

A plain class declares no fields: its instances get attributes in ``__init__``, and a
load never runs ``__init__``. So an attribute a patch adds there is missing from every
loaded instance unless the class body gives it a default. The gate reads the
assignments to ``self.NAME`` in ``__init__`` with ``ast`` (nothing is run) to know the
class's attributes; a class whose ``__init__`` cannot be read, or sets attributes in a
way assignments do not show (``setattr(self, ...)``, ``self.__dict__``, ``vars(self)``),
is reported as not judged rather than passed silently.
"""

import ast
import inspect
import textwrap

import attrs


@attrs.frozen
class InitAttributes:
    names: dict              # attribute -> source line of its first assignment
    judged: bool             # False: some attributes may be set in ways not read here
    why: str | None = None   # why not judged
    elsewhere: dict = attrs.field(factory=dict)   # set by other methods only: -> line


def _self_name(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    args = func.args.posonlyargs + func.args.args
    return args[0].arg if args else None


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def _flatten(target: ast.AST):
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _flatten(elt)
    elif isinstance(target, ast.Starred):
        yield from _flatten(target.value)
    else:
        yield target


def _read(func, first_line: int) -> InitAttributes:
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return InitAttributes({}, False, "its __init__ source cannot be read")
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return InitAttributes({}, False, "its __init__ is not a plain function")
    me = _self_name(fn)
    names: dict = {}
    why = None
    for node in ast.walk(fn):
        for target in _targets(node):
            for t in _flatten(target):
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id == me):
                    names.setdefault(t.attr, first_line + t.lineno - 1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("setattr", "vars") and node.args and \
                isinstance(node.args[0], ast.Name) and node.args[0].id == me:
            why = f"its __init__ calls {node.func.id}(self, ...)"
        if isinstance(node, ast.Attribute) and node.attr == "__dict__" and \
                isinstance(node.value, ast.Name) and node.value.id == me:
            why = "its __init__ uses self.__dict__"
    return InitAttributes(names, why is None, why)


def other_method_attributes(cls: type) -> dict:
    """{attribute: line} assigned to ``self`` by the class's other methods (a ``start()``
    setting ``self.timer``): a save made after that method ran holds them."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name, fn in vars(klass).items():
            if name == "__init__" or not inspect.isfunction(fn):
                continue
            try:
                _, first = inspect.getsourcelines(fn)
            except (OSError, TypeError):
                continue
            for attr, line in _read(fn, first).names.items():
                out.setdefault(attr, line)
    return out


def init_attributes(cls: type) -> InitAttributes:
    """The attributes the ``__init__`` methods of ``cls`` and its Python bases assign
    (``elsewhere``: those only other methods assign)."""
    names: dict = {}
    judged, why = True, None
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if klass is object or init is None:
            continue
        if not inspect.isfunction(init):
            judged, why = False, f"{klass.__qualname__}.__init__ is not Python code"
            continue
        try:
            _, first = inspect.getsourcelines(init)
        except (OSError, TypeError):
            judged, why = False, f"the source of {klass.__qualname__}.__init__ cannot be read"
            continue
        found = _read(init, first)
        for name, line in found.names.items():
            names.setdefault(name, line)
        if not found.judged:
            judged, why = False, found.why
    elsewhere = {k: v for k, v in other_method_attributes(cls).items() if k not in names}
    return InitAttributes(names, judged, why, elsewhere)
