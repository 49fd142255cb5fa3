"""The oracle for ``@autosave.coroutine``: CPython's own generators.

One source text -- module-level generator functions, helper classes, globals -- is built
twice:

* **native**: executed as-is in a fresh module; its generators are CPython's.
* **transformed**: the same text in a fresh importable, allowed module, with
  ``@autosave.coroutine`` put on every generator function (module level and methods of
  module-level classes), so its generators are autosave's state machines.

A *script* of operations drives a generator of each: ``("next",)``, ``("send", value)``,
``("throw", ExcType, args)`` (ExcType a class, or the name of one in the module),
``("close",)``, ``("iter",)`` (``iter(g) is g``), ``("state",)`` (what ``inspect`` and
debuggers read: ``getgeneratorstate``, ``gi_running``, ``gi_yieldfrom``...) and
``("do", fn)`` (``fn(root)``: lets a script touch the objects it shares with the
generator, e.g. mutate a list a loop runs over). Each operation gives one trace entry: what it yielded, returned or raised (type
name, args, and the types of ``__cause__`` and ``__context__``), and a snapshot of the
side-effect ``log`` list the generator appends to. The transformed traces must equal the
native trace exactly -- once without saving, and once with a save + load after every
prefix of the script (the empty one included): the generator, its log and every shared
object are one root dict, so identity between them survives the load; each save is also
checked to be deterministic.
"""

import ast
import collections.abc
import contextlib
import gc
import inspect
import linecache
import os
import sys
import textwrap

import autosave
from autosave.model.registry import REGISTRY
from modtools import fresh_name, load_module, unload

# After every load, ``dumps(loaded) == data`` must hold too (as tests/helpers.roundtrip
# checks for every other kind of object).
CHECK_RELOAD_BYTES = True

# COROUTINE_ORACLE_SELFTEST=1 compares native against native without saving: a check of
# the scripts and the harness themselves, independent of autosave.coroutine.
SELFTEST = bool(os.environ.get("COROUTINE_ORACLE_SELFTEST"))

# COROUTINE_ORACLE_RESTART=1 runs every check also with restarts (see ``run``).
RESTART_ALWAYS = bool(os.environ.get("COROUTINE_ORACLE_RESTART"))


# -- building the two modules ------------------------------------------------------------


def _is_generator_def(node):
    """Does this def's own body (not nested scopes) contain yield / yield from?"""
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))
    return False


def generator_defs(source):
    """(name, lineno of the def, indentation) of every generator function at module
    level or directly in a module-level class."""
    with no_collection():
        tree = ast.parse(source)
    found = []
    for node in tree.body:
        candidates = [(node, "")]
        if isinstance(node, ast.ClassDef):
            candidates = [(n, node.name + ".") for n in node.body]
        for n, prefix in candidates:
            if isinstance(n, ast.FunctionDef) and _is_generator_def(n):
                found.append((prefix + n.name, n.lineno, n.col_offset))
    return found


def decorate(source, only=None):
    """``source`` with ``@autosave.coroutine`` on every generator function (or the ones
    named in ``only``: "f" or "Class.method"), innermost, below any other decorator."""
    return decorate_with_lines(source, only)[0]


def decorate_with_lines(source, only=None):
    """(decorated source, {decorated line number: line number in ``source``})."""
    lines = source.splitlines(keepends=True)
    origin = list(range(1, len(lines) + 1))
    for name, lineno, col in sorted(generator_defs(source), key=lambda t: -t[1]):
        if only is not None and name not in only:
            continue
        lines.insert(lineno - 1, " " * col + "@autosave.coroutine\n")
        origin.insert(lineno - 1, None)
    return "".join(lines), {i + 1: o for i, o in enumerate(origin)}


# filename of a built module -> {its line number: line number in the common source}
_LINE_ORIGIN = {}


