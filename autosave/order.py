"""The canonical order of set members: by the saved structure, never by hash or id.

A set's members are written in the order of a key computed when the walk meets the
set (docs/format.md, "Determinism"):

1. members whose record is already written come first, by record index (what was
   written before the set is itself canonical);
2. then inline values (str, bytes, numbers, bools, None), by their typed text;
3. then the other members by a *digest* of what the walk would write for them: their
   saved type and field names, inline values, and for each object they refer to: its
   record index if it is written, its type if it is in progress (an ancestor of the
   set in the walk), a mark "k steps up" if it closes a cycle inside the member, else
   its own digest; the members of a nested set as the sorted digests of its members;
4. members with equal digests by their place in a breadth-first walk from the root
   that does not enter sets (``Walker.structural_index``), then by how the graph
   refers to them (the type and position of every reference: ``referred_as``).

Members still tied after that are interchangeable for everything the walk can see.

Every step looks only at saved content (never ``hash()``, ``id()`` order or anything a
transient field holds), so a graph and the graph loaded from its save get the same
order, in any process. Digests are computed by an explicit stack (a member may hold a
million-long chain), and the digest of an object whose part of the graph reaches
nothing written, nothing in progress and no cycle above it does not depend on the moment
it is computed, so it is computed once per save: a set costs the part of the graph its
members reach that was not digested before.
"""

import struct
import types
from collections import deque

from xxhash import xxh3_128_hexdigest

from .adapters import ADAPTERS_BY_TYPE
from .adapters.callables import FUNCTION, REDUCE
from .adapters.exceptions import EXCEPTION
from .adapters.weak import WeakAdapter
from .format import ABSENT
from .registry import REGISTRY, SAFE_STDLIB_NAMES, stable_name
from .schema import schema_of

_pack_double = struct.Struct(">d").pack


def inline_token(v):
    """The typed text of an inline value; floats bit-exact (NaN payloads, -0.0)."""
    cls = v.__class__
    if cls is str:
        return "s" + v
    if cls is int:
        return "i" + str(v) if -10 ** 4000 < v < 10 ** 4000 else "i" + hex(v)
    if cls is float:
        return "f" + _pack_double(v).hex()
    if cls is bytes:
        return "b" + v.hex()
    return "c" + repr(v)      # None, True, False


INLINE = frozenset((type(None), bool, int, float, str, bytes))


def sort_inline(members):
    """Sets of only strings, only bytes or only numbers sort by value (a set
    of any other mix falls through to ``canonical_order``); None if not such a set."""
    kinds = {m.__class__ for m in members}
    if len(kinds) == 1 and (str in kinds or bytes in kinds):
        return sorted(members)
    if kinds and kinds <= {int, float} and all(m == m for m in members):
        return sorted(members)
    return None


