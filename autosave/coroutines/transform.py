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

Locals are the step function's fast locals while it runs; at a yield every local of
the function (and the hidden ones live after it) is stored in the frame, and loaded
back when the step resumes there: a save parked at a yield holds every local bound
there, so a patch may add code after the yield that reads any of them. Locals that may be unbound there are stored as ``UNBOUND`` and deleted
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
from .analysis import Flow
from .desugar import Desugar
from .lower import Lower
from .names import Mangler, NameRewriter
from .pins import Pins, reserved_of
from .runtime import HELPERS
from .syntax import (CO_GENERATOR, COMPREHENSIONS, SCOPES, YIELDS, Point, blocks_of, const,
                     fix_locations, has_yield, header_exprs, is_resume, name, own_nodes,
                     spec_literal, stmt_text)

SPEC_VERSION = 2        # 2: every local is saved at every yield, not only live ones
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
        for value in code.co_consts:
            if isinstance(value, types.CodeType):
                visit(value)
            else:
                h.update(_const_text(value).encode("utf-8", "surrogatepass") + b"\x1f")

    visit(func.__code__)
    h.update(repr(func.__qualname__).encode())
    return h.hexdigest()


def _const_text(const):
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_const_text(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_const_text(c) for c in const) + ")"
    return f"{type(const).__name__}:{const!r}"


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
        self.pinned = Pins(self.func, fn, self.error).strip()
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
        self.flow = Flow(self)
        self.flow.liveness()
        self.flow.definite()
        self.flow.classify()
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
        self.prefix = prefix     # of every name the generated code adds
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
        return f"{self.prefix}{base}{self.counter}"

    def helper(self, key):
        return f"{self.prefix}h_{key}"

    def new_hidden(self, saved):
        self.counter += 1
        fast = f"{self.prefix}{self.counter}"
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
                        ctx, text if i == 0 else f"{text} |{i + 1}", y.lineno - self.first,
                        self.pinned.get(id(y)))))
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
        labels = labels_mod.assign(infos, self.previous, reserved_of(self.func))
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
        self.cell_of = {n: f"{self.prefix}c_{n}" for n in sorted(self.captured)}
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
        for saved, attr_ in sorted(self.hidden.values(), key=lambda pair: pair[1]):
            frame.append([saved, attr_])
        points = []
        for p in self.points[1:]:
            live = []
            for v in p.live:
                live.append([self.saved_name(v), self.frame_attr(v), v in p.guarded,
                             v in p.needed])
            for c in sorted(self.captured):
                live.append([c, "v_" + c, False, True])
            live.sort()
            points.append({"label": p.label, "live": live, "finalize": p.finalize,
                           "delegate": self.frame_attr(p.delegate) if p.delegate else None})
        data = {
            "version": SPEC_VERSION,
            "python": _VERSION,
            "module": self.module,
            "qualname": self.qualname,
            "name": self.func.__name__,
            "maker": maker_name,
            "prefix": self.prefix,
            "params": list(self.params),
            "frame": frame,
            "cells": sorted(self.captured),
            "points": points,
            "labels": self.label_manifest,
        }
        if reserved_of(self.func):
            data["reserved"] = list(reserved_of(self.func))
        return data


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