@contextlib.contextmanager
def no_collection():
    """No garbage collection while source is parsed (by us or by the decorator).

    A generator collected while suspended in a try or with is closed then, like a
    native one, and an error there (e.g. "generator ignored GeneratorExit") goes to
    sys.unraisablehook, whose traceback formatting parses source with ast -- which
    CPython 3.11 does not allow inside another ast.parse: "SystemError: AST constructor
    recursion depth mismatch"."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_source_module(name, source):
    """A module made from ``source`` whose functions ``inspect.getsource`` can read."""
    source = textwrap.dedent(source)
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    with no_collection():
        return load_module(name, source)


class Pair:
    """The native and the transformed module built from one source text."""

    def __init__(self, source, only=None, prefix="coro"):
        self.source = "import autosave\n" + textwrap.dedent(source)
        self.native_name = fresh_name(prefix + "_native")
        self.name = fresh_name(prefix)
        self.native = load_source_module(self.native_name, self.source)
        if SELFTEST:
            self.transformed_source, origin = self.source, None
        else:
            self.transformed_source, origin = decorate_with_lines(self.source, only)
        if origin is not None:
            _LINE_ORIGIN[f"<{self.name}>"] = origin
        self._transformed = None

    @property
    def transformed(self):
        """Built on first use, so a decoration-time error fails the tests that need it."""
        if self._transformed is None:
            autosave.allow(self.name)
            self._transformed = load_source_module(self.name, self.transformed_source)
        return self._transformed

    def close(self):
        for name in (self.native_name, self.name):
            unload(name)
            linecache.cache.pop(f"<{name}>", None)
            _LINE_ORIGIN.pop(f"<{name}>", None)
        REGISTRY.allowed.discard(self.name)


_PAIRS = {}


def pair(source, only=None):
    """The Pair for ``source`` (built once per source text and test session)."""
    key = (textwrap.dedent(source), None if only is None else tuple(sorted(only)))
    if key not in _PAIRS:
        _PAIRS[key] = Pair(source, only)
    return _PAIRS[key]


# -- driving -----------------------------------------------------------------------------


def norm(value, depth=0):
    """A plain, module-independent picture of a value, compared with ==."""
    if depth > 20:
        return "<deep>"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return value
    if isinstance(value, BaseException):
        return ("exc", type(value).__qualname__, norm(value.args, depth + 1))
    if isinstance(value, type):
        return ("class", value.__qualname__)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [norm(v, depth + 1) for v in value])
    if isinstance(value, dict):
        return ("dict", [(norm(k, depth + 1), norm(v, depth + 1)) for k, v in value.items()])
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, sorted(repr(norm(v, depth + 1)) for v in value))
    if isinstance(value, range):
        return ("range", value.start, value.stop, value.step)
    if hasattr(value, "__next__") and hasattr(value, "send"):
        return ("generator",)
    if callable(value):
        return ("callable", getattr(value, "__qualname__", type(value).__qualname__))
    state = getattr(value, "__dict__", None)
    if state is not None:
        return ("obj", type(value).__qualname__, norm(state, depth + 1))
    return ("repr", repr(value))


def raised_at(exc, module):
    """The line (of the common source) of the innermost traceback entry in ``module``."""
    filename = module.__file__
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    origin = _LINE_ORIGIN.get(filename)
    if line is not None and origin is not None:
        line = origin.get(line, ("outside the source", line))
    return line


def _exc_entry(exc, log, module, lines=False):
    """With ``lines``, also where the exception was raised: the innermost traceback
    line in ``module`` (``check(..., lines=True)``). Messages name the module as
    "<module>" (CPython puts it in some: "mod.f() argument after ** must be...")."""
    cause = type(exc.__cause__).__qualname__ if exc.__cause__ is not None else None
    context = type(exc.__context__).__qualname__ if exc.__context__ is not None else None
    args = tuple(a.replace(module.__name__ + ".", "<module>.") if isinstance(a, str) else a
                 for a in exc.args)
    entry = ("raise", type(exc).__qualname__, norm(args), cause, context, norm(log))
    if lines:
        entry += (("line", raised_at(exc, module)),)
    return entry


def _resolve_exc(module, exc_type):
    if isinstance(exc_type, str):
        return getattr(module, exc_type)
    return exc_type


def describe_op(op):
    kind = op[0]
    if kind == "throw":
        t = op[1] if isinstance(op[1], str) else op[1].__name__
        return f"throw({t}{tuple(op[2]) if len(op) > 2 else ()})"
    if kind == "send":
        return f"send({op[1]!r})"
    if kind == "do":
        return f"do({getattr(op[1], '__name__', op[1])})"
    return f"{kind}()"


def apply(module, root, op, lines=False):
    """Run one operation on root["gen"]; the trace entry it gives."""
    g, log = root["gen"], root["log"]
    kind = op[0]
    try:
        if kind == "next":
            result = next(g)
        elif kind == "send":
            result = g.send(op[1])
        elif kind == "throw":
            exc = _resolve_exc(module, op[1])(*(op[2] if len(op) > 2 else ()))
            result = g.throw(exc)
        elif kind == "close":
            return ("closed", norm(g.close()), norm(log))
        elif kind == "iter":
            return ("iter", iter(g) is g, norm(log))
        elif kind == "state":
            return ("state", introspect(g), norm(log))
        elif kind == "do":
            return ("did", norm(op[1](root)), norm(log))
        else:
            raise ValueError(f"unknown script operation {op!r}")
    except StopIteration as e:
        return ("return", norm(e.value), norm(log))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- GeneratorExit and friends are traced too
        return _exc_entry(e, log, module, lines)
    return ("yield", norm(result), norm(log))


def introspect(g):
    """What inspect and debuggers read off a generator."""
    inner = g.gi_yieldfrom
    if inner is not None:
        inner = "generator" if hasattr(inner, "send") else type(inner).__name__
    return (inspect.getgeneratorstate(g), g.gi_running, g.gi_suspended,
            g.gi_frame is None, inner, isinstance(g, collections.abc.Generator))


def make_root(module, make):
    """Call ``make`` -> the root dict {"gen": g, "log": log, ...extras}.

    ``make`` is a string evaluated in the module with ``log`` bound (e.g. "gen(log, 3)"),
    or ``make(module, log)`` returning the generator or a dict holding it under "gen".
    """
    log = []
    if isinstance(make, str):
        made = eval(make, module.__dict__, {"log": log})  # noqa: S307 -- test code
    else:
        made = make(module, log)
    if isinstance(made, dict):
        root = {"log": log, **made}
    else:
        root = {"gen": made, "log": log}
    return root


class SaveFailure(AssertionError):
    pass


def save_load(root, where):
    try:
        data = autosave.dumps(root)
    except Exception as e:
        raise SaveFailure(f"{where}: dumps failed: {type(e).__name__}: {e}") from e
    again = autosave.dumps(root)
    if again != data:
        raise SaveFailure(f"{where}: dumps is not deterministic (two dumps of the same state differ)")
    try:
        loaded = autosave.loads(data)
    except Exception as e:
        raise SaveFailure(f"{where}: loads failed: {type(e).__name__}: {e}") from e
    if CHECK_RELOAD_BYTES:
        redumped = autosave.dumps(loaded)
        if redumped != data:
            raise SaveFailure(f"{where}: dumps(loads(data)) != data")
    return loaded


def run(module, make, script, *, save=False, lines=False, restart=None, record=None):
    """The trace of ``script`` on a generator made by ``make`` in ``module``.

    ``restart=source``: before every load, execute the module again from ``source``
    (under its name, as a game started again imports its code): the save must resolve
    to the new functions and classes. ``record``: a list that gets the bytes of every
    save."""
    root = make_root(module, make)
    trace = []

    def reload(root, where):
        nonlocal module
        if restart is None:
            return save_load(root, where)
        data = autosave.dumps(root)
        module = load_source_module(module.__name__, restart)
        try:
            return autosave.loads(data)
        except Exception as e:
            raise SaveFailure(f"{where}: loads after a restart failed: {type(e).__name__}: {e}") from e

    if save:
        root = reload(root, "before the first operation")
        if record is not None:
            record.append(autosave.dumps(root))
    for i, op in enumerate(script):
        trace.append(apply(module, root, op, lines))
        if save:
            done = ", ".join(describe_op(o) for o in script[: i + 1])
            old, root = root, reload(root, f"after [{done}]")
            _finish(old["gen"])
            if record is not None:
                record.append(autosave.dumps(root))
    _finish(root["gen"])
    return trace


def _finish(g):
    """Close what the script left suspended (or a copy a load replaced) now, not when
    it is collected -- again while it ignores GeneratorExit by yielding (see
    ``no_collection`` for why collection time is a bad time)."""
    for _ in range(10):
        try:
            g.close()
            return
        except RuntimeError:
            continue           # "generator ignored GeneratorExit": it yielded again
        except BaseException:  # noqa: BLE001
            return


def format_trace(script, trace):
    return "\n".join(f"  {describe_op(op):<28} -> {entry!r}" for op, entry in zip(script, trace))


def check(source, make, script, *, only=None, save=True, lines=False, normalize=None,
          restart=False):
    """Assert the transformed generator traces ``script`` exactly like the native one,
    without saving and with a save + load after every step. Returns the native trace.

    ``lines=True`` also compares the source line each exception raised out of the
    generator comes from (meaningful for exceptions raised by the body; a throw into an
    unstarted or finished generator has a different traceback natively).
    ``normalize(entry) -> entry`` is applied to both traces' entries before comparing
    (to set aside a known, separately pinned difference). ``restart=True`` also runs the
    script with the module executed again before every load (see ``run``)."""
    p = source if isinstance(source, Pair) else pair(source, only)
    norm_trace = (lambda t: t) if normalize is None else (lambda t: [normalize(e) for e in t])
    expected = norm_trace(run(p.native, make, script, lines=lines))
    got = norm_trace(run(p.transformed, make, script, lines=lines))
    if got != expected:
        raise AssertionError(
            "the transformed generator differs from the native one (no saving)\n"
            f"native:\n{format_trace(script, expected)}\n"
            f"transformed:\n{format_trace(script, got)}")
    if save and not SELFTEST:
        got = norm_trace(run(p.transformed, make, script, save=True, lines=lines))
        if got != expected:
            raise AssertionError(
                "the transformed generator differs from the native one once saved and "
                "loaded after every step\n"
                f"native:\n{format_trace(script, expected)}\n"
                f"transformed, saved after every step:\n{format_trace(script, got)}")
    if save and (restart or RESTART_ALWAYS) and not SELFTEST:
        try:
            got = norm_trace(run(p.transformed, make, script, save=True, lines=lines,
                                 restart=p.transformed_source))
        finally:
            p._transformed = sys.modules.get(p.name)
        if got != expected:
            raise AssertionError(
                "the transformed generator differs from the native one once saved and "
                "loaded into a freshly executed module after every step\n"
                f"native:\n{format_trace(script, expected)}\n"
                f"transformed, restarted after every step:\n{format_trace(script, got)}")
    return expected


# -- ahead of time -------------------------------------------------------------------------


def coroutine_functions(module):
    """The @autosave.coroutine functions of a module and of its classes."""
    from autosave.coroutines import spec_of
    found = []
    for value in list(vars(module).values()):
        members = [value]
        if isinstance(value, type) and value.__module__ == module.__name__:
            members = [getattr(v, "__func__", v) for v in vars(value).values()]
        found += [f for f in members if callable(f) and spec_of(f) is not None]
    return found


def use_precompiled(p):
    """Execute ``p``'s transformed module again with its coroutines' state machines from
    the module ``autosave-codegen`` would generate for it, imported first, and with its
    source out of reach (as in a shipped build). Returns the generated source."""
    from autosave.coroutines import transform
    with no_collection():
        generated = transform.module_source(coroutine_functions(p.transformed))
        name = fresh_name("generated")
        load_module(name, generated)
    filename = f"<{p.name}>"
    lines = linecache.cache.pop(filename)
    try:
        with no_collection():
            p._transformed = load_module(p.name, p.transformed_source)
    finally:
        linecache.cache[filename] = lines
    unload(name)
    return generated


# -- script families ---------------------------------------------------------------------


def count_steps(source, make, limit=200, sends=None):
    """How many next()/send() steps the native generator takes to finish."""
    p = source if isinstance(source, Pair) else pair(source)
    root = make_root(p.native, make)
    for n in range(limit):
        try:
            if sends is None or n == 0:
                next(root["gen"])
            else:
                root["gen"].send(sends[(n - 1) % len(sends)])
        except StopIteration:
            return n + 1
        except Exception:
            return n + 1
    raise AssertionError(f"the generator did not finish within {limit} steps")


def standard_scripts(steps, exc=ValueError, sends=None):
    """Scripts probing every suspension point of a generator that finishes after
    ``steps`` steps: run to the end (and once more); throw at every yield (and before
    the start, and after the end); close at every yield (and before the start); and, if
    ``sends`` is given, send those values in turn."""
    def advance(k):
        if sends is None:
            return [("next",)] * k
        return [("next",)] + [("send", sends[(i) % len(sends)]) for i in range(k - 1)] if k else []

    scripts = [advance(steps) + [("next",)]]
    for k in range(0, steps + 1):
        scripts.append(advance(k) + [("throw", exc, ("boom", k))] + [("next",)] * 3)
        scripts.append(advance(k) + [("close",), ("next",), ("close",)])
    return scripts
