"""The AST vocabulary of the coroutine compiler: node builders, predicates over
statements and yields, resume points, and positions for generated nodes."""

import ast
import inspect
import re

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
YIELDS = (ast.Yield, ast.YieldFrom)
CO_GENERATOR = inspect.CO_GENERATOR


# -- small AST helpers ------------------------------------------------------------------

def name(ident, store=False):
    return ast.Name(id=ident, ctx=ast.Store() if store else ast.Load())


def attr(obj, field, store=False):
    return ast.Attribute(value=name(obj) if isinstance(obj, str) else obj, attr=field,
                         ctx=ast.Store() if store else ast.Load())


def const(value):
    return ast.Constant(value=value)


def assign(target, value):
    if isinstance(target, str):
        target = name(target, store=True)
    return ast.Assign(targets=[target], value=value)


def call(func, *args):
    return ast.Call(func=name(func) if isinstance(func, str) else func, args=list(args),
                    keywords=[])


def if_(test, body, orelse=()):
    return ast.If(test=test, body=list(body) or [ast.Pass()], orelse=list(orelse))


def not_(expr):
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def compare(left, op, right):
    return ast.Compare(left=left, ops=[op], comparators=[right])


def own_nodes(node):
    """``node`` and what it holds in the same scope, in field order (nested functions,
    lambdas and classes: only their decorators, defaults and bases)."""
    out = []

    def visit(n, top):
        out.append(n)
        if not top and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts = [*n.decorator_list, *n.args.defaults,
                     *[d for d in n.args.kw_defaults if d is not None]]
        elif not top and isinstance(n, ast.Lambda):
            parts = [*n.args.defaults, *[d for d in n.args.kw_defaults if d is not None]]
        elif not top and isinstance(n, ast.ClassDef):
            parts = [*n.decorator_list, *n.bases, *n.keywords]
        else:
            parts = list(ast.iter_child_nodes(n))
        for p in parts:
            visit(p, False)

    visit(node, True)
    return out


def has_yield(node):
    return any(isinstance(n, YIELDS) for n in own_nodes(node))


def header_exprs(s):
    """The expressions a compound statement evaluates itself (not its blocks)."""
    if isinstance(s, (ast.If, ast.While)):
        return [s.test]
    if isinstance(s, ast.For):
        return [s.target, s.iter]
    if isinstance(s, ast.With):
        return [p for item in s.items for p in (item.context_expr, item.optional_vars) if p]
    if isinstance(s, ast.Try):
        return [h.type for h in s.handlers if h.type is not None]
    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [p for p in own_nodes(s)[1:] if isinstance(p, ast.expr)]
    if isinstance(s, ast.Match):
        return [s.subject]
    return None     # a simple statement: all of it


def blocks_of(s):
    """(field, block, context kind) of a statement's blocks."""
    if isinstance(s, ast.If):
        return [("body", s.body, "if"), ("orelse", s.orelse, "else")]
    if isinstance(s, ast.While):
        return [("body", s.body, "while"), ("orelse", s.orelse, "while-else")]
    if isinstance(s, ast.For):
        return [("body", s.body, "for"), ("orelse", s.orelse, "for-else")]
    if isinstance(s, ast.With):
        return [("body", s.body, "with")]
    if isinstance(s, ast.Try):
        out = [("body", s.body, "try")]
        out += [(("handler", i), h.body, "except") for i, h in enumerate(s.handlers)]
        return out + [("orelse", s.orelse, "try-else"), ("finalbody", s.finalbody, "finally")]
    return []


def one_line(text):
    return re.sub(r"\s*\n\s*", " ", text).strip()


