"""Lowering: the step function that resumes at any yield, around Python's own control
flow (state guards, loops re-entered by their iterator, try/with/finally kept in the
frame)."""

import ast
import enum
import sys

from .syntax import (SCOPES, assign, attr, blocks_of, call, compare, const, if_, is_resume,
                     located, name, not_, own_nodes)


# -- lowering: the step function --------------------------------------------------------

class Block(enum.Enum):
    """What encloses the statement being lowered (``Lower.stack``)."""
    LOOP = "a while or for loop"
    LOWERED_FINALLY = "the body of a try whose finally holds yields (jumps become Jump)"
    IN_LOWERED_FINALLY = "a finally block that holds yields"
    NATIVE_FINALLY = "a try with a native finally"
    NATIVE_TRY = "a try without finally"
    LOWERED_WITH = "a with block lowered to explicit __enter__/__exit__"
    NATIVE_WITH = "a native with block"


# A resume point inside these is flagged (it suspends inside native cleanup); inside
# any of these, a coroutine collected while suspended there is closed (its cleanup runs).
SUSPENDS = frozenset({Block.NATIVE_FINALLY, Block.LOWERED_WITH})
FINALIZES = frozenset({Block.NATIVE_FINALLY, Block.LOWERED_WITH, Block.NATIVE_TRY,
                       Block.LOWERED_FINALLY, Block.IN_LOWERED_FINALLY})


