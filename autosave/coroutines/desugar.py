"""Desugaring: every yield becomes a statement of its own, with the operands evaluated
before it kept in hidden temporaries so evaluation order is unchanged."""

import ast
from collections.abc import Callable
from typing import Any

from .syntax import (COMPREHENSIONS, SCOPES, YIELDS, assign, attr, call, compare, const,
                     has_yield, if_, is_resume, located, name, not_)


# -- desugaring: every yield becomes a statement -----------------------------------------

class Desugar:
    def __init__(self, transform):
        self.transform = transform

    def block(self, stmts):
        return [m for s in stmts for m in self.stmt(s)]

    def key(self, s):
        return self.transform.orig_keys.get(id(s), "x")

    def split_with(self, s, key):
        """``with a, b: body`` is ``with a: with b: body``."""
        inner_body = s.body
        for i in range(len(s.items) - 1, 0, -1):
            inner = ast.With(items=[s.items[i]], body=inner_body, type_comment=None)
            ast.copy_location(inner, s)
            self.transform.orig_keys[id(inner)] = f"{key}/{i}"
            inner_body = [inner]
        first = ast.With(items=[s.items[0]], body=inner_body, type_comment=None)
        ast.copy_location(first, s)
        self.transform.orig_keys[id(first)] = key
        return self.stmt(first)

    def temp_factory(self, key):
        count = [0]

        def temp():
            count[0] += 1
            return self.transform.new_hidden(f"tmp{count[0]}@{key}")
        return temp

    def stmt(self, s):
        """``s`` as statements in which every yield is a statement of its own."""
        transform = self.transform
        key = self.key(s)
        if isinstance(s, ast.With) and len(s.items) > 1:
            return self.split_with(s, key)
        if isinstance(s, SCOPES) or not has_yield(s) or is_resume(s):
            transform.stmt_keys[id(s)] = key
            return [s]
        rewrite = self.REWRITES.get(type(s))
        if rewrite is None:
            raise transform.error(s, f"a yield inside a {type(s).__name__} statement cannot be made "
                             f"resumable")
        temp = self.temp_factory(key)
        out = rewrite(self, s, Expressions(transform, temp), temp, key)
        for n in out:
            if getattr(n, "lineno", None) is None:
                ast.copy_location(n, s)
            transform.stmt_keys.setdefault(id(n), key)
        located(out, s)
        return out

    # One rewrite per kind of statement holding a yield, each followed by its table
    # entry: (statement, its Expressions, a temporary maker, its key) -> statements.
    REWRITES: dict[type, Callable[..., list[Any]]] = {}

    def expr_stmt(self, s, ex, temp, key):
        pre, res = ex.expr(s.value)
        return pre + ([ast.Expr(value=res)] if not isinstance(res, (ast.Name, ast.Constant)) else [])
    REWRITES[ast.Expr] = expr_stmt

    def assign_stmt(self, s, ex, temp, key):
        pre, res = ex.expr(s.value)
        if not any(has_yield(target) for target in s.targets):
            return pre + [ast.Assign(targets=s.targets, value=res)]
        holder = temp()
        out = pre + [assign(holder, res)]
        for target in s.targets:
            target_pre, new_target = ex.target(target)
            out += target_pre + [assign(new_target, name(holder))]
        return out
    REWRITES[ast.Assign] = assign_stmt

    def annassign_stmt(self, s, ex, temp, key):
        pre, res = ex.expr(s.value)
        return pre + [ast.Assign(targets=[s.target], value=res)]
    REWRITES[ast.AnnAssign] = annassign_stmt

    def augassign_stmt(self, s, ex, temp, key):
        return ex.augassign(s)
    REWRITES[ast.AugAssign] = augassign_stmt

    def return_stmt(self, s, ex, temp, key):
        pre, res = ex.expr(s.value)
        return pre + [ast.Return(value=res)]
    REWRITES[ast.Return] = return_stmt

    def raise_stmt(self, s, ex, temp, key):
        pre, exc = ex.expr(s.exc) if s.exc is not None else ([], None)
        if s.cause is not None and has_yield(s.cause):
            if exc is not None and ex.needs_hoist(exc):
                held = temp()
                pre.append(assign(held, exc))
                exc = name(held)
            cause_pre, cause = ex.expr(s.cause)
            pre += cause_pre
        else:
            cause = s.cause
        return pre + [ast.Raise(exc=exc, cause=cause)]
    REWRITES[ast.Raise] = raise_stmt

    def delete_stmt(self, s, ex, temp, key):
        out = []
        for target in s.targets:
            target_pre, new_target = ex.target(target)
            out += target_pre + [ast.Delete(targets=[new_target])]
        return out
    REWRITES[ast.Delete] = delete_stmt

    def assert_stmt(self, s, ex, temp, key):
        pre, test = ex.expr(s.test)
        error = self.transform.helper("AssertionError")
        fail = [ast.Raise(exc=name(error), cause=None)]
        if s.msg is not None:
            msg_pre, msg = ex.expr(s.msg)
            fail = msg_pre + [ast.Raise(exc=call(error, msg), cause=None)]
        return [if_(name("__debug__"), pre + [if_(not_(test), fail)])]
    REWRITES[ast.Assert] = assert_stmt

    def if_stmt(self, s, ex, temp, key):
        pre, test = ex.expr(s.test) if has_yield(s.test) else ([], s.test)
        return pre + [ast.If(test=test, body=self.block(s.body), orelse=self.block(s.orelse))]
    REWRITES[ast.If] = if_stmt

    def while_stmt(self, s, ex, temp, key):
        if not has_yield(s.test):
            return [ast.While(test=s.test, body=self.block(s.body), orelse=self.block(s.orelse))]
        # the test runs at the top of the loop's body, as a statement that may suspend
        pre, test = ex.expr(s.test)
        body = self.block(s.body)
        if not s.orelse:
            return [ast.While(test=const(True), body=pre + [
                if_(not_(test), [ast.Break()])] + body, orelse=[])]
        flag = temp()       # whether the test ended the loop (its else runs), not a break
        loop = ast.While(test=const(True), body=pre + [
            if_(not_(test), [assign(flag, const(True)), ast.Break()])] + body, orelse=[])
        return [assign(flag, const(False)), loop, if_(name(flag), self.block(s.orelse))]
    REWRITES[ast.While] = while_stmt

    def for_stmt(self, s, ex, temp, key):
        pre, iterable = ex.expr(s.iter) if has_yield(s.iter) else ([], s.iter)
        new = ast.For(target=s.target, iter=iterable, body=self.block(s.body),
                      orelse=self.block(s.orelse), type_comment=None)
        self.transform.stmt_keys[id(new)] = key
        return pre + [new]
    REWRITES[ast.For] = for_stmt

    def with_stmt(self, s, ex, temp, key):
        pre, items = [], []
        for item in s.items:
            if has_yield(item.context_expr):
                item_pre, entered = ex.expr(item.context_expr)
                if items:
                    # earlier managers are entered before this expression runs
                    break
                pre += item_pre
                items.append(ast.withitem(context_expr=entered, optional_vars=item.optional_vars))
            else:
                items.append(item)
        new = ast.With(items=items, body=self.block(s.body), type_comment=None)
        self.transform.stmt_keys[id(new)] = key
        return pre + [new]
    REWRITES[ast.With] = with_stmt

    def try_stmt(self, s, ex, temp, key):
        new = ast.Try(body=self.block(s.body),
                      handlers=[ast.ExceptHandler(type=h.type, name=h.name,
                                                  body=self.block(h.body))
                                for h in s.handlers],
                      orelse=self.block(s.orelse),
                      finalbody=self.block(s.finalbody))
        for new_handler, handler in zip(new.handlers, s.handlers):
            ast.copy_location(new_handler, handler)
        self.transform.stmt_keys[id(new)] = key
        return [new]
    REWRITES[ast.Try] = try_stmt


