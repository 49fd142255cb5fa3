"""Dataflow over a coroutine's body: which locals are live and which definitely bound
at each resume point. A yield stores every local of the function (the ones not
definitely bound there only when bound) and the hidden ones live after it."""

import ast

from .syntax import Ctx, ends_flow, is_resume, own_nodes, target_names


class Liveness:
    """Liveness and definite assignment, mixed into ``transform.Transform``."""

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
            for h in s.handlers:
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