class SetOrder:
    """Orders set members for one walk. ``memo`` is the walker's (id -> cell)."""

    def __init__(self, memo, structural_index, root):
        self.memo = memo
        self.structural_index = structural_index
        self.root = root             # () -> the walk's root
        self.referrers = None        # id -> ["type key@position", ...], see referred_as
        self.stable = {}       # id -> digest that holds for the whole save
        self.keep = []         # objects made for digests (states, reduce parts) stay alive
                               # while their ids are keys of ``stable``

    def __call__(self, members):
        """The members of a set, in canonical order."""
        plain = sort_inline(members)
        if plain is not None:
            return plain
        memo_get = self.memo.get
        written, inline, objects = [], [], []
        for m in members:
            if m.__class__ in INLINE:
                inline.append((inline_token(m), m))
                continue
            cell = memo_get(id(m))
            if cell is not None and cell[0].__class__ is int:
                written.append((cell[0], m))
            else:
                objects.append(m)
        written.sort(key=_first)
        inline.sort(key=_first)
        out = [m for _, m in written]
        out += [m for _, m in inline]
        if objects:
            local = {}
            # A member in progress is entered by its own digest but is "in progress"
            # to everything else: digests kept for the others do not hold inside it.
            keyed = [(self.digest(m, {} if (c := memo_get(id(m))) is not None
                                  and c[0] is False else local), m) for m in objects]
            keyed.sort(key=_first)
            if len({d for d, _ in keyed}) < len(keyed):
                index, referred_as = self.structural_index, self.referred_as
                keyed.sort(key=lambda dm: (dm[0], index(dm[1]), referred_as(dm[1])))
            out += [m for _, m in keyed]
        return out

    def digest(self, start, local):
        """The digest of ``start`` (entered even if it is in progress: it is a member).
        ``local`` holds digests valid while the walk stands where it is."""
        memo_get, stable, keep = self.memo.get, self.stable, self.keep
        on_path = {}                 # id -> depth in this traversal
        # A frame: [obj, type key, children, next child, tokens, unordered from,
        #           lowest depth its digest depends on, depends on the walk's state,
        #           done]. ``done`` maps the objects digested so far in this traversal
        # (each is entered once: shared parts and grids of links stay linear) to their
        # digest; members of a nested set each start their own, so their digests do
        # not depend on the order the set iterates in.
        frames = []

        def enter(obj, done):
            key, children, unordered_from = parts_of(obj, keep)
            on_path[id(obj)] = len(frames)
            frames.append([obj, key, children, 0, [], unordered_from, len(frames) + 1,
                           False, done])

        cell = memo_get(id(start))
        in_progress = cell is not None and cell[0] is False
        enter(start, {})
        result = None
        while frames:
            frame = frames[-1]
            obj, children, i, tokens, done = frame[0], frame[2], frame[3], frame[4], frame[8]
            depth = len(frames) - 1
            unordered_from = frame[5]
            descended = False
            while i < len(children):
                v = children[i]
                i += 1
                if v.__class__ in INLINE:
                    tokens.append(inline_token(v))
                    continue
                if v is ABSENT:
                    tokens.append("a")
                    continue
                vid = id(v)
                known = stable.get(vid) or local.get(vid)
                if known is not None:
                    tokens.append(known)
                    continue
                up = on_path.get(vid)
                if up is not None:                  # a cycle inside the member
                    tokens.append(f"^{depth - up}")
                    if up < frame[6]:
                        frame[6] = up
                    continue
                cell = memo_get(vid)
                if cell is not None and cell[0] is not None:
                    tokens.append(f"w{cell[0]}" if cell[0] is not False
                                  else "p" + type_name(v.__class__))
                    frame[7] = True
                    continue
                member = unordered_from is not None and i > unordered_from
                if not member:
                    seen = done.get(vid)
                    if seen is not None:            # its digest depends on where it
                        tokens.append(seen)         # was first met: so does ours
                        frame[6] = -1
                        continue
                frame[3] = i
                enter(v, {} if member else done)
                descended = True
                break
            if descended:
                continue
            frames.pop()
            del on_path[id(obj)]
            if unordered_from is not None:
                tokens[unordered_from:] = sorted(tokens[unordered_from:])
            tokens.append(frame[1])
            result = "#" + xxh3_128_hexdigest("\x00".join(tokens).encode("utf-8", "surrogatepass"))
            if frame[6] > depth and not (obj is start and in_progress):
                # Depends on nothing above obj. (A member in progress is entered here,
                # but anything else meets it as in progress: its digest is not its token.)
                (local if frame[7] else stable)[id(obj)] = result
            else:
                done[id(obj)] = result
            if frames:
                parent = frames[-1]
                parent[4].append(result)
                if frame[6] < parent[6]:
                    parent[6] = frame[6]
                if frame[7]:
                    parent[7] = True
        return result


    def referred_as(self, obj):
        """How the graph refers to obj: the sorted type keys and positions of every
        reference to it (computed for the whole graph once, at the first tie)."""
        if self.referrers is None:
            self.referrers = self.collect_referrers()
        return sorted(self.referrers.get(id(obj), ()))

    def collect_referrers(self):
        referrers, keep = {}, self.keep
        root = self.root()
        seen, todo = {id(root)}, [root]
        while todo:
            node = todo.pop()
            if node.__class__ in INLINE:
                continue
            key, children, unordered_from = parts_of(node, keep)
            for i, child in enumerate(children):
                if child.__class__ in INLINE or child is ABSENT:
                    continue
                label = "m" if unordered_from is not None and i >= unordered_from else str(i)
                referrers.setdefault(id(child), []).append(f"{key}@{label}")
                if id(child) not in seen:
                    seen.add(id(child))
                    todo.append(child)
        return referrers


