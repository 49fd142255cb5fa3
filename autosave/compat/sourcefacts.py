"""What a coroutine's source says that its labels do not: the loops around each yield
and which attributes each local is computed from. The gate turns changes there into
warnings (a reviewer decides): a loop's bound changed with saves parked in it, a local
derived from a field an upgrade hook converts. Read with ``ast``; nothing runs."""

import ast
import inspect
import textwrap


def _function_node(func):
    try:
        lines, first = inspect.getsourcelines(func)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None, None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node, first
    return None, None


def loops_by_line(func):
    """[(header text, first line, last line)] of the loops of ``func``, in the file's
    line numbers, outermost first."""
    node, first = _function_node(func)
    if node is None:
        return []
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.While):
            header = f"while {ast.unparse(n.test)}"
        elif isinstance(n, ast.For):
            header = f"for {ast.unparse(n.target)} in {ast.unparse(n.iter)}"
        else:
            continue
        out.append((header, first + n.lineno - 1, first + (n.end_lineno or n.lineno) - 1))
    out.sort(key=lambda h: (h[1], -h[2]))
    return out


def loops_at(loops, line):
    """The headers of the loops holding source line ``line``."""
    if line is None:
        return ()
    return tuple(h for h, lo, hi in loops if lo <= line <= hi)


def derived_attributes(func):
    """{local: sorted attribute names its value is computed from}, through other locals."""
    node, _ = _function_node(func)
    if node is None:
        return {}
    reads, deps = {}, {}
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            attrs_ = {a.attr for a in ast.walk(n.value) if isinstance(a, ast.Attribute)}
            used = {a.id for a in ast.walk(n.value) if isinstance(a, ast.Name)}
            for name in names:
                reads.setdefault(name, set()).update(attrs_)
                deps.setdefault(name, set()).update(used - {name})
    changed = True
    while changed:
        changed = False
        for name, used in deps.items():
            for other in used:
                extra = reads.get(other, set()) - reads[name]
                if extra:
                    reads[name] |= extra
                    changed = True
    return {k: tuple(sorted(v)) for k, v in sorted(reads.items()) if v}
