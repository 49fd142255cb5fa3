"""Shared test helpers: round trips with determinism checks, and a structural
isomorphism checker that walks two object graphs in parallel.

This module is deliberately *not* an allowed autosave namespace: nothing in a save may
ever resolve to it. test_hostile_input relies on that (see ``Tripwire``).
"""

import collections
import enum
import functools
import random
import struct
import tracemalloc
import types
import weakref

import autosave

# -- leaks -------------------------------------------------------------------------------


def assert_leaves_nothing(once, rounds=300, slack=2_000):
    """Run ``once`` (warmed first) 300 times, then 300 more: what tracemalloc still holds
    must not grow in the second batch. A leak of one object per call in ``once`` is
    thousands of bytes a batch."""
    for _ in range(50):                  # warm every cache first
        once()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            once()
        first = tracemalloc.get_traced_memory()[0] - before
        for _ in range(rounds):
            once()
        grown = tracemalloc.get_traced_memory()[0] - before - first
    finally:
        tracemalloc.stop()
    assert grown < slack, f"{grown} more bytes traced after {rounds} more rounds"


# -- round trips -------------------------------------------------------------------------


def roundtrip(obj):
    """dumps -> loads, checking that the bytes are deterministic both ways."""
    data = autosave.dumps(obj)
    assert autosave.dumps(obj) == data, "dumping the same graph twice gave different bytes"
    copy = autosave.loads(data)
    assert autosave.dumps(copy) == data, "dumps(loads(b)) != b"
    return copy


def roundtrip_file(obj, path):
    """save -> load through a real file, with the same determinism checks."""
    written = autosave.save(path, obj)
    data = path.read_bytes()
    assert written == len(data), "save() must return the number of bytes written"
    assert data == autosave.dumps(obj), "save() wrote other bytes than dumps() returns"
    assert not list(path.parent.glob("*.autosave-*")), "save() left a temporary file behind"
    copy = autosave.load(path)
    assert autosave.dumps(copy) == data, "dumps(load(path)) != the file's bytes"
    return copy


def float_bits(x):
    return struct.pack("<d", x)


# -- isomorphism -------------------------------------------------------------------------

ATOMS = (type(None), bool, int, float, str, bytes)
# Objects that must come back as the very same object (looked up by name on load).
BY_NAME = (type, types.BuiltinFunctionType)


class NotIsomorphic(AssertionError):
    pass


def assert_isomorphic(original, copy, *, same_objects=()):
    """Assert ``copy`` is a faithful deep copy of ``original``.

    Same types, same values (floats bit-exact), same order for sequences and dicts, and
    identity preserved: every object of ``original`` maps to exactly one object of
    ``copy`` and vice versa (a bijection on ids), so sharing and cycles are preserved and
    distinct objects stay distinct. The copy must not reuse mutable objects of the
    original, except objects listed in ``same_objects`` (assets), classes, enum members
    and module-level functions, which must be the very same objects.
    """
    iso = _Iso({id(o) for o in same_objects})
    iso.pair(original, copy, "root")
    iso.run()