def stmt_text(s):
    if isinstance(s, ast.If):
        return f"if {ast.unparse(s.test)}"
    if isinstance(s, ast.While):
        return f"while {ast.unparse(s.test)}"
    if isinstance(s, ast.For):
        return f"for {ast.unparse(s.target)} in {ast.unparse(s.iter)}"
    if isinstance(s, ast.With):
        return "with " + ", ".join(ast.unparse(i) for i in s.items)
    if isinstance(s, ast.Match):
        return f"match {ast.unparse(s.subject)}"
    return one_line(ast.unparse(s))


def is_resume(s):
    """A statement-level yield whose operand holds no other yield."""
    if isinstance(s, ast.Expr):
        v = s.value
    elif isinstance(s, ast.Assign):
        v = s.value
        if any(has_yield(t) for t in s.targets):
            return False
    else:
        return False
    return isinstance(v, YIELDS) and (v.value is None or not has_yield(v.value))


def target_names(t):
    """Plain names a target binds (tuples, lists, starred unpacked)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in target_names(e)]
    if isinstance(t, ast.Starred):
        return target_names(t.value)
    return []


def ends_flow(stmts):
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise, ast.Break, ast.Continue))


# -- the transform ----------------------------------------------------------------------

class Point:
    __slots__ = ("index", "stmt", "node", "label", "info", "live", "guarded", "suspend",
                 "finalize", "delegate", "forced", "needed")

    def __init__(self, index, stmt, node, info):
        self.index, self.stmt, self.node, self.info = index, stmt, node, info
        self.label = None
        self.live = set()
        self.guarded = set()
        self.needed = set()      # live after the yield: a save must hold it to resume
        self.suspend = False     # inside a native finally or a lowered with: flag it
        self.finalize = False    # inside a try or with: close() when collected
        self.delegate = None     # fast name of the yield-from delegate
        self.forced = set()      # hidden names the resume path itself needs


class Ctx:
    """Live sets at the places control can jump to (liveness analysis)."""
    __slots__ = ("exc", "ret", "brk", "cont")

    def __init__(self, exc=frozenset(), ret=frozenset(), brk=frozenset(), cont=frozenset()):
        self.exc, self.ret, self.brk, self.cont = exc, ret, brk, cont

    def plus(self, extra, exc=True, ret=True, loops=True):
        return Ctx(self.exc | extra if exc else self.exc, self.ret | extra if ret else self.ret,
                   self.brk | extra if loops else self.brk,
                   self.cont | extra if loops else self.cont)


def spec_literal(value):
    """A literal expression for JSON-like data (dicts, lists, strings, numbers)."""
    return ast.parse(repr(value), mode="eval").body


def fix_locations(tree, default):
    """Give every generated node the position of the nearest located ancestor."""
    def visit(node, lineno, col, end_lineno, end_col):
        if isinstance(node, (ast.expr, ast.stmt, ast.excepthandler, ast.arg, ast.keyword,
                             ast.alias, ast.pattern)) or hasattr(node, "lineno"):
            if getattr(node, "lineno", None) is None:
                node.lineno, node.col_offset = lineno, col
                node.end_lineno, node.end_col_offset = end_lineno, end_col
            else:
                lineno, col = node.lineno, node.col_offset
                end_lineno = getattr(node, "end_lineno", None) or lineno
                end_col = getattr(node, "end_col_offset", None) or col
        for child in ast.iter_child_nodes(node):
            visit(child, lineno, col, end_lineno, end_col)

    visit(tree, default.lineno, default.col_offset,
          getattr(default, "end_lineno", default.lineno), getattr(default, "end_col_offset", 0))


def located(nodes, origin):
    """Generated statements take the position of the statement they came from."""
    for n in nodes:
        for m in ast.walk(n):
            if isinstance(m, (ast.expr, ast.stmt, ast.excepthandler)) and \
                    getattr(m, "lineno", None) is None:
                ast.copy_location(m, origin)
                if getattr(m, "end_lineno", None) is None:
                    m.end_lineno = getattr(origin, "end_lineno", origin.lineno)
                    m.end_col_offset = getattr(origin, "end_col_offset", origin.col_offset)
    return nodes
