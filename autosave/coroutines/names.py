"""Names in a coroutine's body: private-name mangling inside classes, and the rewriting
of locals into frame slots and explicit cells."""

import ast

from .syntax import COMPREHENSIONS, located, name, own_nodes


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

    def __init__(self, transform, first_param):
        self.transform = transform
        self.first = first_param

    def rewrite_body(self, body):
        out = []
        for s in body:
            out.append(self.visit(s, frozenset()))
            out.extend(self.bind_cells(s, frozenset()))
        return out

    def visit(self, node, shadow, own=True):
        transform = self.transform
        if isinstance(node, ast.Name):
            if node.id in transform.cell_of and node.id not in shadow:
                new = ast.Attribute(value=name(transform.cell_of[node.id]), attr="cell_contents",
                                    ctx=node.ctx)
                return ast.copy_location(new, node)
            return node
        if own and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "super" and not node.args and not node.keywords and \
                "super" not in shadow:
            if "__class__" not in transform.freevars or self.first is None:
                raise transform.error(node, "super() without arguments needs the method's class; "
                                    "write super(Class, self)")
            first = self.visit(name(self.first), shadow)
            node.args = [name("__class__"), first]
            node.func = name(transform.helper("super"))
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
            keep = [n for n in node.names if n not in transform.cell_of or n in shadow]
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
            if n in self.transform.cell_of and n not in shadow:
                out.append(located([ast.Assign(
                    targets=[ast.Attribute(value=name(self.transform.cell_of[n]), attr="cell_contents",
                                           ctx=ast.Store())], value=name(n))], stmt)[0])
        return out

    def replace_in(self, node, shadow, own):
        if own and isinstance(node, ast.ExceptHandler) and node.name in self.transform.cell_of \
                and node.name not in shadow:
            node.body.insert(0, located([ast.Assign(
                targets=[ast.Attribute(value=name(self.transform.cell_of[node.name]),
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