class Lower:
    def __init__(self, transform):
        self.transform = transform     # the function being made resumable (transform.py)
        self.stack: list[Block] = []   # the blocks around the statement being lowered

    # names
    @property
    def st(self):
        return self.transform.st

    def st_is_zero(self):
        return not_(name(self.st))

    def helper(self, key):
        return self.transform.helper(key)

    def step_function(self):
        transform = self.transform
        prefix = transform.prefix
        body = self.block(transform.body, transform.n)
        load_params = []
        for p in transform.params:
            if p in transform.captured:
                load_params.append(assign(transform.cell_of[p], attr(transform.self_, "v_" + p)))
            else:
                load_params.append(assign(p, attr(transform.self_, "v_" + p)))
        for c in sorted(transform.captured - set(transform.params)):
            load_params.append(assign(transform.cell_of[c], attr(transform.self_, "v_" + c)))
        self_name, state = transform.self_, self.st
        prologue = [
            assign(state, attr(self_name, "_state")),
            if_(compare(name(state), ast.LtE(), const(0)), [
                if_(name(state), [ast.Return(value=ast.Call(
                    func=attr(self_name, "_inactive"), args=[name(transform.val), name(transform.exc)], keywords=[]))]),
                if_(compare(name(transform.val), ast.IsNot(), const(None)), [
                    ast.Raise(exc=call(self.helper("TypeError"), const(
                        "can't send non-None value to a just-started generator")), cause=None)]),
                if_(compare(name(transform.exc), ast.IsNot(), const(None)), [
                    ast.Raise(exc=ast.Call(func=attr(self_name, "_unstarted_error"),
                                           args=[name(transform.exc)], keywords=[]), cause=None)]),
                *load_params,
            ]),
            assign(attr(self_name, "_state", store=True), const(-1)),
        ]
        finish = [assign(attr(self_name, "_state", store=True), const(-2)),
                  ast.Expr(value=call(attr(attr(self_name, "__dict__"), "clear")))]
        handler = ast.ExceptHandler(
            type=name(self.helper("BaseException")), name=prefix + "e",
            body=[assign(state, const(0)), *finish,
                  ast.Delete(targets=[ast.Name(id=self_name, ctx=ast.Del())]),
                  if_(call(self.helper("isinstance"), name(prefix + "e"), name(self.helper("StopIteration"))), [
                      ast.Raise(exc=call(self.helper("RuntimeError"),
                                         const("generator raised StopIteration")),
                                cause=name(prefix + "e"))]),
                  ast.Raise(exc=None, cause=None)])
        final = [if_(compare(name(state), ast.Lt(), const(0)), [
            *finish,
            ast.Delete(targets=[ast.Name(id=self_name, ctx=ast.Del())]),
            if_(compare(name(transform.ret), ast.Is(), const(None)),
                [ast.Raise(exc=name(self.helper("StopIteration")), cause=None)]),
            ast.Raise(exc=call(self.helper("StopIteration"), name(transform.ret)), cause=None)])]
        main = ast.Try(body=body + [assign(transform.ret, const(None)), assign(state, const(-1))],
                       handlers=[handler], orelse=[], finalbody=final)
        args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=self_name), ast.arg(arg=transform.val),
                                                    ast.arg(arg=transform.exc)],
                             vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                             defaults=[const(None), const(None)])
        fn = ast.FunctionDef(name=prefix + "step", args=args, body=prologue + [main],
                             decorator_list=[], returns=None, type_comment=None,
                             **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        for n in prologue + [main]:
            located([n], transform.fn)
        ast.copy_location(fn, transform.fn)
        return fn

    def factory_function(self):
        transform = self.transform
        prefix = transform.prefix
        a = transform.fn.args
        strip = lambda args: [ast.arg(arg=x.arg, annotation=None) for x in args]  # noqa: E731
        args = ast.arguments(
            posonlyargs=strip(a.posonlyargs), args=strip(a.args),
            vararg=ast.arg(arg=a.vararg.arg) if a.vararg else None,
            kwonlyargs=strip(a.kwonlyargs),
            kw_defaults=[None if d is None else const(None) for d in a.kw_defaults],
            kwarg=ast.arg(arg=a.kwarg.arg) if a.kwarg else None,
            defaults=[const(None) for _ in a.defaults])
        o = prefix + "o"
        body = [assign(o, call(self.helper("new"), name(self.helper("cls")))),
                assign(attr(o, "__qualname__", store=True), const(transform.qualname)),
                assign(attr(o, "_state", store=True), const(0))]
        params = set(transform.params)
        spec_frame = transform.spec_data("")["frame"]
        for saved, attr_ in spec_frame:
            if saved in params:
                value = name(saved)
                if saved in transform.captured:
                    value = call(self.helper("cell"), value)
            elif saved in transform.captured:
                value = call(self.helper("cell"))
            else:
                value = name(self.helper("UNBOUND"))
            body.append(assign(attr(o, attr_, store=True), value))
        body.append(ast.Return(value=name(o)))
        fn = ast.FunctionDef(name=prefix + "factory", args=args, body=body, decorator_list=[],
                             returns=None, type_comment=None,
                             **({"type_params": []} if sys.version_info >= (3, 12) else {}))
        ast.copy_location(fn, transform.fn)
        located(body, transform.fn)
        return fn

    # -- blocks ------------------------------------------------------------------------

    def block(self, stmts, limit):
        """Lower a block. ``limit``: the highest state ``st`` may hold on entering it."""
        transform = self.transform
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
            r = transform.rng.get(id(s))
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
        if isinstance(s, ast.With) and id(s) in self.transform.flow.lowered_with:
            return self.lower_with(s)
        if isinstance(s, ast.Try) and s.finalbody:
            return self.lower_try(s)
        if isinstance(s, (ast.While, ast.For)):
            self.stack.append(Block.LOOP)
            s.body = [m for b in s.body for m in self.plain(b)]
            self.stack.pop()
            s.orelse = [m for b in s.orelse for m in self.plain(b)]
            return [s]
        if isinstance(s, ast.Try):
            return self.lower_try(s)
        if isinstance(s, ast.With):
            self.stack.append(Block.NATIVE_WITH)
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
        return Block.LOWERED_FINALLY in self.stack

    def lower_return(self, value):
        transform = self.transform
        if self.in_lfin():
            payload = ast.Tuple(elts=[const("return"), value or const(None)], ctx=ast.Load())
            return [ast.Raise(exc=call(self.helper("Jump"), payload), cause=None)]
        return [assign(transform.ret, value if value is not None else const(None)),
                assign(self.st, const(-1)), ast.Return(value=None)]

    def lower_jump(self, s):
        kind = "break" if isinstance(s, ast.Break) else "continue"
        for block in reversed(self.stack):
            if block is Block.LOOP:
                return [s]
            if block is Block.LOWERED_FINALLY:
                payload = ast.Tuple(elts=[const(kind)], ctx=ast.Load())
                return [ast.Raise(exc=call(self.helper("Jump"), payload), cause=None)]
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
        raise self.transform.error(s, f"internal error: cannot lower {type(s).__name__}")

    def store(self, fast):
        """Write a hidden local through to the frame where it is assigned: it is only
        read afterwards (its object changes, not the binding), so yields need not."""
        transform = self.transform
        return assign(attr(transform.self_, transform.frame_attr(fast), store=True), name(fast))

    def spill(self, p):
        transform = self.transform
        out = []
        for v in sorted(p.live - transform.flow.write_through - transform.flow.constant_params):
            target = attr(transform.self_, transform.frame_attr(v), store=True)
            if v in p.guarded:
                out.append(ast.Try(body=[assign(target, name(v))], handlers=[
                    ast.ExceptHandler(type=name(self.helper("NameError")), name=None, body=[
                        assign(attr(transform.self_, transform.frame_attr(v), store=True),
                               name(self.helper("UNBOUND")))])], orelse=[], finalbody=[]))
            else:
                out.append(assign(target, name(v)))
        return out

    def load(self, p):
        transform = self.transform
        out = []
        for v in sorted(p.live):
            out.append(assign(v, attr(transform.self_, transform.frame_attr(v))))
            if v in p.guarded:
                out.append(if_(compare(name(v), ast.Is(), name(self.helper("UNBOUND"))),
                               [ast.Delete(targets=[ast.Name(id=v, ctx=ast.Del())])]))
        for c in sorted(transform.captured):
            out.append(assign(transform.cell_of[c], attr(transform.self_, "v_" + c)))
        return out

    def suspend(self, p, value):
        transform = self.transform
        out = self.spill(p)
        out.append(assign(attr(transform.self_, "_state", store=True), const(p.index)))
        if p.suspend:
            out.append(assign(self.st, const(1)))
        # a traceback that outlives this step keeps its frame's locals: not the coroutine
        out.append(ast.Delete(targets=[ast.Name(id=transform.self_, ctx=ast.Del())]))
        out.append(ast.Return(value=value))
        return out

    def mark(self, p):
        p.suspend = any(block in SUSPENDS for block in self.stack)
        p.finalize = any(block in FINALIZES for block in self.stack)

    def resume(self, s):
        transform = self.transform
        p = transform.points[transform.rng[id(s)][0]]
        self.mark(p)
        node = s.value
        targets = s.targets if isinstance(s, ast.Assign) else None
        if isinstance(node, ast.Yield):
            first = [assign(transform.yv, node.value if node.value is not None else const(None))]
            out = [if_(self.st_is_zero(), first + self.suspend(p, name(transform.yv)))]
            out.append(assign(self.st, const(0)))
            out += self.load(p)
            out.append(if_(compare(name(transform.exc), ast.IsNot(), const(None)),
                           [ast.Raise(exc=name(transform.exc), cause=None)]))
            if targets:
                out.append(ast.Assign(targets=targets, value=name(transform.val)))
            return out
        d = p.delegate
        start = [assign(d, call(self.helper("iter"), node.value)), self.store(d),
                 assign(transform.yv, call(self.helper("yf_step"), name(d), const(None), const(None)))]
        again = [assign(self.st, const(0))] + self.load(p) + [
            assign(transform.yv, call(self.helper("yf_step"), name(d), name(transform.val), name(transform.exc)))]
        done = [ast.Assign(targets=targets, value=attr(transform.yv, "value"))] if targets else [ast.Pass()]
        return [if_(self.st_is_zero(), start, again),
                if_(compare(attr(transform.yv, "__class__"), ast.Is(), name(self.helper("YFResult"))),
                    done, self.suspend(p, name(transform.yv)))]

    def lower_if(self, s):
        transform = self.transform
        rb, ro = transform.flow.block_range(s.body), transform.flow.block_range(s.orelse)
        if rb and ro:
            resume_test = compare(name(self.st), ast.LtE(), const(rb[1]))
        else:
            resume_test = const(bool(rb))
        test = ast.IfExp(test=self.st_is_zero(), body=s.test, orelse=resume_test)
        body = self.block(s.body, rb[1] if rb else 0)
        orelse = self.block(s.orelse, ro[1] if ro else 0) if s.orelse else []
        return [ast.If(test=test, body=body, orelse=orelse)]

    def lower_while(self, s):
        transform = self.transform
        rb, ro = transform.flow.block_range(s.body), transform.flow.block_range(s.orelse)
        if ro:
            resume_test = compare(name(self.st), ast.LtE(), const(rb[1])) if rb else const(False)
        else:
            resume_test = const(True)
        if isinstance(s.test, ast.Constant) and s.test.value is True and not ro:
            test = const(True)
        else:
            test = ast.IfExp(test=self.st_is_zero(), body=s.test, orelse=resume_test)
        self.stack.append(Block.LOOP)
        body = self.block(s.body, rb[1] if rb else 0)
        self.stack.pop()
        orelse = self.block(s.orelse, ro[1] if ro else 0) if s.orelse else []
        return [ast.While(test=test, body=body, orelse=orelse)]

    def lower_for(self, s):
        transform = self.transform
        it = transform.flow.iter_of[id(s)]
        rb, ro = transform.flow.block_range(s.body), transform.flow.block_range(s.orelse)
        out = [if_(self.st_is_zero(), [assign(it, call(self.helper("iter"), s.iter)), self.store(it)])]
        self.stack.append(Block.LOOP)
        body = self.block(s.body, rb[1] if rb else 0)
        self.stack.pop()
        fetch = ast.For(target=s.target, iter=name(it), body=[ast.Break()], orelse=[],
                        type_comment=None)
        if not s.orelse:
            fetch.orelse = [ast.Break()]
            out.append(ast.While(test=const(True),
                                 body=[if_(self.st_is_zero(), [fetch])] + body, orelse=[]))
            return out
        flag = transform.fresh("exhausted")
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
        transform = self.transform
        item = s.items[0]
        m = transform.flow.mgr_of[id(s)]
        r = transform.rng.get(id(s))
        prefix = transform.prefix
        hit = transform.fresh("hit")
        enter = call(self.helper("enter"), name(m))
        setup = [assign(m, item.context_expr), self.store(m)]
        if item.optional_vars is not None:
            setup.append(ast.Assign(targets=[item.optional_vars], value=enter))
        else:
            setup.append(ast.Expr(value=enter))
        out = [if_(self.st_is_zero(), setup)] if r else setup
        self.stack.append(Block.LOWERED_WITH)
        body = self.block(s.body, r[1] if r else 0)
        self.stack.pop()
        e = prefix + "we"
        handlers = []
        if self.in_lfin():
            handlers.append(ast.ExceptHandler(type=name(self.helper("Jump")), name=None, body=[
                assign(hit, const(True)),
                ast.Expr(value=call(self.helper("exit"), name(m), const(None))),
                ast.Raise(exc=None, cause=None)]))
        handlers.append(ast.ExceptHandler(type=name(self.helper("BaseException")), name=e, body=[
            assign(hit, const(True)),
            if_(not_(call(self.helper("exit"), name(m), name(e))), [ast.Raise(exc=None, cause=None)])]))
        final = [if_(ast.BoolOp(op=ast.And(), values=[
            not_(name(hit)), compare(name(self.st), ast.LtE(), const(0))]),
            [ast.Expr(value=call(self.helper("exit"), name(m), const(None)))])]
        out += [assign(hit, const(False)),
                ast.Try(body=body, handlers=handlers, orelse=[], finalbody=final)]
        return located(out, s)

    def lower_try(self, s):
        transform = self.transform
        if id(s) in transform.flow.lowered_fin:
            return self.lower_try_fin(s)
        r = transform.rng.get(id(s))
        nfin = bool(s.finalbody)
        if nfin:
            self.stack.append(Block.NATIVE_FINALLY)
        else:
            self.stack.append(Block.NATIVE_TRY)
        out = self.try_native(s, r)
        self.stack.pop()
        if nfin:
            fin = [m for b in s.finalbody for m in self.plain(b)]
            if any(isinstance(n, (ast.Break, ast.Continue)) for n in top_level_jumps(s.finalbody)):
                keep = transform.fresh("fst")
                fin = [assign(keep, name(self.st)), assign(self.st, const(0))] + fin + \
                      [assign(self.st, name(keep))]
            out.finalbody = [if_(compare(name(self.st), ast.LtE(), const(0)), fin)] \
                if r else fin
        return located([out], s)

    def try_native(self, s, r, owner=None):
        """try/except/else (a finally is added by the caller), resumable in body,
        handlers and else. ``owner``: the statement the hidden locals belong to."""
        transform = self.transform
        owner = owner if owner is not None else s
        rb = transform.flow.block_range(s.body)
        re_ = transform.flow.block_range(s.orelse)
        hranges = [transform.flow.block_range(h.body) for h in s.handlers]
        resumable_handlers = any(hranges)
        body_limit = max([x[1] for x in (rb, re_) if x], default=0)
        body = self.block(s.body, body_limit)
        if resumable_handlers:
            lo = min(x[0] for x in hranges if x)
            hi = max(x[1] for x in hranges if x)
            reraise = []
            prefix = transform.prefix
            # resuming inside a handler: raise its exception again to enter it natively
            chain = None
            for i, hr in reversed(list(enumerate(hranges))):
                if not hr:
                    continue
                hx = transform.flow.handler_exc[(id(owner), i)]
                load = [assign(hx, attr(transform.self_, transform.frame_attr(hx))),
                        assign(prefix + "tb", attr(hx, "__traceback__")),
                        assign(prefix + "cx", attr(hx, "__context__")),
                        ast.Raise(exc=name(hx), cause=None)]
                test = compare(name(self.st), ast.LtE(), const(hr[1]))
                chain = [if_(test, load, chain or [])]
            reraise = [if_(ast.BoolOp(op=ast.And(), values=[
                compare(const(lo), ast.LtE(), name(self.st)),
                compare(name(self.st), ast.LtE(), const(hi))]), chain)]
            body = reraise + body
        handlers = []
        if self.in_lfin():
            handlers.append(ast.ExceptHandler(type=name(self.helper("Jump")), name=None,
                                              body=[ast.Raise(exc=None, cause=None)]))
        for i, h in enumerate(s.handlers):
            hr = hranges[i]
            typ = h.type if h.type is not None else name(self.helper("BaseException"))
            if resumable_handlers:
                resume_type = ast.IfExp(
                    test=ast.BoolOp(op=ast.And(), values=[
                        compare(const(hr[0]), ast.LtE(), name(self.st)),
                        compare(name(self.st), ast.LtE(), const(hr[1]))]),
                    body=name(self.helper("BaseException")),
                    orelse=ast.Tuple(elts=[], ctx=ast.Load())) if hr else \
                    ast.Tuple(elts=[], ctx=ast.Load())
                typ = ast.IfExp(test=self.st_is_zero(), body=typ, orelse=resume_type)
            hbody = self.block(h.body, hr[1] if hr else 0)
            if hr:
                hx = transform.flow.handler_exc[(id(owner), i)]
                prefix = transform.prefix
                # entered again by raising it: put back its traceback (a loaded one has
                # none: keep the frame it was raised again in) and its context
                restore = [if_(name(self.st), [
                    if_(compare(name(prefix + "tb"), ast.IsNot(), const(None)), [
                        assign(attr(hx, "__traceback__", store=True), name(prefix + "tb"))]),
                    assign(attr(hx, "__context__", store=True), name(prefix + "cx"))])]
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
        transform = self.transform
        pend = transform.flow.pending_of[id(s)]
        inner_stmt = ast.Try(body=s.body, handlers=s.handlers, orelse=s.orelse, finalbody=[])
        ast.copy_location(inner_stmt, s)
        r_inner = [x for x in (transform.flow.block_range(s.body), transform.flow.block_range(s.orelse),
                               *[transform.flow.block_range(h.body) for h in s.handlers]) if x]
        hi_inner = max((x[1] for x in r_inner), default=0)
        rf = transform.flow.block_range(s.finalbody)
        prefix = transform.prefix
        kinds = jump_kinds(s)        # before the blocks are lowered
        self.stack.append(Block.LOWERED_FINALLY)
        if s.handlers or s.orelse:
            inner = self.try_native(inner_stmt, None, owner=s)
            inner_body = [inner]
        else:
            inner_body = self.block(s.body, hi_inner)
        self.stack.pop()
        j = prefix + "j"
        x = prefix + "x"
        catch = ast.Try(body=inner_body, handlers=[
            ast.ExceptHandler(type=name(self.helper("Jump")), name=j,
                              body=[assign(pend, ast.Subscript(value=attr(j, "args"),
                                                               slice=const(0), ctx=ast.Load())),
                                    self.store(pend)]),
            ast.ExceptHandler(type=name(self.helper("BaseException")), name=x,
                              body=[assign(pend, name(x)), self.store(pend)])],
            orelse=[assign(pend, const(None)), self.store(pend)], finalbody=[])
        if hi_inner:
            guard = ast.BoolOp(op=ast.Or(), values=[
                self.st_is_zero(), compare(name(self.st), ast.LtE(), const(hi_inner))])
        else:
            guard = self.st_is_zero()
        out = [if_(guard, [catch])]
        self.stack.append(Block.IN_LOWERED_FINALLY)
        fin = self.block(s.finalbody, rf[1])
        self.stack.pop()
        # an exception leaving the finally has the pending one as context, as natively
        fx = prefix + "fx"
        out.append(ast.Try(body=fin, handlers=[ast.ExceptHandler(
            type=name(self.helper("BaseException")), name=fx, body=[
                if_(ast.BoolOp(op=ast.And(), values=[
                    compare(name(pend), ast.IsNot(), const(None)),
                    compare(attr(pend, "__class__"), ast.IsNot(), name(self.helper("tuple"))),
                    compare(attr(fx, "__context__"), ast.Is(), const(None)),
                    compare(name(fx), ast.IsNot(), name(pend))]),
                    [assign(attr(fx, "__context__", store=True), name(pend))]),
                ast.Raise(exc=None, cause=None)])], orelse=[], finalbody=[]))
        # after the finally: the pending jump or exception goes on
        dispatch = []
        pj = prefix + "pj"
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
                                        name(self.helper("tuple"))), jump_body))
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