class Expressions:
    """Linearisation: an expression holding yields -> (statements, residual)."""

    def __init__(self, transform, temp):
        self.transform, self.temp = transform, temp

    def needs_hoist(self, e):
        if isinstance(e, ast.Constant):
            return False
        if isinstance(e, ast.Name):
            transform = self.transform
            return not (e.id in transform.hidden or (e.id in transform.locals and e.id not in transform.captured))
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
            self.transform.yield_info[id(node)] = self.transform.yield_info[id(e)]
            self.transform.yield_label[id(node)] = self.transform.yield_label[id(e)]
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
            raise self.transform.error(e, "a yield inside a lambda or comprehension cannot be made "
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
            raise self.transform.error(tg, "a yield inside a tuple, list or starred assignment "
                                   "target cannot be made resumable")
        return [], tg

    def augassign(self, s):
        tg = s.target
        transform = self.transform
        if isinstance(tg, ast.Name) and tg.id in transform.locals and tg.id not in transform.captured:
            pre, v = self.expr(s.value)
            return pre + [ast.AugAssign(target=tg, op=s.op, value=v)]
        pre = []
        if isinstance(tg, ast.Name):
            load = ast.copy_location(name(tg.id), tg)
            store_target = tg
            if isinstance(tg, ast.Name) and tg.id in transform.cell_of:
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
            raise transform.error(s, "unsupported augmented assignment target")
        old = self.temp()
        pre.append(assign(old, load))
        vpre, v = self.expr(s.value)
        pre += vpre
        pre.append(ast.AugAssign(target=name(old, store=True), op=s.op, value=v))
        pre.append(assign(store_target, name(old)))
        return located(pre, s)