class _Iso:
    def __init__(self, same_ids, fwd=None, bwd=None):
        self.same_ids = same_ids
        self.fwd = {} if fwd is None else fwd    # id(original) -> copy
        self.bwd = {} if bwd is None else bwd    # id(copy) -> original
        self.keep = []                           # keep temporaries alive (ids stay unique)
        self.queue = collections.deque()
        self.deferred = []                       # sets: matched after ordered paths

    def fail(self, path, msg):
        raise NotIsomorphic(f"{path}: {msg}")

    # Identity bookkeeping happens when a pair is first seen, content comparison later
    # (breadth-first, sets last), so ordered paths fix the mapping before sets need it.
    def pair(self, a, b, path):
        ta, tb = type(a), type(b)
        if ta is not tb:
            self.fail(path, f"type {ta.__qualname__} became {tb.__qualname__}")
        if ta in ATOMS:
            if ta is float:
                if float_bits(a) != float_bits(b):
                    self.fail(path, f"float {a!r} became {b!r} (bits differ)")
            elif a != b:
                self.fail(path, f"{a!r} became {b!r}")
            return
        if ta is complex:
            if float_bits(a.real) + float_bits(a.imag) != float_bits(b.real) + float_bits(b.imag):
                self.fail(path, f"complex {a!r} became {b!r} (bits differ)")
            return
        if id(a) in self.fwd:
            if self.fwd[id(a)] is not b:
                self.fail(path, "an object reached by two paths became two different objects")
            return
        if id(b) in self.bwd:
            self.fail(path, "two distinct objects became one object")
        if (ta is tuple or ta is frozenset) and not a:
            return  # CPython interns empty tuples: identity carries no information
        self.fwd[id(a)] = b
        self.bwd[id(b)] = a
        self.keep.append((a, b))
        self.queue.append((a, b, path))

    def run(self):
        while self.queue or self.deferred:
            while self.queue:
                self.compare(*self.queue.popleft())
            if self.deferred:
                self.match_set(*self.deferred.pop(0))

    def compare(self, a, b, path):
        must_be_same = (id(a) in self.same_ids or isinstance(a, BY_NAME)
                        or isinstance(a, enum.Enum)
                        or (isinstance(a, types.FunctionType) and _is_module_level(a)))
        if must_be_same:
            if a is not b:
                self.fail(path, f"{a!r} should load as the very same object")
            return
        if a is b:
            self.fail(path, f"the copy reuses the original {type(a).__qualname__} object")
        cls = type(a)
        if isinstance(a, types.FunctionType):
            return self.compare_function(a, b, path)
        if cls is types.CellType:
            return self.compare_cell(a, b, path)
        if cls is types.MethodType:
            if a.__func__ is not b.__func__:
                self.fail(path, "a bound method now wraps another function")
            return self.pair(a.__self__, b.__self__, path + ".__self__")
        if cls is functools.partial:
            self.pair(a.func, b.func, path + ".func")
            self.pair(a.args, b.args, path + ".args")
            self.pair(a.keywords, b.keywords, path + ".keywords")
            return
        if cls is weakref.ReferenceType:
            ta, tb = a(), b()
            if (ta is None) != (tb is None):
                self.fail(path, f"weakref alive={ta is not None} became alive={tb is not None}")
            if ta is not None:
                self.pair(ta, tb, path + "()")
            return
        if cls is random.Random:
            if a.getstate() != b.getstate():
                self.fail(path, "Random state differs")
            return
        if cls is collections.deque:
            if a.maxlen != b.maxlen:
                self.fail(path, f"deque maxlen {a.maxlen} became {b.maxlen}")
            return self.compare_seq(a, b, path)
        if cls is collections.defaultdict:
            self.pair(a.default_factory, b.default_factory, path + ".default_factory")
            return self.compare_dict(a, b, path)
        if cls in (list, tuple):
            return self.compare_seq(a, b, path)
        if cls in (dict, collections.OrderedDict, collections.Counter):
            return self.compare_dict(a, b, path)
        if cls in (set, frozenset):
            return self.deferred.append((a, b, path))
        if cls is bytearray:
            if a != b:
                self.fail(path, f"{a!r} became {b!r}")
            return
        if cls.__flags__ & (1 << 9) and cls.__module__ != "builtins" and not _is_stdlib(cls):
            return self.compare_instance(a, b, path)
        # Remaining standard-library values (datetime, Decimal, UUID, paths, ...).
        if repr(a) != repr(b) or (a == a and a != b):
            self.fail(path, f"{a!r} became {b!r}")

    def compare_seq(self, a, b, path):
        if len(a) != len(b):
            self.fail(path, f"length {len(a)} became {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            self.pair(x, y, f"{path}[{i}]")

    def compare_dict(self, a, b, path):
        if len(a) != len(b):
            self.fail(path, f"length {len(a)} became {len(b)}")
        for i, ((ka, va), (kb, vb)) in enumerate(zip(dict.items(a), dict.items(b))):
            self.pair(ka, kb, f"{path}<key {i}>")
            self.pair(va, vb, f"{path}[{ka!r:.40}]")

    def compare_cell(self, a, b, path):
        try:
            ca = a.cell_contents
        except ValueError:
            ca = _EMPTY
        try:
            cb = b.cell_contents
        except ValueError:
            cb = _EMPTY
        if (ca is _EMPTY) != (cb is _EMPTY):
            self.fail(path, "a closure cell changed between empty and full")
        if ca is not _EMPTY:
            self.pair(ca, cb, path + ".cell_contents")

    def compare_function(self, a, b, path):
        if a.__code__ is not b.__code__:
            self.fail(path, f"function {a.__qualname__} now runs other code")
        self.pair(a.__defaults__, b.__defaults__, path + ".__defaults__")
        self.pair(a.__kwdefaults__, b.__kwdefaults__, path + ".__kwdefaults__")
        self.pair(a.__closure__, b.__closure__, path + ".__closure__")
        self.pair(a.__dict__, b.__dict__, path + ".__dict__")

    def compare_instance(self, a, b, path):
        cls = type(a)
        for name in _slot_names(cls):
            has_a, has_b = _has_slot(a, name), _has_slot(b, name)
            if has_a != has_b:
                self.fail(path, f"slot {name} set={has_a} became set={has_b}")
            if has_a:
                self.pair(object.__getattribute__(a, name), object.__getattribute__(b, name),
                          f"{path}.{name}")
        if hasattr(a, "__dict__"):
            da, db = object.__getattribute__(a, "__dict__"), object.__getattribute__(b, "__dict__")
            if list(da) != list(db):
                self.fail(path, f"attributes {list(da)} became {list(db)}")
            for k in da:
                self.pair(da[k], db[k], f"{path}.{k}")
        # The builtin value a subclass extends.
        for base, conv in ((list, list), (tuple, tuple), (dict, dict), (str, str),
                           (int, int), (float, float), (bytes, bytes)):
            if isinstance(a, base):
                va, vb = conv(a) if base is not dict else dict(dict.items(a)), \
                    conv(b) if base is not dict else dict(dict.items(b))
                self.keep.append((va, vb))
                if base in (list, tuple):
                    self.compare_seq(va, vb, path + "<items>")
                elif base is dict:
                    self.compare_dict(va, vb, path + "<items>")
                else:
                    self.pair(va, vb, path + "<value>")
        for base in (set, frozenset):
            if isinstance(a, base):
                va, vb = frozenset(base.__iter__(a)), frozenset(base.__iter__(b))
                self.keep.append((va, vb))
                self.deferred.append((va, vb, path + "<members>"))

    def match_set(self, a, b, path):
        """Pair every member of a with a distinct member of b."""
        if len(a) != len(b):
            self.fail(path, f"size {len(a)} became {len(b)}")
        remaining = {id(y): y for y in b}
        atoms_b = collections.defaultdict(list)   # NaNs: several equal-looking members
        for y in b:
            if type(y) in ATOMS or type(y) is complex:
                atoms_b[_atom_key(y)].append(y)
        for x in a:
            if type(x) in ATOMS or type(x) is complex:
                same = atoms_b.get(_atom_key(x))
                if not same:
                    self.fail(path, f"member {x!r} is missing from the copy")
                del remaining[id(same.pop())]
                continue
            known = self.fwd.get(id(x))
            if known is not None:
                if id(known) not in remaining:
                    self.fail(path, f"member {x!r:.60} is not in the copied set")
                del remaining[id(known)]
                continue
            # Unknown so far: try candidates, the value-equal one first, with backtracking.
            candidates = [y for y in remaining.values() if type(y) is type(x)]
            candidates.sort(key=lambda y: not _safe_eq(x, y))
            for y in candidates:
                trial = _Iso(self.same_ids, dict(self.fwd), dict(self.bwd))
                trial.keep = list(self.keep)
                try:
                    trial.pair(x, y, path + "{member}")
                    trial.run()
                except NotIsomorphic:
                    continue
                self.fwd, self.bwd, self.keep = trial.fwd, trial.bwd, trial.keep
                del remaining[id(y)]
                break
            else:
                self.fail(path, f"no member of the copy matches {x!r:.60}")


_EMPTY = object()


def _atom_key(x):
    if type(x) is float:
        return (float, float_bits(x))
    if type(x) is complex:
        return (complex, float_bits(x.real), float_bits(x.imag))
    return (type(x), x)


def _safe_eq(x, y):
    try:
        return bool(x == y)
    except Exception:
        return False


def _is_module_level(fn):
    import sys
    target = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is fn


def _is_stdlib(cls):
    import sys
    return cls.__module__.partition(".")[0] in sys.stdlib_module_names


def _slot_names(cls):
    names = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for s in slots:
            if s in ("__dict__", "__weakref__"):
                continue
            if s.startswith("__") and not s.endswith("__"):
                s = f"_{klass.__name__.lstrip('_')}{s}"
            if s not in names:
                names.append(s)
    return names


def _has_slot(obj, name):
    try:
        object.__getattribute__(obj, name)
    except AttributeError:
        return False
    return True


# -- for test_hostile_input --------------------------------------------------------------


class Tripwire:
    """A class outside every allowed namespace. If a load ever instantiates it, the
    loader called something it must not; ``calls`` records every such call."""

    calls = []

    def __init__(self, *args, **kwargs):
        Tripwire.calls.append((args, kwargs))
