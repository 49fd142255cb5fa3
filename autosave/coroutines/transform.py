"""Generator function -> resumable state machine, with the standard library's ``ast`` only.

``state_machine_source(func)`` returns the Python source of a *maker* for the state
machine of ``func`` and its labels; the decorator compiles the same tree at definition
time (with the function's own file and line numbers, so tracebacks point at the game's
code), ``autosave-codegen`` writes the source into a module. Both give the same
functions, the same labels and the same saved bytes.

How a generator becomes a state machine
---------------------------------------

The body is first *desugared* so that every ``yield`` is a statement of its own
(``yield v``, ``target = yield v``, ``yield from e``, ``target = yield from e``): a yield
inside an expression is hoisted with the operands evaluated before it into hidden
temporaries, short-circuit operators and conditional expressions become ``if``
statements, so evaluation order is kept. Each such statement is a *resume point*, with
a small integer state (source order) and a stable label (see ``labels``).

The step function keeps the function's statements and Python's own control flow; it
does not explode the body into blocks. A local ``st`` holds the state to resume at
(0 when running normally). Every statement that contains resume points is entered only
if ``st`` is 0 or within its range of states; the others are skipped while ``st`` is not
0. So a resumed step walks straight down to its point: ``if`` takes the branch holding
it without testing, ``while`` enters its body without testing, a ``for`` loop keeps its
iterator in the frame and fetches the next item with ``for target in it: break`` only
when not resuming, ``try`` bodies and handlers are real ``try`` statements (a step that
resumes inside an ``except`` handler raises the saved exception again at the top of the
``try`` to enter the handler natively, with its traceback and context put back), and
``with`` is lowered to its ``__enter__``/``__exit__`` calls around a ``try`` so the
manager lives in the frame and ``__exit__`` runs exactly once. A ``finally`` holding a
yield runs as ordinary code after the ``try``; the pending exception, or the pending
``return``/``break``/``continue`` (carried by ``runtime.Jump``), waits in the frame.

Locals are the step function's fast locals while it runs; at a yield the ones live
after it (liveness analysis) are stored in the frame, and loaded back when the step
resumes there. Locals that may be unbound there are stored as ``UNBOUND`` and deleted
again on load, so reading them raises ``UnboundLocalError`` as natively. Locals that
inner functions or lambdas capture live in explicit cells (``x`` becomes
``cell.cell_contents`` in the body and the inner functions), so closures see later
assignments across yields, as natively.
"""

import ast
import inspect
import re
import sys
import textwrap
import types

import xxhash

from ..errors import CoroutineError
from . import labels as labels_mod
from .runtime import HELPERS

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
YIELDS = (ast.Yield, ast.YieldFrom)
CO_GENERATOR = inspect.CO_GENERATOR
SPEC_VERSION = 1
_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


# -- code fingerprints ------------------------------------------------------------------

def fingerprint(func):
    """A hash of what ``func`` compiles to (bytecode, constants, names; not line numbers
    or file names), with the Python version. A changed function gets a new fingerprint,
    so a state machine generated for its old text is never used for it."""
    h = xxhash.xxh64()
    h.update(_VERSION.encode())

    def visit(code):
        h.update(b"\x00code")
        for part in (code.co_name, code.co_qualname, repr(code.co_argcount),
                     repr(code.co_posonlyargcount), repr(code.co_kwonlyargcount),
                     repr(code.co_flags), ",".join(code.co_varnames),
                     ",".join(code.co_names), ",".join(code.co_freevars),
                     ",".join(code.co_cellvars)):
            h.update(part.encode("utf-8", "surrogatepass") + b"\x1f")
        h.update(code.co_code)
        h.update(getattr(code, "co_exceptiontable", b""))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                visit(const)
            else:
                h.update(_const_text(const).encode("utf-8", "surrogatepass") + b"\x1f")

    visit(func.__code__)
    h.update(repr(func.__qualname__).encode())
    return h.hexdigest()


def _const_text(const):
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_const_text(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_const_text(c) for c in const) + ")"
    return f"{type(const).__name__}:{const!r}"


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
                 "finalize", "delegate", "forced")

    def __init__(self, index, stmt, node, info):
        self.index, self.stmt, self.node, self.info = index, stmt, node, info
        self.label = None
        self.live = set()
        self.guarded = set()
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


