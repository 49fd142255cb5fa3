"""Dataflow over a coroutine's body: which locals are live and which definitely bound
at each resume point. A yield stores every local of the function (the ones not
definitely bound there only when bound) and the hidden ones live after it."""

import ast
from collections.abc import Callable
from typing import Any

from .syntax import Ctx, ends_flow, is_resume, own_nodes, target_names


class Flow:
    """Liveness and definite assignment over one coroutine's desugared, numbered body.

    A component of ``transform.Transform`` (its ``flow``): made once the body is
    numbered, from what the analysis reads of the function (its body, resume points and
    their statement ranges, parameters, locals, captured names, hidden locals); it finds
    the hidden locals lowered constructs need (``iter_of``, ``mgr_of``, ``handler_exc``,
    ``pending_of``), the constructs lowered (``lowered_fin``, ``lowered_with``), and
    each resume point's live and definitely bound sets, which the lowering
    (``lower.py``) and the frame layout read."""

    def __init__(self, function):
        self.body, self.points, self.rng = function.body, function.points, function.rng
        self.params, self.locals, self.captured = function.params, function.locals, \
            function.captured
        self.hidden = function.hidden            # new_hidden adds to it
        self.new_hidden = function.new_hidden
        self.stmt_keys, self.never_definite = function.stmt_keys, function.never_definite

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
        """The live set of every resume point, after the hidden locals that lowered
        constructs need (iterators, managers, caught exceptions, pending jumps) exist."""
        self.track = self.tracked()
        self.find_lowered_finally()
        self.add_hidden_locals()
        self.force_hidden_locals()
        self.constant_params = set(self.params) - self.assigned_names()
        self.track = self.tracked()
        for _ in range(50):
            before = [set(p.live) for p in self.points[1:]]
            self.live_block(self.body, frozenset(), Ctx())
            if before == [p.live for p in self.points[1:]]:
                break

    def all_nodes(self):
        return ast.walk(ast.Module(body=self.body, type_ignores=[]))

    def find_lowered_finally(self):
        """Try statements whose finally holds yields, and the with blocks a jump out of
        their bodies crosses (they are lowered too)."""
        self.lowered_fin = set()     # ids of Try statements whose finally holds yields
        for s in self.all_nodes():
            if isinstance(s, ast.Try) and self.block_range(s.finalbody):
                self.lowered_fin.add(id(s))
        self.jump_crossing_with = set()
        for s in self.all_nodes():
            if id(s) in self.lowered_fin:
                for block in [s.body, s.orelse, *[h.body for h in s.handlers]]:
                    for b in block:
                        for n in own_nodes(b):
                            if isinstance(n, ast.With):
                                self.jump_crossing_with.add(id(n))

    def add_hidden_locals(self):
        """A hidden local per lowered construct that must survive a suspension."""
        self.pending_of = {}
        self.handler_exc = {}
        self.iter_of = {}
        self.mgr_of = {}
        self.lowered_with = set()
        for s in self.all_nodes():
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
        for p in self.points[1:]:
            if isinstance(p.node, ast.YieldFrom):
                p.delegate = self.new_hidden(f"from@{p.label}")
        self.write_through = (set(self.iter_of.values()) | set(self.mgr_of.values())
                              | set(self.handler_exc.values()) | set(self.pending_of.values())
                              | {p.delegate for p in self.points[1:] if p.delegate})

    def force_hidden_locals(self):
        """A finally's pending jump and a handler's exception are live at every
        resume point inside that finally or handler."""
        for s in self.all_nodes():
            if not isinstance(s, ast.Try):
                continue
            pending = self.pending_of.get(id(s))
            if pending:
                for p in self.points_in(s.finalbody):
                    p.forced.add(pending)
            for i, h in enumerate(s.handlers):
                caught = self.handler_exc.get((id(s), i))
                if caught:
                    for p in self.points_in(h.body):
                        p.forced.add(caught)

    def assigned_names(self):
        """Every name the body binds (parameters it never rebinds are constant)."""
        assigned = set()
        for n in self.all_nodes():
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
        return assigned

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
        """What is live before ``s``, given ``out`` live after it."""
        if is_resume(s):
            return self.live_resume(s, out, ctx)
        transfer = self.LIVE.get(type(s))
        if transfer is not None:
            return transfer(self, s, out, ctx)
        return self.uses(s) | (set(out) - self.kills(s)) | ctx.exc

    # One transfer function per compound or jumping statement, each followed by its
    # table entry; a simple statement uses what it reads and kills what it binds.
    LIVE: dict[type, Callable[..., Any]] = {}

    def live_resume(self, s, out, ctx):
        p = self.points[self.rng[id(s)][0]]
        targets = s.targets if isinstance(s, ast.Assign) else []
        kills = set()
        uses = set()
        for target in targets:
            kills.update(target_names(target))
            if not isinstance(target, ast.Name):
                uses |= self.uses(target)
        after = uses | (set(out) - (kills & self.track)) | ctx.exc | p.forced
        if p.delegate:
            after.add(p.delegate)
        p.live |= after
        sent = s.value.value
        before = set(p.live) - ({p.delegate} if p.delegate else set())
        return (self.uses(sent) if sent is not None else set()) | before

    def live_if(self, s, out, ctx):
        return (self.uses(s.test) | self.live_block(s.body, out, ctx)
                | self.live_block(s.orelse, out, ctx) | ctx.exc)
    LIVE[ast.If] = live_if

    def live_while(self, s, out, ctx):
        head = set()
        for _ in range(50):
            inner = Ctx(ctx.exc, ctx.ret, frozenset(out), frozenset(head))
            new = (self.uses(s.test) | ctx.exc | self.live_block(s.body, head, inner)
                   | self.live_block(s.orelse, out, ctx))
            if new == head:
                break
            head = new
        return head
    LIVE[ast.While] = live_while

    def live_for(self, s, out, ctx):
        iterator = self.iter_of.get(id(s))
        kills = set(target_names(s.target)) & self.track
        head = set()
        for _ in range(50):
            inner = Ctx(ctx.exc, ctx.ret, frozenset(out), frozenset(head))
            body_in = self.live_block(s.body, head, inner)
            new = ((body_in - kills) | self.uses(s.target) | ctx.exc
                   | self.live_block(s.orelse, out, ctx) | set(out))
            if iterator:
                new.add(iterator)
            if new == head:
                break
            head = new
        return self.uses(s.iter) | ctx.exc | (head - ({iterator} if iterator else set()))
    LIVE[ast.For] = live_for

    def live_with(self, s, out, ctx):
        manager = self.mgr_of.get(id(s))
        extra = frozenset({manager}) if manager else frozenset()
        inner = ctx.plus(extra)
        # __exit__ may suppress an exception: then what follows the with runs
        inner = Ctx(inner.exc | frozenset(out), inner.ret, inner.brk, inner.cont)
        body_in = self.live_block(s.body, set(out) | extra, inner)
        kills = set()
        uses = set()
        for item in s.items:
            uses |= self.uses(item.context_expr)
            if item.optional_vars is not None:
                kills.update(target_names(item.optional_vars))
                if not isinstance(item.optional_vars, ast.Name):
                    uses |= self.uses(item.optional_vars)
        return uses | ctx.exc | (body_in - (kills & self.track) - extra)
    LIVE[ast.With] = live_with

    def live_try(self, s, out, ctx):
        anywhere = frozenset(out) | ctx.exc | ctx.ret | ctx.brk | ctx.cont
        pending = self.pending_of.get(id(s))
        if s.finalbody:
            fin_in = self.live_block(s.finalbody, anywhere, ctx)
            if pending:
                fin_in = set(fin_in) - {pending}     # set by the catch just before
            after = frozenset(fin_in)
            inner = Ctx(ctx.exc | after, ctx.ret | after, ctx.brk | after, ctx.cont | after)
        else:
            after = frozenset(out)
            inner = ctx
        handlers_in = set()
        for h in s.handlers:
            handler_in = self.live_block(h.body, after, inner)
            if h.name:
                handler_in.discard(h.name)
            if h.type is not None:
                handler_in |= self.uses(h.type)
            handlers_in |= handler_in
        else_in = self.live_block(s.orelse, after, inner)
        body_ctx = Ctx(inner.exc | handlers_in, inner.ret, inner.brk, inner.cont)
        return self.live_block(s.body, else_in, body_ctx) | handlers_in
    LIVE[ast.Try] = live_try

    def live_return(self, s, out, ctx):
        return (self.uses(s.value) if s.value else set()) | ctx.ret | ctx.exc
    LIVE[ast.Return] = live_return

    def live_raise(self, s, out, ctx):
        return self.uses(s) | ctx.exc
    LIVE[ast.Raise] = live_raise

    def live_break(self, s, out, ctx):
        return set(ctx.brk)
    LIVE[ast.Break] = live_break

    def live_continue(self, s, out, ctx):
        return set(ctx.cont)
    LIVE[ast.Continue] = live_continue

    def live_anywhere(self, s, out, ctx):
        # match and except*: not lowered; everything that may follow stays live
        return self.uses(s) | set(out) | ctx.exc | ctx.ret | ctx.brk | ctx.cont
    LIVE[ast.Match] = LIVE[ast.TryStar] = live_anywhere

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
                # a manager may suppress an exception half-way through the body: what
                # the body binds is not definitely bound after it
                inner = d | (extra - never)
                block(s.body, inner)
                return inner
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
        """Each resume point saves every local that may be bound there, not only the
        live ones: code a patch adds after the yield may read any of them (a parameter,
        an earlier result), and a save parked there must hold it. Hidden locals stay
        as liveness says: only the transform reads them. The ones not definitely bound
        are guarded: saved when bound, left out when not. Names bound by ``class`` and
        ``import`` statements are saved only where live."""
        # names bound by class and import statements hold a class or module: saved only
        # where live (a class made inside a function cannot be saved at all)
        code = set()
        for n in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(n, ast.ClassDef):
                code.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                code.update(a.asname or a.name.split(".")[0] for a in n.names)
        user = (self.locals - self.captured - code) & self.track
        for p in self.points[1:]:
            definite = p.guarded
            p.needed = {v for v in p.live if v in self.track}
            p.live = p.needed | user
            p.guarded = {v for v in p.live if v not in definite}