def _first(pair):
    return pair[0]


def type_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def parts_of(obj, keep):
    """(type key, the values the walk saves for obj, index where unordered members
    start or None): what the digest of obj covers. Mirrors the walk's handlers; an
    object the walk would refuse gets its type alone (the walk reports it)."""
    cls = obj.__class__
    if cls in REGISTRY.asset_classes:
        asset_id = REGISTRY.asset_id_of.get(id(obj))
        if asset_id is not None:
            return "A" + asset_id, (), None
    if cls is list or cls is tuple:
        return "l" if cls is list else "t", obj, None
    if cls is dict:
        flat = []
        for k, v in obj.items():
            flat.append(k)
            flat.append(v)
        keep.append(flat)
        return "d", flat, None
    if cls is set or cls is frozenset:
        members = list(obj)
        keep.append(members)
        return "S" if cls is set else "F", members, 0
    try:
        return _other_parts(cls, obj, keep)
    except Exception:
        return "?" + type_name(cls), (), None


def _other_parts(cls, obj, keep):
    adapter = ADAPTERS_BY_TYPE.get(cls)
    if adapter is not None:
        if isinstance(adapter, WeakAdapter):     # entries depend on the whole walk
            return adapter.name, (), None
        made = adapter.parts(obj)
        keep.append(made)
        return adapter.name, made, None
    if isinstance(obj, type) or cls is types.BuiltinFunctionType:
        return "G" + stable_name(obj), (), None
    if cls is types.FunctionType:
        made = FUNCTION.parts(obj)
        keep.append(made)
        return "f" + stable_name(obj), made, None
    if isinstance(obj, BaseException):
        made = EXCEPTION.parts(obj)
        keep.append(made)
        return "E" + type_name(cls), made, None
    schema = schema_of(cls)
    if schema.strategy == "reduce" or schema.name in SAFE_STDLIB_NAMES:
        rv = obj.__reduce_ex__(4)
        if isinstance(rv, str):
            return "G" + rv, (), None
        made = REDUCE.parts_of(obj, rv)
        keep.append(made)
        return "R" + schema.name, made, None
    if schema.strategy == "enum":
        return f"e{schema.name}.{obj._name_}", (obj._value_,), None
    if schema.strategy == "state":
        state = obj.__getstate__()
        keep.append(state)
        return "g" + schema.name, (state,), None
    values = []
    for name in schema.saved_slots:
        try:
            values.append(object.__getattribute__(obj, name))
        except AttributeError:
            values.append(ABSENT)
    if schema.has_dict:
        values.extend(v for k, v in obj.__dict__.items() if k not in schema.transient)
    key = f"o{schema.name}:{schema.version}:{','.join(schema.shape_of(obj))}"
    unordered_from = None
    base = schema.base
    if base is not None:
        if base is set or base is frozenset:
            unordered_from = len(values)
            values.extend(base.__iter__(obj))
        elif base is dict:
            for k, v in dict.items(obj):
                values.append(k)
                values.append(v)
        elif base in (list, tuple):
            values.extend(base.__iter__(obj))
        elif base is deque:
            values.append(obj.maxlen)
            values.extend(deque.__iter__(obj))
        else:
            values.append(_base_value(base, obj))
        key += ":" + base.__name__
    keep.append(values)
    return key, values, unordered_from


def _base_value(base, obj):
    if base is str:
        return str.__getitem__(obj, slice(None))
    if base is int:
        return int.__int__(obj)
    if base is float:
        return float.__float__(obj)
    return bytes.__bytes__(obj)