class Transform:
    def __init__(self, func, previous_labels=None):
        self.func = func
        code = getattr(func, "__code__", None)
        self.qualname = getattr(func, "__qualname__", repr(func))
        self.module = getattr(func, "__module__", None)
        if code is None or not isinstance(func, types.FunctionType):
            raise CoroutineError(f"{func!r} is not a function", function=self.qualname)
        self.filename = code.co_filename
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
            raise CoroutineError("async functions cannot be made resumable; write a "
                                 "generator function (def with yield)",
                                 self.filename, code.co_firstlineno, self.qualname)
        if not code.co_flags & CO_GENERATOR:
            raise CoroutineError("the function is not a generator function (it has no "
                                 "yield); only generators can be made resumable",
                                 self.filename, code.co_firstlineno, self.qualname)
        if func.__name__ == "<lambda>":
            raise CoroutineError("a lambda cannot be made resumable; use def",
                                 self.filename, code.co_firstlineno, self.qualname)
        self.previous = previous_labels
        self.freevars = code.co_freevars
        self.fn = self.parse()
        self.first = self.fn.lineno

    # -- source ------------------------------------------------------------------------

    def error(self, node, reason):
        return CoroutineError(reason, self.filename, getattr(node, "lineno", None), self.qualname)

    def parse(self):
        func = self.func
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError) as e:
            raise CoroutineError(
                f"its source is not available ({e}); ship the state machines generated by "
                f"autosave-codegen, or keep the .py files", self.filename,
                func.__code__.co_firstlineno, self.qualname) from None
        source = "".join(lines)
        dedented = textwrap.dedent(source)
        indent = 0
        for raw, ded in zip(source.splitlines(), dedented.splitlines()):
            if raw.strip():
                indent = len(raw) - len(ded)
                break
        try:
            tree = ast.parse(dedented)
        except SyntaxError as e:
            raise CoroutineError(f"its source could not be parsed again: {e.msg}",
                                 self.filename, first + (e.lineno or 1) - 1,
                                 self.qualname) from None
        if first > 1:
            ast.increment_lineno(tree, first - 1)
        if indent:
            for n in ast.walk(tree):
                if hasattr(n, "col_offset") and n.col_offset is not None:
                    n.col_offset += indent
                    if getattr(n, "end_col_offset", None) is not None:
                        n.end_col_offset += indent
        fn = tree.body[0] if tree.body else None
        if isinstance(fn, ast.AsyncFunctionDef) or not isinstance(fn, ast.FunctionDef) \
                or fn.name != func.__name__:
            raise CoroutineError("its source does not start with its def statement",
                                 self.filename, first, self.qualname)
        return fn

    # -- the pipeline ------------------------------------------------------------------

    def run(self):
        fn = self.fn
        self.check_unsupported(fn)
        self.choose_prefix(fn)
        self.label_pass(fn.body)
        self.class_name = self.enclosing_class()
        if self.class_name:
            Mangler(self.class_name).visit(fn)
        self.scopes(fn)
        body = self.rewrite_names(fn)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.copy_location(ast.Pass(), body[0])]    # the docstring
        self.stmt_keys = {}
        body = Desugar(self).block(body)
        self.body = body
        self.number(body)
        self.liveness()
        self.definite()
        self.classify()
        return self.assemble()

    def check_unsupported(self, fn):
        for n in own_nodes(fn):
            if n is fn:
                continue
            if isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
                raise self.error(n, "await / async for / async with cannot appear in a "
                                    "resumable generator")
            if isinstance(n, (ast.Match, ast.TryStar)) and has_yield(n):
                kind = "match" if isinstance(n, ast.Match) else "try/except*"
                raise self.error(n, f"a yield inside {kind} cannot be made resumable; "
                                    f"use if/elif or try/except")
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) \
                    and any(isinstance(m, YIELDS) for m in own_nodes(n)[1:]):
                raise self.error(n, "a yield inside a decorator, default value or base "
                                    "class expression cannot be made resumable")
            if isinstance(n, ast.ExceptHandler) and n.type is not None and has_yield(n.type):
                raise self.error(n, "a yield inside an except clause's exception type "
                                    "cannot be made resumable")
            if isinstance(n, (ast.For, ast.With)):
                targets = [n.target] if isinstance(n, ast.For) else \
                    [i.optional_vars for i in n.items if i.optional_vars is not None]
                if any(has_yield(t) for t in targets):
                    raise self.error(n, "a yield inside a for/with target cannot be made "
                                        "resumable")

    def choose_prefix(self, fn):
        used = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Name):
                used.add(n.id)
            elif isinstance(n, ast.arg):
                used.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                used.add(n.name)
            elif isinstance(n, ast.alias):
                used.add(n.asname or n.name.split(".")[0])
        used |= set(self.freevars)
        n = 0
        prefix = "_as_"
        while any(u.startswith(prefix) for u in used):
            n += 1
            prefix = f"_as{n}_"
        self.P = prefix
        self.self_ = prefix + "self"
        self.val = prefix + "val"
        self.exc = prefix + "exc"
        self.st = prefix + "st"
        self.ret = prefix + "ret"
        self.yv = prefix + "yv"
        self.hidden = {}          # fast name -> (saved name, frame attribute)
        self.counter = 0

    def fresh(self, base):
        """A fast local of the step function only (never saved)."""
        self.counter += 1
        return f"{self.P}{base}{self.counter}"

    def helper(self, key):
        return f"{self.P}h_{key}"

    def new_hidden(self, saved):
        self.counter += 1
        fast = f"{self.P}{self.counter}"
        self.hidden[fast] = (saved, f"h_{self.counter}")
        return fast

    def enclosing_class(self):
        parts = self.qualname.split(".")
        for i in range(len(parts) - 2, -1, -1):
            if parts[i + 1] != "<locals>" and parts[i] != "<locals>":
                return parts[i]
        return None

    # -- labels and stable keys --------------------------------------------------------

    def label_pass(self, body):
        """Label info of every yield (on the text as written) and stable keys of the
        statements that own hidden locals."""
        points, keys = [], {}
        counts = {}

        def key_for(ctx, disc):
            base = xxhash.xxh32_hexdigest(("/".join(ctx) + "\x1e" + disc).encode())[:6]
            n = counts[base] = counts.get(base, 0) + 1
            return base if n == 1 else f"{base}.{n}"

        def visit_block(stmts, ctx):
            for s in stmts:
                visit(s, ctx)

        def visit(s, ctx):
            heads = header_exprs(s)
            found = [n for h in ([s] if heads is None else heads) for n in own_nodes(h)
                     if isinstance(n, YIELDS)]
            if found:
                text = stmt_text(s)
                for i, y in enumerate(found):
                    points.append((y, labels_mod.PointInfo(
                        ctx, text if i == 0 else f"{text} |{i + 1}", y.lineno - self.first)))
            if isinstance(s, ast.For):
                disc = "for " + ast.unparse(s.target)
            elif isinstance(s, ast.With):
                disc = "with " + ",".join(ast.unparse(i.optional_vars) if i.optional_vars
                                          else "_" for i in s.items)
            elif isinstance(s, (ast.If, ast.While, ast.Try)):
                disc = type(s).__name__.lower()
            else:
                disc = stmt_text(s)
            keys[id(s)] = key_for(ctx, disc)
            if isinstance(s, SCOPES):
                return
            for _, block, kind in blocks_of(s):
                visit_block(block, ctx + (kind,))

        visit_block(body, ())
        self.orig_keys = keys
        self.yield_info = {id(y): info for y, info in points}
        infos = [info for _, info in points]
        labels = labels_mod.assign(infos, self.previous)
        self.yield_label = {id(y): label for (y, _), label in zip(points, labels)}
        self.label_manifest = labels_mod.manifest(infos, labels)

    # -- scopes ------------------------------------------------------------------------

    def scopes(self, fn):
        args = fn.args
        self.params = [a.arg for a in (*args.posonlyargs, *args.args)]
        if args.vararg:
            self.params.append(args.vararg.arg)
        self.params += [a.arg for a in args.kwonlyargs]
        if args.kwarg:
            self.params.append(args.kwarg.arg)
        declared_global, declared_nonlocal = set(), set()
        bound = set(self.params)
        deleted = set()
        except_names = set()
        comp_targets = set()
        for n in own_nodes(fn):
            if isinstance(n, COMPREHENSIONS):
                for g in n.generators:
                    comp_targets.update(id(m) for m in ast.walk(g.target))
        for n in own_nodes(fn):
            if id(n) in comp_targets:
                continue
            if isinstance(n, ast.Global):
                declared_global.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                declared_nonlocal.update(n.names)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                bound.add(n.id)
                if isinstance(n.ctx, ast.Del):
                    deleted.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
                bound.add(n.name)
            elif isinstance(n, ast.alias):
                if n.name != "*":
                    bound.add(n.asname or n.name.split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.add(n.name)
                except_names.add(n.name)
            elif isinstance(n, ast.MatchAs) and n.name or isinstance(n, ast.MatchStar) and n.name:
                bound.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                bound.add(n.rest)
        self.locals = (bound - declared_global - declared_nonlocal)
        self.never_definite = deleted | except_names
        self.captured = self.find_captured(fn)
        for name_ in self.captured:
            for n in own_nodes(fn):
                if isinstance(n, COMPREHENSIONS):
                    for m in ast.walk(n):
                        if isinstance(m, ast.NamedExpr) and m.target.id == name_:
                            raise self.error(m, f"an assignment expression inside a "
                                                f"comprehension binds {name_!r}, which an "
                                                f"inner function also uses; assign it in a "
                                                f"statement instead")

    def find_captured(self, fn):
        """Locals of the coroutine that nested functions, lambdas or classes use."""

        def binds_of(body_nodes):
            binds, nonlocal_ = set(), set()
            for b in body_nodes:
                for n in own_nodes(b):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                        binds.add(n.id)
                    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                            and n is not b or isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                             ast.ClassDef)) and n is b:
                        binds.add(n.name)
                    elif isinstance(n, ast.alias):
                        binds.add(n.asname or n.name.split(".")[0])
                    elif isinstance(n, ast.ExceptHandler) and n.name:
                        binds.add(n.name)
                    elif isinstance(n, ast.Global):
                        binds |= set(n.names)
                    elif isinstance(n, ast.Nonlocal):
                        nonlocal_ |= set(n.names)
            return binds - nonlocal_, nonlocal_

        def children_scopes(nodes):
            out = []
            for b in nodes:
                for n in own_nodes(b):
                    if n is not b and isinstance(n, (*SCOPES, *COMPREHENSIONS)):
                        out.append(n)
            return out

        def free(scope):
            """Names ``scope`` uses that resolve outside it."""
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = scope.args
                params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
                params |= {x.arg for x in (a.vararg, a.kwarg) if x}
                body = scope.body if isinstance(scope.body, list) else [scope.body]
                binds, nonlocal_ = binds_of(body)
                binds |= params
                class_like = False
            elif isinstance(scope, ast.ClassDef):
                body = scope.body
                binds, nonlocal_ = binds_of(body)
                class_like = True
            else:
                body = [scope.elt] if hasattr(scope, "elt") else [scope.key, scope.value]
                body = body + [x for g in scope.generators for x in (g.iter, *g.ifs)]
                binds = {n.id for g in scope.generators for n in ast.walk(g.target)
                         if isinstance(n, ast.Name)}
                nonlocal_ = set()
                class_like = False
            used = set()
            for b in body:
                for n in own_nodes(b):
                    if isinstance(n, ast.Name):
                        used.add(n.id)
            out = {u for u in used if u not in binds} | nonlocal_
            for child in children_scopes(body):
                inner = free(child)
                out |= inner if class_like else inner - binds
            return out

        captured = set()
        for scope in children_scopes(fn.body):
            if isinstance(scope, COMPREHENSIONS):
                targets = {n.id for g in scope.generators for n in ast.walk(g.target)
                           if isinstance(n, ast.Name)}
                body = [scope.elt] if hasattr(scope, "elt") else [scope.key, scope.value]
                body = body + [x for g in scope.generators for x in (g.iter, *g.ifs)]
                for child in children_scopes(body):
                    captured |= free(child) - targets
            else:
                captured |= free(scope)
        return captured & self.locals

    def rewrite_names(self, fn):
        """Captured locals -> explicit cells; zero-argument super() -> explicit."""
        self.cell_of = {n: f"{self.P}c_{n}" for n in sorted(self.captured)}
        first_param = self.params[0] if self.params and fn.args.args + fn.args.posonlyargs else None
        return NameRewriter(self, first_param).rewrite_body(fn.body)

    # -- numbering ---------------------------------------------------------------------

    def number(self, body):
        self.points = [None]
        self.rng = {}

        def visit_block(stmts):
            lo = None
            for s in stmts:
                r = visit(s)
                if r and lo is None:
                    lo = r[0]
            return lo

        def visit(s):
            start = len(self.points)
            if is_resume(s):
                node = s.value
                info = self.yield_info.get(id(node))
                if info is None:
                    raise self.error(s, "internal error: a resume point lost its label")
                p = Point(start, s, node, info)
                p.label = self.yield_label[id(node)]
                self.points.append(p)
            elif not isinstance(s, SCOPES):
                for _, block, _ in blocks_of(s):
                    visit_block(block)
            end = len(self.points) - 1
            if end >= start:
                self.rng[id(s)] = (start, end)
                return start, end
            return None

        visit_block(body)
        self.n = len(self.points) - 1

    def block_range(self, stmts):
        los = [self.rng[id(s)] for s in stmts if id(s) in self.rng]
        return (los[0][0], los[-1][1]) if los else None

    # -- liveness ----------------------------------------------------------------------

    def tracked(self):
        return (self.locals - self.captured) | set(self.hidden)

    def uses(self, node):
        track = self.track
        out = set()
        for n in own_nodes(node):
            if isinstance(n, ast.Name) and n.id in track and isinstance(n.ctx, (ast.Load, ast.Del)):
                out.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) \
                    and n.target.id in track:
                out.add(n.target.id)        # x += 1 reads x
        return out

    def kills(self, s):
        out = set()
        if isinstance(s, ast.Assign):
            for t in s.targets:
                out.update(target_names(t))
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            out.update(target_names(s.target))
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in s.names)
        elif isinstance(s, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            out.add(s.name)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                out.update(target_names(t))
        return out & self.track

    def liveness(self):
        self.track = self.tracked()
        self.lowered_fin = set()     # ids of Try statements whose finally holds yields
        for s in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(s, ast.Try) and self.block_range(s.finalbody):
                self.lowered_fin.add(id(s))
        self.jump_crossing_with = set()
        for s in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if id(s) in self.lowered_fin:
                for block in [s.body, s.orelse, *[h.body for h in s.handlers]]:
                    for b in block:
                        for n in own_nodes(b):
                            if isinstance(n, ast.With):
                                self.jump_crossing_with.add(id(n))
        self.pending_of = {}
        self.handler_exc = {}
        self.iter_of = {}
        self.mgr_of = {}
        self.lowered_with = set()
        for s in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            key = self.stmt_keys.get(id(s), "x")
            if isinstance(s, ast.For) and id(s) in self.rng:
                self.iter_of[id(s)] = self.new_hidden(f"iter@{key}")
            elif isinstance(s, ast.With) and (id(s) in self.rng or self.with_needs_lowering(s)):
                self.lowered_with.add(id(s))
                self.mgr_of[id(s)] = self.new_hidden(f"with@{key}")
            elif isinstance(s, ast.Try) and id(s) in self.rng:
                for i, h in enumerate(s.handlers):
                    if self.block_range(h.body):
                        self.handler_exc[(id(s), i)] = self.new_hidden(f"exc{i}@{key}")
                if id(s) in self.lowered_fin:
                    self.pending_of[id(s)] = self.new_hidden(f"pending@{key}")
        for s in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(s, ast.Try):
                pend = self.pending_of.get(id(s))
                if pend:
                    for p in self.points_in(s.finalbody):
                        p.forced.add(pend)
                for i, h in enumerate(s.handlers):
                    hx = self.handler_exc.get((id(s), i))
                    if hx:
                        for p in self.points_in(h.body):
                            p.forced.add(hx)
        for p in self.points[1:]:
            if isinstance(p.node, ast.YieldFrom):
                p.delegate = self.new_hidden(f"from@{p.label}")
        self.write_through = (set(self.iter_of.values()) | set(self.mgr_of.values())
                              | set(self.handler_exc.values()) | set(self.pending_of.values())
                              | {p.delegate for p in self.points[1:] if p.delegate})
        assigned = set()
        for n in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                assigned.add(n.id)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                assigned.add(n.target.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assigned.add(n.name)
            elif isinstance(n, ast.alias):
                assigned.add(n.asname or n.name.split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                assigned.add(n.name)
        # parameters the body never rebinds: the frame always holds their value
        self.constant_params = set(self.params) - assigned
        self.track = self.tracked()
        for _ in range(50):
            before = [set(p.live) for p in self.points[1:]]
            self.live_block(self.body, frozenset(), Ctx())
            if before == [p.live for p in self.points[1:]]:
                break

    def with_needs_lowering(self, s):
        """A with block that a Jump (return/break/continue out of a try whose finally
        yields) may cross must be lowered, so __exit__ sees a normal exit."""
        return id(s) in self.jump_crossing_with

    def live_block(self, stmts, out, ctx):
        live = set(out)
        for s in reversed(stmts):
            live = self.live_stmt(s, live, ctx)
        return live

    def live_stmt(self, s, out, ctx):
        if is_resume(s):
            p = self.points[self.rng[id(s)][0]]
            targets = s.targets if isinstance(s, ast.Assign) else []
            kills = set()
            uses = set()
            for t in targets:
                kills.update(target_names(t))
                if not isinstance(t, ast.Name):
                    uses |= self.uses(t)
            after = uses | (set(out) - (kills & self.track)) | ctx.exc | p.forced
            if p.delegate:
                after.add(p.delegate)
            p.live |= after
            v = s.value.value
            before = set(p.live) - ({p.delegate} if p.delegate else set())
            return (self.uses(v) if v is not None else set()) | before
        if isinstance(s, ast.If):
            return (self.uses(s.test) | self.live_block(s.body, out, ctx)
                    | self.live_block(s.orelse, out, ctx) | ctx.exc)
        if isinstance(s, ast.While):
            head = set()
            for _ in range(50):
                inner = Ctx(ctx.exc, ctx.ret, frozenset(out), frozenset(head))
                new = (self.uses(s.test) | ctx.exc | self.live_block(s.body, head, inner)
                       | self.live_block(s.orelse, out, ctx))
                if new == head:
                    break
                head = new
            return head
        if isinstance(s, ast.For):
            it = self.iter_of.get(id(s))
            kills = set(target_names(s.target)) & self.track
            head = set()
            for _ in range(50):
                inner = Ctx(ctx.exc, ctx.ret, frozenset(out), frozenset(head))
                body_in = self.live_block(s.body, head, inner)
                new = ((body_in - kills) | self.uses(s.target) | ctx.exc
                       | self.live_block(s.orelse, out, ctx) | set(out))
                if it:
                    new.add(it)
                if new == head:
                    break
                head = new
            return self.uses(s.iter) | ctx.exc | (head - ({it} if it else set()))
        if isinstance(s, ast.With):
            m = self.mgr_of.get(id(s))
            extra = frozenset({m}) if m else frozenset()
            inner = ctx.plus(extra)
            # __exit__ may suppress an exception: then what follows the with runs
            inner = Ctx(inner.exc | frozenset(out), inner.ret, inner.brk, inner.cont)
            body_in = self.live_block(s.body, set(out) | extra, inner)
            kills = set()
            for item in s.items:
                if item.optional_vars is not None:
                    kills.update(target_names(item.optional_vars))
            uses = set()
            for item in s.items:
                uses |= self.uses(item.context_expr)
                if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
                    uses |= self.uses(item.optional_vars)
            return uses | ctx.exc | (body_in - (kills & self.track) - extra)
        if isinstance(s, ast.Try):
            anywhere = frozenset(out) | ctx.exc | ctx.ret | ctx.brk | ctx.cont
            pend = self.pending_of.get(id(s))
            if s.finalbody:
                fin_ctx = ctx
                fin_in = self.live_block(s.finalbody, anywhere, fin_ctx)
                if pend:
                    fin_in = set(fin_in) - {pend}     # set by the catch just before
                after = frozenset(fin_in)
                inner = Ctx(ctx.exc | after, ctx.ret | after, ctx.brk | after, ctx.cont | after)
            else:
                after = frozenset(out)
                inner = ctx
            handlers_in = set()
            for i, h in enumerate(s.handlers):
                hin = self.live_block(h.body, after, inner)
                if h.name:
                    hin.discard(h.name)
                if h.type is not None:
                    hin |= self.uses(h.type)
                handlers_in |= hin
            else_in = self.live_block(s.orelse, after, inner)
            body_ctx = Ctx(inner.exc | handlers_in, inner.ret, inner.brk, inner.cont)
            return self.live_block(s.body, else_in, body_ctx) | handlers_in
        if isinstance(s, ast.Return):
            return (self.uses(s.value) if s.value else set()) | ctx.ret | ctx.exc
        if isinstance(s, ast.Raise):
            return self.uses(s) | ctx.exc
        if isinstance(s, ast.Break):
            return set(ctx.brk)
        if isinstance(s, ast.Continue):
            return set(ctx.cont)
        if isinstance(s, (ast.Match, ast.TryStar)):
            return self.uses(s) | set(out) | ctx.exc | ctx.ret | ctx.brk | ctx.cont
        return self.uses(s) | (set(out) - self.kills(s)) | ctx.exc

    def points_in(self, stmts):
        r = self.block_range(stmts)
        return self.points[r[0]:r[1] + 1] if r else []

    # -- definite assignment -----------------------------------------------------------

    def definite(self):
        never = self.never_definite
        start = frozenset(n for n in self.params if n not in never)

        def block(stmts, d):
            for s in stmts:
                d = stmt(s, d)
            return d

        def stmt(s, d):
            if is_resume(s):
                p = self.points[self.rng[id(s)][0]]
                p.guarded = set(d)   # temporarily: the definite set
                if p.delegate:
                    p.guarded.add(p.delegate)
                names = set()
                for t in (s.targets if isinstance(s, ast.Assign) else []):
                    names.update(target_names(t))
                return d | (names - never)
            if isinstance(s, ast.If):
                a, b = block(s.body, d), block(s.orelse, d)
                if ends_flow(s.body):
                    return b
                if ends_flow(s.orelse):
                    return a
                return a & b
            if isinstance(s, ast.While):
                block(s.body, d)
                block(s.orelse, d)
                return d
            if isinstance(s, ast.For):
                extra = set(target_names(s.target)) - never
                it = self.iter_of.get(id(s))
                if it:
                    extra.add(it)
                block(s.body, d | extra)
                block(s.orelse, d | ({it} if it else set()))
                return d
            if isinstance(s, ast.With):
                extra = set()
                for item in s.items:
                    if item.optional_vars is not None:
                        extra.update(target_names(item.optional_vars))
                m = self.mgr_of.get(id(s))
                if m:
                    extra.add(m)
                return block(s.body, d | (extra - never))
            if isinstance(s, ast.Try):
                body = block(s.body, d)
                outs = [block(s.orelse, body)]
                for i, h in enumerate(s.handlers):
                    extra = set()
                    hx = self.handler_exc.get((id(s), i))
                    if hx:
                        extra.add(hx)
                    outs.append(block(h.body, d | extra))
                pend = self.pending_of.get(id(s))
                fin = block(s.finalbody, d | ({pend} if pend else set()))
                common = frozenset.intersection(*map(frozenset, outs)) if outs else d
                return frozenset(common) | (fin - d) | d
            if isinstance(s, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom,
                              ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                return d | (self.kills(s) - never)
            if isinstance(s, ast.AugAssign):
                return d
            if isinstance(s, ast.Delete):
                return d - self.kills(s)
            return d

        block(self.body, start)

    def classify(self):
        for p in self.points[1:]:
            definite = p.guarded
            p.live = {v for v in p.live if v in self.track}
            p.guarded = {v for v in p.live if v not in definite}

    # -- output ------------------------------------------------------------------------

    def saved_name(self, fast):
        if fast in self.hidden:
            return self.hidden[fast][0]
        return fast

    def frame_attr(self, fast):
        if fast in self.hidden:
            return self.hidden[fast][1]
        return "v_" + fast

    def assemble(self):
        lower = Lower(self)
        step = lower.step_function()
        factory = lower.factory_function()
        P = self.P
        helper_names = sorted(HELPERS) + ["cls"]
        maker_args = list(self.freevars) + [self.helper(h) for h in helper_names]
        maker_name = "_autosave_sm_" + re.sub(r"\W", "_", f"{self.module}.{self.qualname}")
        maker = ast.FunctionDef(
            name=maker_name,
            args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in maker_args],
                               vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                               defaults=[]),
            body=[step, factory, ast.Return(value=ast.Tuple(
                elts=[name(step.name), name(factory.name)], ctx=ast.Load()))],
            decorator_list=[], returns=None, type_comment=None,
            **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        ast.copy_location(maker, self.fn)
        spec = self.spec_data(maker_name)
        register = ast.Expr(value=ast.Call(
            func=name("register_precompiled"),
            args=[const(f"{self.module}.{self.qualname}"), const(fingerprint(self.func)),
                  name(maker_name), spec_literal(spec)],
            keywords=[]))
        ast.copy_location(register, self.fn)
        module = ast.Module(body=[maker, register], type_ignores=[])
        fix_locations(module, self.fn)
        return module, spec

    def spec_data(self, maker_name):
        frame = []
        seen = set()
        for p in self.params:
            frame.append([p, "v_" + p])
            seen.add(p)
        for n in sorted((self.locals - seen) | set(self.captured) - seen):
            frame.append([n, "v_" + n])
            seen.add(n)
        for fast, (saved, attr_) in sorted(self.hidden.items(), key=lambda kv: kv[1][1]):
            frame.append([saved, attr_])
        points = []
        for p in self.points[1:]:
            live = []
            for v in p.live:
                live.append([self.saved_name(v), self.frame_attr(v), v in p.guarded])
            for c in sorted(self.captured):
                live.append([c, "v_" + c, False])
            live.sort()
            points.append({"label": p.label, "live": live, "finalize": p.finalize,
                           "delegate": self.frame_attr(p.delegate) if p.delegate else None})
        return {
            "version": SPEC_VERSION,
            "python": _VERSION,
            "module": self.module,
            "qualname": self.qualname,
            "name": self.func.__name__,
            "maker": maker_name,
            "prefix": self.P,
            "params": list(self.params),
            "frame": frame,
            "cells": sorted(self.captured),
            "points": points,
            "labels": self.label_manifest,
        }


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


# -- name mangling (methods: __x inside a class body) -----------------------------------

class Mangler(ast.NodeTransformer):
    def __init__(self, class_name):
        self.prefix = "_" + class_name.lstrip("_")
        self.active = bool(class_name.lstrip("_"))

    def m(self, ident):
        if self.active and ident.startswith("__") and not ident.endswith("__") and "." not in ident:
            return self.prefix + ident
        return ident

    def visit_Name(self, node):
        node.id = self.m(node.id)
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self.m(node.attr)
        return node

    def visit_arg(self, node):
        node.arg = self.m(node.arg)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        if node.arg:
            node.arg = self.m(node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.m(node.name)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = self.m(node.name)
        for d in node.decorator_list + node.bases + node.keywords:
            self.visit(d)
        inner = Mangler(node.name)
        node.body = [inner.visit(s) for s in node.body]
        return node

    def visit_Global(self, node):
        node.names = [self.m(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_alias(self, node):
        if node.asname:
            node.asname = self.m(node.asname)
        elif "." not in node.name:
            node.name = self.m(node.name)
        return node

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = self.m(node.name)
        self.generic_visit(node)
        return node


# -- captured locals and super() --------------------------------------------------------

class NameRewriter:
    """Captured locals become ``cell.cell_contents`` (in the body and in the nested
    scopes that see them); ``super()`` gets its class and first argument."""

    def __init__(self, t, first_param):
        self.t = t
        self.first = first_param

    def rewrite_body(self, body):
        out = []
        for s in body:
            out.append(self.visit(s, frozenset()))
            out.extend(self.bind_cells(s, frozenset()))
        return out

    def visit(self, node, shadow, own=True):
        t = self.t
        if isinstance(node, ast.Name):
            if node.id in t.cell_of and node.id not in shadow:
                new = ast.Attribute(value=name(t.cell_of[node.id]), attr="cell_contents",
                                    ctx=node.ctx)
                return ast.copy_location(new, node)
            return node
        if own and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "super" and not node.args and not node.keywords and \
                "super" not in shadow:
            if "__class__" not in t.freevars or self.first is None:
                raise t.error(node, "super() without arguments needs the method's class; "
                                    "write super(Class, self)")
            first = self.visit(name(self.first), shadow)
            node.args = [name("__class__"), first]
            node.func = name(t.helper("super"))
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            for d in [*a.defaults, *a.kw_defaults, *getattr(node, "decorator_list", [])]:
                if d is not None:
                    self.replace_in(d, shadow, own)
            binds = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            binds |= {x.arg for x in (a.vararg, a.kwarg) if x}
            body = node.body if isinstance(node.body, list) else [node.body]
            binds |= self.local_binds(body)
            inner = shadow | (binds - self.nonlocals(body))
            if isinstance(node.body, list):
                node.body = [self.visit(s, inner, False) for s in node.body]
                node.body = [s for s in node.body if s is not None] or [ast.Pass()]
            else:
                node.body = self.visit(node.body, inner, False)
            return node
        if isinstance(node, ast.Nonlocal) and not own:
            keep = [n for n in node.names if n not in t.cell_of or n in shadow]
            if not keep:
                return ast.copy_location(ast.Pass(), node)
            node.names = keep
            return node
        if isinstance(node, ast.ClassDef):
            for d in [*node.decorator_list, *node.bases, *node.keywords]:
                self.replace_in(d, shadow, own)
            binds = self.local_binds(node.body)
            node.body = [self.visit(s, shadow | binds, False) for s in node.body]
            return node
        if isinstance(node, COMPREHENSIONS):
            targets = {n.id for g in node.generators for n in ast.walk(g.target)
                       if isinstance(n, ast.Name)}
            # the first iterable is evaluated outside
            node.generators[0].iter = self.visit(node.generators[0].iter, shadow, own)
            inner = shadow | targets
            for i, g in enumerate(node.generators):
                if i:
                    g.iter = self.visit(g.iter, inner, False)
                g.ifs = [self.visit(c, inner, False) for c in g.ifs]
            for field in ("elt", "key", "value"):
                if hasattr(node, field):
                    setattr(node, field, self.visit(getattr(node, field), inner, False))
            return node
        self.replace_in(node, shadow, own)
        return node

    def bind_cells(self, stmt, shadow):
        """Statements binding a captured name without a Name node: copy it to the cell."""
        names = []
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name.split(".")[0] for a in stmt.names]
        out = []
        for n in names:
            if n in self.t.cell_of and n not in shadow:
                out.append(located([ast.Assign(
                    targets=[ast.Attribute(value=name(self.t.cell_of[n]), attr="cell_contents",
                                           ctx=ast.Store())], value=name(n))], stmt)[0])
        return out

    def replace_in(self, node, shadow, own):
        if own and isinstance(node, ast.ExceptHandler) and node.name in self.t.cell_of \
                and node.name not in shadow:
            node.body.insert(0, located([ast.Assign(
                targets=[ast.Attribute(value=name(self.t.cell_of[node.name]),
                                       attr="cell_contents", ctx=ast.Store())],
                value=name(node.name))], node)[0])
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                new = []
                for v in value:
                    if isinstance(v, ast.AST):
                        v = self.visit(v, shadow, own)
                        if v is not None:
                            new.append(v)
                            if own and isinstance(v, ast.stmt):
                                new.extend(self.bind_cells(v, shadow))
                    else:
                        new.append(v)
                setattr(node, field, new)
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value, shadow, own))

    def local_binds(self, body):
        out = set()
        for s in body:
            for n in own_nodes(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                    out.add(n.id)
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(n.name)
                elif isinstance(n, ast.alias):
                    out.add(n.asname or n.name.split(".")[0])
                elif isinstance(n, ast.ExceptHandler) and n.name:
                    out.add(n.name)
                elif isinstance(n, ast.Global):
                    out.update(n.names)
        return out

    def nonlocals(self, body):
        out = set()
        for s in body:
            for n in own_nodes(s):
                if isinstance(n, ast.Nonlocal):
                    out.update(n.names)
        return out


# -- desugaring: every yield becomes a statement -----------------------------------------

class Desugar:
    def __init__(self, t):
        self.t = t

    def block(self, stmts):
        return [m for s in stmts for m in self.stmt(s)]

    def key(self, s):
        return self.t.orig_keys.get(id(s), "x")

    def split_with(self, s, key):
        """``with a, b: body`` is ``with a: with b: body``."""
        inner_body = s.body
        for i in range(len(s.items) - 1, 0, -1):
            inner = ast.With(items=[s.items[i]], body=inner_body, type_comment=None)
            ast.copy_location(inner, s)
            self.t.orig_keys[id(inner)] = f"{key}/{i}"
            inner_body = [inner]
        first = ast.With(items=[s.items[0]], body=inner_body, type_comment=None)
        ast.copy_location(first, s)
        self.t.orig_keys[id(first)] = key
        return self.stmt(first)

    def temp_factory(self, key):
        count = [0]

        def temp():
            count[0] += 1
            return self.t.new_hidden(f"tmp{count[0]}@{key}")
        return temp

    def stmt(self, s):
        t = self.t
        key = self.key(s)
        if isinstance(s, ast.With) and len(s.items) > 1:
            return self.split_with(s, key)
        if isinstance(s, SCOPES) or not has_yield(s):
            t.stmt_keys[id(s)] = key
            return [s]
        if is_resume(s):
            t.stmt_keys[id(s)] = key
            return [s]
        temp = self.temp_factory(key)
        ex = Expressions(t, temp)
        out = []
        if isinstance(s, ast.Expr):
            pre, res = ex.expr(s.value)
            out = pre + ([ast.Expr(value=res)] if not isinstance(res, (ast.Name, ast.Constant)) else [])
        elif isinstance(s, ast.Assign):
            if any(has_yield(tg) for tg in s.targets):
                pre, res = ex.expr(s.value)
                holder = temp()
                out = pre + [assign(holder, res)]
                for tg in s.targets:
                    tpre, tnew = ex.target(tg)
                    out += tpre + [assign(tnew, name(holder))]
            else:
                pre, res = ex.expr(s.value)
                out = pre + [ast.Assign(targets=s.targets, value=res)]
        elif isinstance(s, ast.AnnAssign):
            pre, res = ex.expr(s.value)
            out = pre + [ast.Assign(targets=[s.target], value=res)]
        elif isinstance(s, ast.AugAssign):
            out = ex.augassign(s)
        elif isinstance(s, ast.Return):
            pre, res = ex.expr(s.value)
            out = pre + [ast.Return(value=res)]
        elif isinstance(s, ast.Raise):
            pre, exc = ex.expr(s.exc) if s.exc is not None else ([], None)
            if s.cause is not None and has_yield(s.cause):
                if exc is not None and ex.needs_hoist(exc):
                    h = temp()
                    pre.append(assign(h, exc))
                    exc = name(h)
                cpre, cause = ex.expr(s.cause)
                pre += cpre
            else:
                cause = s.cause
            out = pre + [ast.Raise(exc=exc, cause=cause)]
        elif isinstance(s, ast.Delete):
            out = []
            for tg in s.targets:
                tpre, tnew = ex.target(tg)
                out += tpre + [ast.Delete(targets=[tnew])]
        elif isinstance(s, ast.Assert):
            pre, test = ex.expr(s.test)
            fail = [ast.Raise(exc=name(t.helper("AssertionError")), cause=None)]
            if s.msg is not None:
                mpre, msg = ex.expr(s.msg)
                fail = mpre + [ast.Raise(exc=call(t.helper("AssertionError"), msg), cause=None)]
            out = [if_(name("__debug__"), pre + [if_(not_(test), fail)])]
        elif isinstance(s, ast.If):
            pre, test = ex.expr(s.test) if has_yield(s.test) else ([], s.test)
            new = ast.If(test=test, body=self.block(s.body), orelse=self.block(s.orelse))
            out = pre + [new]
        elif isinstance(s, ast.While):
            if has_yield(s.test):
                pre, test = ex.expr(s.test)
                body = self.block(s.body)
                if s.orelse:
                    flag = temp()
                    loop = ast.While(test=const(True), body=pre + [
                        if_(not_(test), [assign(flag, const(True)), ast.Break()])] + body,
                        orelse=[])
                    out = [assign(flag, const(False)), loop,
                           if_(name(flag), self.block(s.orelse))]
                else:
                    out = [ast.While(test=const(True), body=pre + [
                        if_(not_(test), [ast.Break()])] + body, orelse=[])]
            else:
                out = [ast.While(test=s.test, body=self.block(s.body),
                                 orelse=self.block(s.orelse))]
        elif isinstance(s, ast.For):
            pre, it = ex.expr(s.iter) if has_yield(s.iter) else ([], s.iter)
            new = ast.For(target=s.target, iter=it, body=self.block(s.body),
                          orelse=self.block(s.orelse), type_comment=None)
            t.stmt_keys[id(new)] = key
            out = pre + [new]
        elif isinstance(s, ast.With):
            pre = []
            items = []
            for item in s.items:
                if has_yield(item.context_expr):
                    ipre, e = ex.expr(item.context_expr)
                    if items:
                        # earlier managers are entered before this expression runs
                        break
                    pre += ipre
                    items.append(ast.withitem(context_expr=e, optional_vars=item.optional_vars))
                else:
                    items.append(item)
            new = ast.With(items=items, body=self.block(s.body), type_comment=None)
            t.stmt_keys[id(new)] = key
            out = pre + [new]
        elif isinstance(s, ast.Try):
            new = ast.Try(body=self.block(s.body),
                          handlers=[ast.ExceptHandler(type=h.type, name=h.name,
                                                      body=self.block(h.body))
                                    for h in s.handlers],
                          orelse=self.block(s.orelse),
                          finalbody=self.block(s.finalbody))
            for h_new, h in zip(new.handlers, s.handlers):
                ast.copy_location(h_new, h)
            t.stmt_keys[id(new)] = key
            out = [new]
        else:
            raise t.error(s, f"a yield inside a {type(s).__name__} statement cannot be made "
                             f"resumable")
        for n in out:
            if getattr(n, "lineno", None) is None:
                ast.copy_location(n, s)
            t.stmt_keys.setdefault(id(n), key)
        located(out, s)
        return out


class Expressions:
    """Linearisation: an expression holding yields -> (statements, residual)."""

    def __init__(self, t, temp):
        self.t, self.temp = t, temp

    def needs_hoist(self, e):
        if isinstance(e, ast.Constant):
            return False
        if isinstance(e, ast.Name):
            t = self.t
            return not (e.id in t.hidden or (e.id in t.locals and e.id not in t.captured))
        return True

    def hoist(self, e, pre):
        if not self.needs_hoist(e):
            return e
        h = self.temp()
        pre.append(located([assign(h, e)], e)[0])
        return name(h)

    def expr(self, e):
        if e is None or not has_yield(e):
            return [], e
        if isinstance(e, YIELDS):
            pre, v = self.expr(e.value) if e.value is not None else ([], None)
            h = self.temp()
            node = type(e)(value=v)
            ast.copy_location(node, e)
            self.t.yield_info[id(node)] = self.t.yield_info[id(e)]
            self.t.yield_label[id(node)] = self.t.yield_label[id(e)]
            return pre + [located([assign(h, node)], e)[0]], name(h)
        if isinstance(e, ast.BoolOp):
            h = self.temp()
            stmts_per = [self.expr(v) for v in e.values]
            tail = None
            for pre, res in reversed(stmts_per):
                block = pre + [assign(h, res)]
                if tail is not None:
                    test = name(h) if isinstance(e.op, ast.And) else not_(name(h))
                    block = block + [if_(test, tail)]
                tail = block
            return located(tail, e), name(h)
        if isinstance(e, ast.IfExp):
            h = self.temp()
            pre, test = self.expr(e.test)
            bpre, body = self.expr(e.body)
            opre, orelse = self.expr(e.orelse)
            return located(pre + [if_(test, bpre + [assign(h, body)],
                                      opre + [assign(h, orelse)])], e), name(h)
        if isinstance(e, ast.Compare):
            h = self.temp()
            pre, left = self.expr(e.left)
            left = self.hoist(left, pre)
            comps = list(zip(e.ops, e.comparators))

            def chain(left, i):
                op, comp = comps[i]
                cpre, right = self.expr(comp)
                if i + 1 < len(comps):
                    right = self.hoist(right, cpre)
                block = cpre + [assign(h, compare(left, op, right))]
                if i + 1 < len(comps):
                    block.append(if_(name(h), chain(right, i + 1)))
                return block
            return located(pre + chain(left, 0), e), name(h)
        if isinstance(e, ast.NamedExpr):
            pre, v = self.expr(e.value)
            h = self.temp()
            return located(pre + [assign(h, v), assign(e.target, name(h))], e), name(h)
        if isinstance(e, (ast.Lambda, *COMPREHENSIONS)):
            raise self.t.error(e, "a yield inside a lambda or comprehension cannot be made "
                                  "resumable")
        return self.generic(e)

    def children(self, e):
        """(getter, setter) of e's sub-expressions, in evaluation order."""
        out = []
        if isinstance(e, ast.Dict):
            for i in range(len(e.keys)):
                if e.keys[i] is not None:
                    out.append((e.keys, i))
                out.append((e.values, i))
            return out
        if isinstance(e, ast.Call):
            out.append((e, "func"))
            out += [(e.args, i) for i in range(len(e.args))]
            out += [(e.keywords[i], "value") for i in range(len(e.keywords))]
            return out
        for field, value in ast.iter_fields(e):
            if isinstance(value, list):
                out += [(value, i) for i, v in enumerate(value) if isinstance(v, ast.expr)]
            elif isinstance(value, ast.expr):
                out.append((e, field))
        return out

    @staticmethod
    def get(slot):
        holder, key = slot
        return holder[key] if isinstance(holder, list) else getattr(holder, key)

    @staticmethod
    def set(slot, value):
        holder, key = slot
        if isinstance(holder, list):
            holder[key] = value
        else:
            setattr(holder, key, value)

    def generic(self, e):
        slots = self.children(e)
        last = max((i for i, s in enumerate(slots) if has_yield(self.get(s))), default=-1)
        pre = []
        for i, slot in enumerate(slots[:last + 1]):
            child = self.get(slot)
            if isinstance(child, ast.Starred):
                cpre, v = self.expr(child.value)
                pre += cpre
                if i < last:
                    h = self.temp()
                    pre.append(assign(h, ast.Tuple(elts=[ast.Starred(value=v, ctx=ast.Load())],
                                                   ctx=ast.Load())))
                    v = name(h)
                self.set(slot, ast.Starred(value=v, ctx=ast.Load()))
                continue
            if isinstance(slot[0], ast.keyword) and slot[0].arg is None and i < last:
                cpre, v = self.expr(child)
                pre += cpre
                h = self.temp()
                pre.append(assign(h, ast.Dict(keys=[None], values=[v])))
                self.set(slot, name(h))
                continue
            cpre, v = self.expr(child)
            pre += cpre
            if i < last:
                v = self.hoist(v, pre)
            self.set(slot, v)
        return located(pre, e), e

    def target(self, tg):
        """An assignment or del target whose sub-expressions hold yields."""
        if isinstance(tg, (ast.Attribute, ast.Subscript)):
            ctx = tg.ctx
            pre = []
            if isinstance(tg, ast.Attribute):
                vpre, v = self.expr(tg.value)
                pre += vpre
                new = ast.Attribute(value=v, attr=tg.attr, ctx=ctx)
            else:
                vpre, v = self.expr(tg.value)
                pre += vpre
                if has_yield(tg.slice):
                    v = self.hoist(v, pre)
                spre, sl = self.expr(tg.slice)
                pre += spre
                new = ast.Subscript(value=v, slice=sl, ctx=ctx)
            return pre, ast.copy_location(new, tg)
        if has_yield(tg):
            raise self.t.error(tg, "a yield inside a tuple, list or starred assignment "
                                   "target cannot be made resumable")
        return [], tg

    def augassign(self, s):
        tg = s.target
        t = self.t
        if isinstance(tg, ast.Name) and tg.id in t.locals and tg.id not in t.captured:
            pre, v = self.expr(s.value)
            return pre + [ast.AugAssign(target=tg, op=s.op, value=v)]
        pre = []
        if isinstance(tg, ast.Name):
            load = ast.copy_location(name(tg.id), tg)
            store_target = tg
            if isinstance(tg, ast.Name) and tg.id in t.cell_of:
                pass
        elif isinstance(tg, ast.Attribute):
            vpre, v = self.expr(tg.value)
            pre += vpre
            obj = self.temp()
            pre.append(assign(obj, v))
            load = attr(obj, tg.attr)
            store_target = attr(obj, tg.attr, store=True)
        elif isinstance(tg, ast.Subscript):
            vpre, v = self.expr(tg.value)
            pre += vpre
            obj = self.temp()
            pre.append(assign(obj, v))
            spre, sl = self.expr(tg.slice)
            pre += spre
            key = self.temp()
            pre.append(assign(key, sl))
            load = ast.Subscript(value=name(obj), slice=name(key), ctx=ast.Load())
            store_target = ast.Subscript(value=name(obj), slice=name(key), ctx=ast.Store())
        else:
            raise t.error(s, "unsupported augmented assignment target")
        old = self.temp()
        pre.append(assign(old, load))
        vpre, v = self.expr(s.value)
        pre += vpre
        pre.append(ast.AugAssign(target=name(old, store=True), op=s.op, value=v))
        pre.append(assign(store_target, name(old)))
        return located(pre, s)


# -- lowering: the step function --------------------------------------------------------

class Lower:
    def __init__(self, t):
        self.t = t
        self.stack = []      # ("loop",) / ("lfin",) / ("nfin",) / ("with",)

    # names
    @property
    def st(self):
        return self.t.st

    def st_is_zero(self):
        return not_(name(self.st))

    def h(self, key):
        return self.t.helper(key)

    def step_function(self):
        t = self.t
        P = t.P
        body = self.block(t.body, t.n)
        load_params = []
        for p in t.params:
            if p in t.captured:
                load_params.append(assign(t.cell_of[p], attr(t.self_, "v_" + p)))
            else:
                load_params.append(assign(p, attr(t.self_, "v_" + p)))
        for c in sorted(t.captured - set(t.params)):
            load_params.append(assign(t.cell_of[c], attr(t.self_, "v_" + c)))
        S, ST = t.self_, self.st
        prologue = [
            assign(ST, attr(S, "_state")),
            if_(compare(name(ST), ast.LtE(), const(0)), [
                if_(name(ST), [ast.Return(value=ast.Call(
                    func=attr(S, "_inactive"), args=[name(t.val), name(t.exc)], keywords=[]))]),
                if_(compare(name(t.val), ast.IsNot(), const(None)), [
                    ast.Raise(exc=call(self.h("TypeError"), const(
                        "can't send non-None value to a just-started generator")), cause=None)]),
                if_(compare(name(t.exc), ast.IsNot(), const(None)), [
                    ast.Raise(exc=ast.Call(func=attr(S, "_unstarted_error"),
                                           args=[name(t.exc)], keywords=[]), cause=None)]),
                *load_params,
            ]),
            assign(attr(S, "_state", store=True), const(-1)),
        ]
        finish = [assign(attr(S, "_state", store=True), const(-2)),
                  ast.Expr(value=call(attr(attr(S, "__dict__"), "clear")))]
        handler = ast.ExceptHandler(
            type=name(self.h("BaseException")), name=P + "e",
            body=[assign(ST, const(0)), *finish,
                  ast.Delete(targets=[ast.Name(id=S, ctx=ast.Del())]),
                  if_(call(self.h("isinstance"), name(P + "e"), name(self.h("StopIteration"))), [
                      ast.Raise(exc=call(self.h("RuntimeError"),
                                         const("generator raised StopIteration")),
                                cause=name(P + "e"))]),
                  ast.Raise(exc=None, cause=None)])
        final = [if_(compare(name(ST), ast.Lt(), const(0)), [
            *finish,
            ast.Delete(targets=[ast.Name(id=S, ctx=ast.Del())]),
            if_(compare(name(t.ret), ast.Is(), const(None)),
                [ast.Raise(exc=name(self.h("StopIteration")), cause=None)]),
            ast.Raise(exc=call(self.h("StopIteration"), name(t.ret)), cause=None)])]
        main = ast.Try(body=body + [assign(t.ret, const(None)), assign(ST, const(-1))],
                       handlers=[handler], orelse=[], finalbody=final)
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=S), ast.arg(arg=t.val),
                                                    ast.arg(arg=t.exc)],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                             defaults=[const(None), const(None)])
        fn = ast.FunctionDef(name=P + "step", args=args, body=prologue + [main],
                             decorator_list=[], returns=None, type_comment=None,
                             **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        for n in prologue + [main]:
            located([n], t.fn)
        ast.copy_location(fn, t.fn)
        return fn

    def factory_function(self):
        t = self.t
        P = t.P
        a = t.fn.args
        strip = lambda args: [ast.arg(arg=x.arg, annotation=None) for x in args]  # noqa: E731
        args = ast.arguments(
            posonlyargs=strip(a.posonlyargs), args=strip(a.args),
            vararg=ast.arg(arg=a.vararg.arg) if a.vararg else None,
            kwonlyargs=strip(a.kwonlyargs),
            kw_defaults=[None if d is None else const(None) for d in a.kw_defaults],
            kwarg=ast.arg(arg=a.kwarg.arg) if a.kwarg else None,
            defaults=[const(None) for _ in a.defaults])
        o = P + "o"
        body = [assign(o, call(self.h("new"), name(self.h("cls")))),
                assign(attr(o, "__qualname__", store=True), const(t.qualname)),
                assign(attr(o, "_state", store=True), const(0))]
        params = set(t.params)
        spec_frame = t.spec_data("")["frame"]
        for saved, attr_ in spec_frame:
            if saved in params:
                value = name(saved)
                if saved in t.captured:
                    value = call(self.h("cell"), value)
            elif saved in t.captured:
                value = call(self.h("cell"))
            else:
                value = name(self.h("UNBOUND"))
            body.append(assign(attr(o, attr_, store=True), value))
        body.append(ast.Return(value=name(o)))
        fn = ast.FunctionDef(name=P + "factory", args=args, body=body, decorator_list=[],
                             returns=None, type_comment=None,
                             **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        ast.copy_location(fn, t.fn)
        located(body, t.fn)
        return fn

    # -- blocks ------------------------------------------------------------------------

    def block(self, stmts, limit):
        """Lower a block. ``limit``: the highest state ``st`` may hold on entering it."""
        t = self.t
        out, plain = [], []
        reach = 0            # states <= reach are consumed once past the statement

        def flush():
            if not plain:
                return
            lowered = [m for s in plain for m in self.plain(s)]
            if limit > reach:
                out.append(located([if_(self.st_is_zero(), lowered)], plain[0])[0])
            else:
                out.extend(lowered)
            plain.clear()

        for s in stmts:
            r = t.rng.get(id(s))
            if r is None:
                plain.append(s)
                continue
            flush()
            lowered = self.stmt(s)
            if limit > r[1]:
                out.append(located([if_(compare(name(self.st), ast.LtE(), const(r[1])),
                                        lowered)], s)[0])
            else:
                out.extend(lowered)
            reach = r[1]
        flush()
        return out or [ast.Pass()]

    def plain(self, s):
        """A statement without resume points: only returns, jumps out of a yielding
        finally, and with blocks such jumps cross need lowering."""
        if isinstance(s, ast.Return):
            return located(self.lower_return(s.value), s)
        if isinstance(s, (ast.Break, ast.Continue)):
            return located(self.lower_jump(s), s)
        if isinstance(s, SCOPES):
            return [s]
        if isinstance(s, ast.With) and id(s) in self.t.lowered_with:
            return self.lower_with(s)
        if isinstance(s, ast.Try) and s.finalbody:
            return self.lower_try(s)
        if isinstance(s, (ast.While, ast.For)):
            self.stack.append(("loop",))
            s.body = [m for b in s.body for m in self.plain(b)]
            self.stack.pop()
            s.orelse = [m for b in s.orelse for m in self.plain(b)]
            return [s]
        if isinstance(s, ast.Try):
            return self.lower_try(s)
        if isinstance(s, ast.With):
            self.stack.append(("nwith",))
            s.body = [m for b in s.body for m in self.plain(b)]
            self.stack.pop()
            return [s]
        if isinstance(s, ast.If):
            s.body = [m for b in s.body for m in self.plain(b)] or [ast.Pass()]
            s.orelse = [m for b in s.orelse for m in self.plain(b)]
            return [s]
        if isinstance(s, ast.Match):
            for case in s.cases:
                case.body = [m for b in case.body for m in self.plain(b)] or [ast.Pass()]
            return [s]
        if isinstance(s, ast.TryStar):
            s.body = [m for b in s.body for m in self.plain(b)] or [ast.Pass()]
            for h in s.handlers:
                h.body = [m for b in h.body for m in self.plain(b)] or [ast.Pass()]
            s.orelse = [m for b in s.orelse for m in self.plain(b)]
            s.finalbody = [m for b in s.finalbody for m in self.plain(b)]
            return [s]
        return [s]

    def in_lfin(self):
        return any(f[0] == "lfin" for f in self.stack)

    def lower_return(self, value):
        t = self.t
        if self.in_lfin():
            payload = ast.Tuple(elts=[const("return"), value or const(None)], ctx=ast.Load())
            return [ast.Raise(exc=call(self.h("Jump"), payload), cause=None)]
        return [assign(t.ret, value if value is not None else const(None)),
                assign(self.st, const(-1)), ast.Return(value=None)]

    def lower_jump(self, s):
        kind = "break" if isinstance(s, ast.Break) else "continue"
        for frame in reversed(self.stack):
            if frame[0] == "loop":
                return [s]
            if frame[0] == "lfin":
                payload = ast.Tuple(elts=[const(kind)], ctx=ast.Load())
                return [ast.Raise(exc=call(self.h("Jump"), payload), cause=None)]
        return [s]

    # -- statements with resume points -------------------------------------------------

    def stmt(self, s):
        if is_resume(s):
            return located(self.resume(s), s)
        if isinstance(s, ast.If):
            return located(self.lower_if(s), s)
        if isinstance(s, ast.While):
            return located(self.lower_while(s), s)
        if isinstance(s, ast.For):
            return located(self.lower_for(s), s)
        if isinstance(s, ast.With):
            return self.lower_with(s)
        if isinstance(s, ast.Try):
            return self.lower_try(s)
        raise self.t.error(s, f"internal error: cannot lower {type(s).__name__}")

    def store(self, fast):
        """Write a hidden local through to the frame where it is assigned: it is only
        read afterwards (its object changes, not the binding), so yields need not."""
        t = self.t
        return assign(attr(t.self_, t.frame_attr(fast), store=True), name(fast))

    def spill(self, p):
        t = self.t
        out = []
        for v in sorted(p.live - t.write_through - t.constant_params):
            target = attr(t.self_, t.frame_attr(v), store=True)
            if v in p.guarded:
                out.append(ast.Try(body=[assign(target, name(v))], handlers=[
                    ast.ExceptHandler(type=name(self.h("NameError")), name=None, body=[
                        assign(attr(t.self_, t.frame_attr(v), store=True),
                               name(self.h("UNBOUND")))])], orelse=[], finalbody=[]))
            else:
                out.append(assign(target, name(v)))
        return out

    def load(self, p):
        t = self.t
        out = []
        for v in sorted(p.live):
            out.append(assign(v, attr(t.self_, t.frame_attr(v))))
            if v in p.guarded:
                out.append(if_(compare(name(v), ast.Is(), name(self.h("UNBOUND"))),
                               [ast.Delete(targets=[ast.Name(id=v, ctx=ast.Del())])]))
        for c in sorted(t.captured):
            out.append(assign(t.cell_of[c], attr(t.self_, "v_" + c)))
        return out

    def suspend(self, p, value):
        t = self.t
        out = self.spill(p)
        out.append(assign(attr(t.self_, "_state", store=True), const(p.index)))
        if p.suspend:
            out.append(assign(self.st, const(1)))
        # a traceback that outlives this step keeps its frame's locals: not the coroutine
        out.append(ast.Delete(targets=[ast.Name(id=t.self_, ctx=ast.Del())]))
        out.append(ast.Return(value=value))
        return out

    def mark(self, p):
        p.suspend = any(f[0] in ("nfin", "with") for f in self.stack)
        p.finalize = any(f[0] in ("nfin", "with", "try", "lfin", "lfinbody") for f in self.stack)

    def resume(self, s):
        t = self.t
        p = t.points[t.rng[id(s)][0]]
        self.mark(p)
        node = s.value
        targets = s.targets if isinstance(s, ast.Assign) else None
        if isinstance(node, ast.Yield):
            first = [assign(t.yv, node.value if node.value is not None else const(None))]
            out = [if_(self.st_is_zero(), first + self.suspend(p, name(t.yv)))]
            out.append(assign(self.st, const(0)))
            out += self.load(p)
            out.append(if_(compare(name(t.exc), ast.IsNot(), const(None)),
                           [ast.Raise(exc=name(t.exc), cause=None)]))
            if targets:
                out.append(ast.Assign(targets=targets, value=name(t.val)))
            return out
        d = p.delegate
        start = [assign(d, call(self.h("iter"), node.value)), self.store(d),
                 assign(t.yv, call(self.h("yf_step"), name(d), const(None), const(None)))]
        again = [assign(self.st, const(0))] + self.load(p) + [
            assign(t.yv, call(self.h("yf_step"), name(d), name(t.val), name(t.exc)))]
        done = [ast.Assign(targets=targets, value=attr(t.yv, "value"))] if targets else [ast.Pass()]
        return [if_(self.st_is_zero(), start, again),
                if_(compare(attr(t.yv, "__class__"), ast.Is(), name(self.h("YFResult"))),
                    done, self.suspend(p, name(t.yv)))]

    def lower_if(self, s):
        t = self.t
        rb, ro = t.block_range(s.body), t.block_range(s.orelse)
        if rb and ro:
            resume_test = compare(name(self.st), ast.LtE(), const(rb[1]))
        else:
            resume_test = const(bool(rb))
        test = ast.IfExp(test=self.st_is_zero(), body=s.test, orelse=resume_test)
        body = self.block(s.body, rb[1] if rb else 0)
        orelse = self.block(s.orelse, ro[1] if ro else 0) if s.orelse else []
        return [ast.If(test=test, body=body, orelse=orelse)]

    def lower_while(self, s):
        t = self.t
        rb, ro = t.block_range(s.body), t.block_range(s.orelse)
        if ro:
            resume_test = compare(name(self.st), ast.LtE(), const(rb[1])) if rb else const(False)
        else:
            resume_test = const(True)
        if isinstance(s.test, ast.Constant) and s.test.value is True and not ro:
            test = const(True)
        else:
            test = ast.IfExp(test=self.st_is_zero(), body=s.test, orelse=resume_test)
        self.stack.append(("loop",))
        body = self.block(s.body, rb[1] if rb else 0)
        self.stack.pop()
        orelse = self.block(s.orelse, ro[1] if ro else 0) if s.orelse else []
        return [ast.While(test=test, body=body, orelse=orelse)]

    def lower_for(self, s):
        t = self.t
        it = t.iter_of[id(s)]
        rb, ro = t.block_range(s.body), t.block_range(s.orelse)
        out = [if_(self.st_is_zero(), [assign(it, call(self.h("iter"), s.iter)), self.store(it)])]
        self.stack.append(("loop",))
        body = self.block(s.body, rb[1] if rb else 0)
        self.stack.pop()
        fetch = ast.For(target=s.target, iter=name(it), body=[ast.Break()], orelse=[],
                        type_comment=None)
        if not s.orelse:
            fetch.orelse = [ast.Break()]
            out.append(ast.While(test=const(True),
                                 body=[if_(self.st_is_zero(), [fetch])] + body, orelse=[]))
            return out
        flag = t.fresh("exhausted")
        fetch.orelse = [assign(flag, const(True)), ast.Break()]
        loop = ast.While(test=const(True), body=[if_(self.st_is_zero(), [fetch])] + body,
                         orelse=[])
        out.append(assign(flag, const(False)))
        if ro:
            loop_guard = ast.BoolOp(op=ast.Or(), values=[
                self.st_is_zero(), compare(name(self.st), ast.LtE(), const(rb[1]))]) \
                if rb else self.st_is_zero()
            out.append(if_(loop_guard, [loop]))
            else_test = ast.BoolOp(op=ast.Or(), values=[name(flag), name(self.st)])
        else:
            out.append(loop)
            else_test = name(flag)
        out.append(if_(else_test, self.block(s.orelse, ro[1] if ro else 0)))
        return out

    def lower_with(self, s):
        t = self.t
        item = s.items[0]
        m = t.mgr_of[id(s)]
        r = t.rng.get(id(s))
        P = t.P
        hit = t.fresh("hit")
        enter = call(self.h("enter"), name(m))
        setup = [assign(m, item.context_expr), self.store(m)]
        if item.optional_vars is not None:
            setup.append(ast.Assign(targets=[item.optional_vars], value=enter))
        else:
            setup.append(ast.Expr(value=enter))
        out = [if_(self.st_is_zero(), setup)] if r else setup
        self.stack.append(("with",))
        body = self.block(s.body, r[1] if r else 0)
        self.stack.pop()
        e = P + "we"
        handlers = []
        if self.in_lfin():
            handlers.append(ast.ExceptHandler(type=name(self.h("Jump")), name=None, body=[
                assign(hit, const(True)),
                ast.Expr(value=call(self.h("exit"), name(m), const(None))),
                ast.Raise(exc=None, cause=None)]))
        handlers.append(ast.ExceptHandler(type=name(self.h("BaseException")), name=e, body=[
            assign(hit, const(True)),
            if_(not_(call(self.h("exit"), name(m), name(e))), [ast.Raise(exc=None, cause=None)])]))
        final = [if_(ast.BoolOp(op=ast.And(), values=[
            not_(name(hit)), compare(name(self.st), ast.LtE(), const(0))]),
            [ast.Expr(value=call(self.h("exit"), name(m), const(None)))])]
        out += [assign(hit, const(False)),
                ast.Try(body=body, handlers=handlers, orelse=[], finalbody=final)]
        return located(out, s)

    def lower_try(self, s):
        t = self.t
        if id(s) in t.lowered_fin:
            return self.lower_try_fin(s)
        r = t.rng.get(id(s))
        nfin = bool(s.finalbody)
        if nfin:
            self.stack.append(("nfin",))
        else:
            self.stack.append(("try",))
        out = self.try_native(s, r)
        self.stack.pop()
        if nfin:
            fin = [m for b in s.finalbody for m in self.plain(b)]
            if any(isinstance(n, (ast.Break, ast.Continue)) for n in top_level_jumps(s.finalbody)):
                keep = t.fresh("fst")
                fin = [assign(keep, name(self.st)), assign(self.st, const(0))] + fin + \
                      [assign(self.st, name(keep))]
            out.finalbody = [if_(compare(name(self.st), ast.LtE(), const(0)), fin)] \
                if r else fin
        return located([out], s)

    def try_native(self, s, r, owner=None):
        """try/except/else (a finally is added by the caller), resumable in body,
        handlers and else. ``owner``: the statement the hidden locals belong to."""
        t = self.t
        owner = owner if owner is not None else s
        rb = t.block_range(s.body)
        re_ = t.block_range(s.orelse)
        hranges = [t.block_range(h.body) for h in s.handlers]
        resumable_handlers = any(hranges)
        body_limit = max([x[1] for x in (rb, re_) if x], default=0)
        body = self.block(s.body, body_limit)
        if resumable_handlers:
            lo = min(x[0] for x in hranges if x)
            hi = max(x[1] for x in hranges if x)
            reraise = []
            P = t.P
            # resuming inside a handler: raise its exception again to enter it natively
            chain = None
            for i, hr in reversed(list(enumerate(hranges))):
                if not hr:
                    continue
                hx = t.handler_exc[(id(owner), i)]
                load = [assign(hx, attr(t.self_, t.frame_attr(hx))),
                        assign(P + "tb", attr(hx, "__traceback__")),
                        assign(P + "cx", attr(hx, "__context__")),
                        ast.Raise(exc=name(hx), cause=None)]
                test = compare(name(self.st), ast.LtE(), const(hr[1]))
                chain = [if_(test, load, chain or [])]
            reraise = [if_(ast.BoolOp(op=ast.And(), values=[
                compare(const(lo), ast.LtE(), name(self.st)),
                compare(name(self.st), ast.LtE(), const(hi))]), chain)]
            body = reraise + body
        handlers = []
        if self.in_lfin():
            handlers.append(ast.ExceptHandler(type=name(self.h("Jump")), name=None,
                                              body=[ast.Raise(exc=None, cause=None)]))
        for i, h in enumerate(s.handlers):
            hr = hranges[i]
            typ = h.type if h.type is not None else name(self.h("BaseException"))
            if resumable_handlers:
                resume_type = ast.IfExp(
                    test=ast.BoolOp(op=ast.And(), values=[
                        compare(const(hr[0]), ast.LtE(), name(self.st)),
                        compare(name(self.st), ast.LtE(), const(hr[1]))]),
                    body=name(self.h("BaseException")),
                    orelse=ast.Tuple(elts=[], ctx=ast.Load())) if hr else \
                    ast.Tuple(elts=[], ctx=ast.Load())
                typ = ast.IfExp(test=self.st_is_zero(), body=typ, orelse=resume_type)
            hbody = self.block(h.body, hr[1] if hr else 0)
            if hr:
                hx = t.handler_exc[(id(owner), i)]
                P = t.P
                # entered again by raising it: put back its traceback (a loaded one has
                # none: keep the frame it was raised again in) and its context
                restore = [if_(name(self.st), [
                    if_(compare(name(P + "tb"), ast.IsNot(), const(None)), [
                        assign(attr(hx, "__traceback__", store=True), name(P + "tb"))]),
                    assign(attr(hx, "__context__", store=True), name(P + "cx"))])]
                if h.name:
                    hname = h.name
                    hbody = [assign(hx, name(hname)), self.store(hx)] + restore + hbody
                else:
                    hname = hx
                    hbody = [self.store(hx)] + restore + hbody
            else:
                hname = h.name
            if h.type is None and not resumable_handlers:
                typ = None           # a bare except stays bare
            handler = ast.ExceptHandler(type=typ, name=hname, body=hbody)
            ast.copy_location(handler, h)
            handlers.append(handler)
        orelse = self.block(s.orelse, re_[1] if re_ else 0) if s.orelse else []
        if not handlers and not orelse:
            return ast.Try(body=body, handlers=[], orelse=[], finalbody=[ast.Pass()])
        return ast.Try(body=body, handlers=handlers, orelse=orelse, finalbody=[])

    def lower_try_fin(self, s):
        t = self.t
        pend = t.pending_of[id(s)]
        inner_stmt = ast.Try(body=s.body, handlers=s.handlers, orelse=s.orelse, finalbody=[])
        ast.copy_location(inner_stmt, s)
        r_inner = [x for x in (t.block_range(s.body), t.block_range(s.orelse),
                               *[t.block_range(h.body) for h in s.handlers]) if x]
        hi_inner = max((x[1] for x in r_inner), default=0)
        rf = t.block_range(s.finalbody)
        P = t.P
        kinds = jump_kinds(s)        # before the blocks are lowered
        self.stack.append(("lfin",))
        if s.handlers or s.orelse:
            inner = self.try_native(inner_stmt, None, owner=s)
            inner_body = [inner]
        else:
            inner_body = self.block(s.body, hi_inner)
        self.stack.pop()
        j = P + "j"
        x = P + "x"
        catch = ast.Try(body=inner_body, handlers=[
            ast.ExceptHandler(type=name(self.h("Jump")), name=j,
                              body=[assign(pend, ast.Subscript(value=attr(j, "args"),
                                                               slice=const(0), ctx=ast.Load())),
                                    self.store(pend)]),
            ast.ExceptHandler(type=name(self.h("BaseException")), name=x,
                              body=[assign(pend, name(x)), self.store(pend)])],
            orelse=[assign(pend, const(None)), self.store(pend)], finalbody=[])
        if hi_inner:
            guard = ast.BoolOp(op=ast.Or(), values=[
                self.st_is_zero(), compare(name(self.st), ast.LtE(), const(hi_inner))])
        else:
            guard = self.st_is_zero()
        out = [if_(guard, [catch])]
        self.stack.append(("lfinbody",))
        fin = self.block(s.finalbody, rf[1])
        self.stack.pop()
        # an exception leaving the finally has the pending one as context, as natively
        fx = P + "fx"
        out.append(ast.Try(body=fin, handlers=[ast.ExceptHandler(
            type=name(self.h("BaseException")), name=fx, body=[
                if_(ast.BoolOp(op=ast.And(), values=[
                    compare(name(pend), ast.IsNot(), const(None)),
                    compare(attr(pend, "__class__"), ast.IsNot(), name(self.h("tuple"))),
                    compare(attr(fx, "__context__"), ast.Is(), const(None)),
                    compare(name(fx), ast.IsNot(), name(pend))]),
                    [assign(attr(fx, "__context__", store=True), name(pend))]),
                ast.Raise(exc=None, cause=None)])], orelse=[], finalbody=[]))
        # after the finally: the pending jump or exception goes on
        dispatch = []
        pj = P + "pj"
        if kinds:
            jump_body = [assign(pj, name(pend))]
            branches = []
            if "break" in kinds:
                branches.append((const("break"), self.lower_jump(ast.Break())))
            if "continue" in kinds:
                branches.append((const("continue"), self.lower_jump(ast.Continue())))
            ret = self.lower_return(ast.Subscript(value=name(pj), slice=const(1), ctx=ast.Load()))
            chain = ret
            for value, action in reversed(branches):
                chain = [if_(compare(ast.Subscript(value=name(pj), slice=const(0), ctx=ast.Load()),
                                     ast.Eq(), value), action, chain)]
            jump_body += chain
            dispatch.append(if_(compare(attr(pend, "__class__"), ast.Is(),
                                        name(self.h("tuple"))), jump_body))
        dispatch.append(ast.Raise(exc=name(pend), cause=None))
        out.append(if_(compare(name(pend), ast.IsNot(), const(None)), dispatch))
        return located(out, s)


def top_level_jumps(stmts):
    """break/continue statements of a block that are not inside a loop of it."""
    out = []

    def visit(s):
        if isinstance(s, (ast.Break, ast.Continue)):
            out.append(s)
        elif isinstance(s, (ast.While, ast.For, *SCOPES)):
            for b in getattr(s, "orelse", []):
                visit(b)
        else:
            for _, block, _ in blocks_of(s):
                for b in block:
                    visit(b)
    for s in stmts:
        visit(s)
    return out


def jump_kinds(s):
    """Which jumps (return/break/continue) may leave the body/handlers/else of try s."""
    kinds = set()
    for block in [s.body, s.orelse, *[h.body for h in s.handlers]]:
        for b in block:
            for n in top_level_jumps([b]):
                kinds.add("break" if isinstance(n, ast.Break) else "continue")
            for n in own_nodes(b):
                if isinstance(n, ast.Return):
                    kinds.add("return")
    kinds.add("return")
    return kinds


# -- entry points -----------------------------------------------------------------------

def transform(func, previous_labels=None):
    """(module AST, spec data) for ``func``: the maker, its spec and the registration."""
    return Transform(func, previous_labels).run()


def state_machine_source(func, previous_labels=None):
    """``(python_source, labels_info)``: deterministic, readable source that defines the
    state machine maker of ``func`` and registers it with ``register_precompiled``
    (the module holding it imports that name from ``autosave.coroutines``), and the
    function's labels (JSON-able, for the manifest). ``func`` may be the decorated
    function or the plain generator function."""
    func = getattr(func, "__wrapped__", func)
    module, spec = transform(func, previous_labels)
    source = ast.unparse(module)
    return source + "\n", spec["labels"]


def module_source(funcs, previous=None):
    """A whole generated module for ``funcs``: what ``autosave-codegen`` writes.
    ``previous``: {qualified name: labels} of the last build's manifest."""
    previous = previous or {}
    parts = ['"""State machines of @autosave.coroutine functions, generated by autosave.',
             'Do not edit: regenerate with autosave-codegen."""',
             "",
             "from autosave.coroutines import register_precompiled",
             ""]
    for func in funcs:
        func = getattr(func, "__wrapped__", func)
        qualified = f"{func.__module__}.{func.__qualname__}"
        source, _ = state_machine_source(func, previous.get(qualified))
        parts += ["", f"# {qualified} ({func.__code__.co_filename}:{func.__code__.co_firstlineno})",
                  source]
    return "\n".join(parts)
