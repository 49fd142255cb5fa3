"""The canonical order of set members: by the saved structure, never by hash or id.

A set's members are written in the order of a key computed when the walk meets the
set (docs/format.md, "Determinism"):

1. members whose record is already written come first, by record index (what was
   written before the set is itself canonical);
2. then inline values (str, bytes, numbers, bools, None), by their typed text;
3. then the other members by a *digest* of what the walk would write for them: their
   saved type and field names, inline values, and for each object they refer to: its
   record index if it is written, its type if it is in progress (an ancestor of the
   set in the walk), else its own digest; the members of a nested set as the sorted
   digests of its members. Objects on cycles get theirs by colour refinement over
   their cycle (``SetOrder.digests``);
4. members with equal digests by their place in a breadth-first walk from the root
   that does not enter sets (``Walker.structural_index``), then by how the graph
   refers to them (the type and position of every reference: ``referred_as``).

Members still tied after that are interchangeable for everything the walk can see.

Every step looks only at saved content (never ``hash()``, ``id()`` order or anything a
transient field holds), so a graph and the graph loaded from its save get the same
order, in any process. A digest is a pure function of what the object reaches and of
the walk's state, never of the order objects are met or computed in (a cache that
remembered digests by the order members came in once let the same graph give two
byte strings). Digests are computed without recursion (a member may hold a
million-long chain), and the digest of an object whose part of the graph reaches
nothing written and nothing in progress does not depend on the moment it is computed,
so it is computed once per save: a set costs the part of the graph its members reach
that was not digested before.
"""

import struct
from collections.abc import Callable
from typing import Any

from xxhash import xxh3_128_hexdigest

from ..model import dispatch
from ..model.adapters.callables import FUNCTION, REDUCE
from ..model.adapters.exceptions import EXCEPTION
from ..model.adapters.weak import WeakAdapter
from ..format.wire import ABSENT, INLINE_TYPES
from ..model.anatomy import enum_by_name, instance_parts, reduce_value
from ..model.registry import REGISTRY, stable_name

_pack_double = struct.Struct(">d").pack
# ints within it are written in decimal, beyond it in hex (str() of a huge int is
# quadratic, and refused past sys.int_info's digit limit); made once: a power of ten
# this big costs tens of microseconds, which every int token paid when made per call
_DECIMAL = 10 ** 4000


def inline_token(v: Any) -> str:
    """The typed text of an inline value; floats bit-exact (NaN payloads, -0.0)."""
    cls = v.__class__
    if cls is str:
        return "s" + v
    if cls is int:
        return "i" + str(v) if -_DECIMAL < v < _DECIMAL else "i" + hex(v)
    if cls is float:
        return "f" + _pack_double(v).hex()
    if cls is bytes:
        return "b" + v.hex()
    return "c" + repr(v)      # None, True, False


INLINE = INLINE_TYPES


def sort_inline(members: Any) -> list[Any] | None:
    """Sets of only strings, only bytes or only numbers sort by value (a set
    of any other mix falls through to ``canonical_order``); None if not such a set."""
    kinds = {m.__class__ for m in members}
    if len(kinds) == 1 and (str in kinds or bytes in kinds):
        return sorted(members)
    if kinds and kinds <= {int, float} and all(m == m for m in members):
        return sorted(members)
    return None


class SetOrder:
    """Orders set members for one walk. ``cell_of(obj)``: the walk's cell of obj, or
    None (``Walker.cell_of``)."""

    def __init__(self, cell_of: Callable[[Any], Any], structural_index: Callable[[Any], int],
                 root: Callable[[], Any]):
        self.cell_of = cell_of
        self.structural_index = structural_index
        self.root = root             # () -> the walk's root
        self.referrers = None        # id -> ["type key@position", ...], see referred_as
        self.stable: dict[int, str] = {}   # id -> digest that holds for the whole save
        self.keep: list[Any] = []   # objects made for digests (states, reduce parts) stay alive
                               # while their ids are keys of ``stable``
        self.kinds: dict[type, Any] = {}   # class -> dispatch.kind_of(class), for this save: looked
                               # up once per class, not per object digested
        self.plain: dict[type, Any] = {}   # class -> its schema if ``_plain_schema``, else False
        self.keys: dict[Any, str] = {}     # (class, shape or None) -> its type key (``_other_parts``)

    def instance_key(self, schema, obj):
        """The type key ``_other_parts`` gives an instance of a ``_plain_schema``
        class, made once per class and shape."""
        shape = tuple(obj.__dict__) if schema.has_dict else None
        key = self.keys.get((schema.cls, shape))
        if key is None:
            key = f"o{schema.name}:{schema.version}:{','.join(schema.shape_of(obj))}"
            if schema.base is not None:
                key += ":" + schema.base.__name__
            key = self.keys[schema.cls, shape] = key
        return key

    def __call__(self, members: Any) -> list[Any]:
        """The members of a set, in canonical order."""
        plain = sort_inline(members)
        if plain is not None:
            return plain
        cell_of = self.cell_of
        written, inline, objects = [], [], []
        for m in members:
            if m.__class__ in INLINE:
                inline.append((inline_token(m), m))
                continue
            cell = cell_of(m)
            if cell is not None and cell[0].__class__ is int:
                written.append((cell[0], m))
            else:
                objects.append(m)
        written.sort(key=_first)
        inline.sort(key=_first)
        out = [m for _, m in written]
        out += [m for _, m in inline]
        if objects:
            found = self.digests(objects)
            keyed = [(found[id(m)], m) for m in objects]
            keyed.sort(key=_first)
            if len({d for d, _ in keyed}) < len(keyed):
                index, referred_as = self.structural_index, self.referred_as
                keyed.sort(key=lambda dm: (dm[0], index(dm[1]), referred_as(dm[1])))
            out += [m for _, m in keyed]
        return out

    def digests(self, members: list[Any]) -> dict[int, str]:
        """{id: digest} of the members (``graph_digests``). A member whose saved parts
        are all inline values (a frozen dataclass of ints, a namedtuple of floats: the
        common set member hashed by value) is a node with no edge there, alone in its
        component: its digest is taken here directly, the same, without the graph."""
        found: dict[int, str] = {}
        rest: dict[int, Any] = {}
        keep, kinds, stable, cell_of = self.keep, self.kinds, self.stable, self.cell_of
        members = self.plain_digests(members, found)
        for m in members:
            parts = key, children, unordered_from = parts_of(m, keep, kinds)
            tokens = [key]
            for v in children:
                if v.__class__ in INLINE:
                    tokens.append(inline_token(v))
                elif v is ABSENT:
                    tokens.append("a")
                else:
                    rest[id(m)] = parts     # parts_of may run a __getstate__: once
                    break
            else:
                if unordered_from is not None:
                    tokens[unordered_from + 1:] = sorted(tokens[unordered_from + 1:])
                digest = found[id(m)] = _hash(tokens)
                cell = cell_of(m)
                if cell is None or cell[0] is not False:     # not in progress: as
                    stable[id(m)] = digest                   # graph_digests keeps it
        if rest:
            found.update(self.graph_digests([m for m in members if id(m) in rest], rest))
        return found

    def plain_digests(self, members: list[Any], found: dict[int, str]) -> list[Any]:
        """Digest the members that are instances of a plain layout whose values are all
        inline (the common member: a frozen dataclass of ints, a namedtuple of floats)
        into ``found``, a class at a time, their tokens straight from their fields as
        ``parts_of`` would give them; return the others, in order. Such a member is a
        node with no edge, alone in its component: ``graph_digests`` would give it
        the same digest."""
        plain, kinds, stable, cell_of = self.plain, self.kinds, self.stable, self.cell_of
        by_class: dict[type, list[Any]] = {}
        for m in members:
            by_class.setdefault(m.__class__, []).append(m)
        others = []
        for cls, group in by_class.items():
            schema = plain.get(cls)
            if schema is None:
                schema = plain[cls] = _plain_schema(cls, kinds)
            if not schema:
                others += group
                continue
            if schema.has_dict:
                keys = [_prefix(self.instance_key(schema, m)) for m in group]
            else:
                keys = [_prefix(self.instance_key(schema, group[0]))] * len(group)
            for m, key in zip(group, keys):
                text = _inline_text(key, instance_parts(schema, m))
                if text is None:
                    others.append(m)
                    continue
                digest = found[id(m)] = "#" + xxh3_128_hexdigest(text)
                cell = cell_of(m)
                if cell is None or cell[0] is not False:     # not in progress
                    stable[id(m)] = digest
        if len(others) < len(members):          # in the members' order, by identity
            left = set(map(id, others))
            others = [m for m in members if id(m) in left]
        return others

    def graph_digests(self, members: list[Any], made: dict[int, Any] | None = None
                      ) -> dict[int, str]:
        """{id: digest} of the members: a pure function of what they reach and of the
        walk's state (never of the order anything is met or computed in).

        What the members reach, short of inline values, written objects, objects in
        progress and digests kept for the whole save, is taken as a graph. Its strongly
        connected components are digested children first: an object on no cycle by its
        type key and its children's tokens; the objects of a cycle by colour refinement
        (each round hashes an object's colour with its children's, until the number of
        colours stops growing), which sees the same structure the same way wherever it
        is entered. A member in progress is a node of its own (it is being ordered),
        and in progress (its type) to everything referring to it. ``made``: the parts
        of members ``parts_of`` gave already, by id.
        """
        cell_of, stable, keep = self.cell_of, self.stable, self.keep
        index: dict[int, int] = {}
        nodes: list[Any] = []
        keys: list[str] = []
        edges: list[list[tuple[str | None, int]]] = []
        # edges[i]: [(token or None, child node or -1)], unordered members from u[i]
        unordered = []
        state = []              # depends on the walk's state (written / in progress)

        def node(obj):
            i = index.get(id(obj))
            if i is None:
                i = index[id(obj)] = len(nodes)
                nodes.append(obj)
            return i

        for m in members:
            node(m)
        i = 0
        while i < len(nodes):
            obj = nodes[i]
            parts = made.pop(id(obj), None) if made else None
            key, children, unordered_from = parts or parts_of(obj, keep, self.kinds)
            cell = cell_of(obj)
            depends = cell is not None and cell[0] is False      # a member in progress
            out: list[tuple[str | None, int]] = []
            for v in children:
                if v.__class__ in INLINE:
                    out.append((inline_token(v), -1))
                    continue
                if v is ABSENT:
                    out.append(("a", -1))
                    continue
                vid = id(v)
                known = stable.get(vid)
                if known is not None:
                    out.append((known, -1))
                    continue
                cell = cell_of(v)
                if cell is not None and cell[0] is not None:
                    out.append((f"w{cell[0]}" if cell[0] is not False
                                else "p" + type_name(v.__class__), -1))
                    depends = True
                    continue
                out.append((None, node(v)))
            keys.append(key)
            edges.append(out)
            unordered.append(unordered_from)
            state.append(depends)
            i += 1

        digest: list[Any] = [None] * len(nodes)     # each node's, components first
        for component in _components(edges):
            if len(component) == 1 and all(c != component[0] for _, c in edges[component[0]]):
                n = component[0]
                digest[n] = _hash([keys[n], *_tokens(edges[n], unordered[n], digest)])
                state[n] = state[n] or any(c >= 0 and state[c] for _, c in edges[n])
                continue
            _refine(component, keys, edges, unordered, digest)
            depends = any(state[n] or any(c >= 0 and state[c] for _, c in edges[n])
                          for n in component)
            for n in component:
                state[n] = depends
        for n, obj in enumerate(nodes):
            if not state[n]:
                stable[id(obj)] = digest[n]      # ``keep`` holds what parts_of made
        return {id(m): digest[index[id(m)]] for m in members}

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
            key, children, unordered_from = parts_of(node, keep, self.kinds)
            for i, child in enumerate(children):
                if child.__class__ in INLINE or child is ABSENT:
                    continue
                label = "m" if unordered_from is not None and i >= unordered_from else str(i)
                referrers.setdefault(id(child), []).append(f"{key}@{label}")
                if id(child) not in seen:
                    seen.add(id(child))
                    todo.append(child)
        return referrers


REFINE_WORK = 1 << 22       # hash inputs colour refinement may spend on one cycle


def _hash(tokens):
    # Length-prefixed, so no two token lists give the same text.
    return "#" + xxh3_128_hexdigest("".join([f"{len(t)}:{t}" for t in tokens])
                                    .encode("utf-8", "surrogatepass"))


def _prefix(token):
    return f"{len(token)}:{token}"


def _inline_text(prefix, values):
    """What ``_hash`` hashes for a key (``prefix``: its length-prefixed text) and
    values, each its ``inline_token`` (written out for the common types, without a
    call per value); None unless every value is inline."""
    parts = [prefix]
    for v in values:
        cls = v.__class__
        if cls is int and -_DECIMAL < v < _DECIMAL:
            t = str(v)
            parts.append(f"{len(t) + 1}:i{t}")
        elif cls is float:
            parts.append(f"17:f{_pack_double(v).hex()}")
        elif cls is str:
            parts.append(f"{len(v) + 1}:s{v}")
        elif cls in INLINE:
            t = inline_token(v)
            parts.append(f"{len(t)}:{t}")
        else:
            return None
    return "".join(parts).encode("utf-8", "surrogatepass")


def _tokens(out, unordered_from, digest):
    tokens = [t if c < 0 else digest[c] for t, c in out]
    if unordered_from is not None:
        tokens[unordered_from:] = sorted(tokens[unordered_from:])
    return tokens


def _refine(component, keys, edges, unordered, digest):
    """Digests of the objects of one cycle: colour refinement from what each object is
    and what it refers to outside the cycle, rounds until the colours stop splitting."""
    inside = set(component)
    colour = {}

    def tokens(n, inner):
        out = [t if c < 0 else inner(c) if c in inside else digest[c] for t, c in edges[n]]
        if unordered[n] is not None:
            out[unordered[n]:] = sorted(out[unordered[n]:])
        return out

    for n in component:
        colour[n] = _hash([keys[n], *tokens(n, lambda c: "c")])
    distinct = len(set(colour.values()))
    # Each round can split colours one more step along the cycles; a long ring told
    # apart by one object would take rounds for each step, so the rounds are bounded by
    # the work they cost. The bound depends on the component alone: still a pure
    # function (objects it leaves alike are ordered by the tie-breaks).
    work = sum(len(edges[n]) + 1 for n in component)
    for _ in range(min(len(component), max(8, REFINE_WORK // work))):
        current = dict(colour)
        for n in component:
            colour[n] = _hash([current[n], *tokens(n, current.__getitem__)])
        now = len(set(colour.values()))
        if now == distinct:
            break
        distinct = now
    for n in component:
        digest[n] = _hash(["cycle", colour[n]])


def _components(edges):
    """Strongly connected components of the node graph (children first), iteratively."""
    index, low, on_stack, stack, order = {}, {}, set(), [], []
    counter = 0
    for start in range(len(edges)):
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, 0)]
        while work:
            n, k = work[-1]
            out = edges[n]
            while k < len(out):
                c = out[k][1]
                k += 1
                if c < 0:
                    continue
                if c not in index:
                    work[-1] = (n, k)
                    index[c] = low[c] = counter
                    counter += 1
                    stack.append(c)
                    on_stack.add(c)
                    work.append((c, 0))
                    break
                if c in on_stack and index[c] < low[n]:
                    low[n] = index[c]
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    if low[n] < low[parent]:
                        low[parent] = low[n]
                if low[n] == index[n]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == n:
                            break
                    order.append(component)
                continue
    return order


def _plain_schema(cls, kinds):
    """cls's schema when ``parts_of`` gives its instances the type key of
    ``SetOrder.instance_key`` and ``instance_parts`` in record order, nothing else
    (fields, maybe list or tuple items: no unordered members, no transient fields,
    no assets); else False."""
    if cls in REGISTRY.asset_classes:
        return False
    try:
        kind = kinds.get(cls)
        if kind is None:
            kind = kinds[cls] = dispatch.kind_of(cls)
    except Exception:
        return False
    kind, schema = kind
    if kind not in ("slots", "dict", "fields", "extends") or schema.transient or \
            schema.base not in (None, list, tuple):
        return False
    return schema


def _first(pair):
    return pair[0]


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def parts_of(obj: Any, keep: list[Any], kinds: dict[type, Any]) -> tuple[str, Any, int | None]:
    """(type key, the values the walk saves for obj, index where unordered members
    start or None): what the digest of obj covers. Mirrors the walk's handlers; an
    object the walk would refuse gets its type alone (the walk reports it). ``kinds``:
    the save's cache of ``dispatch.kind_of`` by class."""
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
        kind = kinds.get(cls)
        if kind is None:
            kind = kinds[cls] = dispatch.kind_of(cls)
        return _other_parts(cls, obj, keep, *kind)
    except Exception:
        return "?" + type_name(cls), (), None


def _other_parts(cls, obj, keep, kind, detail):
    if kind == dispatch.ADAPTER:
        if isinstance(detail, WeakAdapter):      # entries depend on the whole walk
            return detail.name, (), None
        made = detail.parts(obj)
        keep.append(made)
        return detail.name, made, None
    if kind == dispatch.GLOBAL or kind == dispatch.BUILTIN_FUNCTION:
        return "G" + stable_name(obj), (), None
    if kind == dispatch.FUNCTION:
        made = FUNCTION.parts(obj)
        keep.append(made)
        return "f" + stable_name(obj), made, None
    if kind == dispatch.EXCEPTION:
        made = EXCEPTION.parts(obj)
        keep.append(made)
        return "E" + type_name(cls), made, None
    if kind == "reduce":
        rv = reduce_value(obj)
        if isinstance(rv, str):
            return "G" + rv, (), None
        made = REDUCE.parts_of(obj, rv)
        keep.append(made)
        return "R" + detail.name, made, None
    if kind == "enum":      # a member by its name; anything else by its value
        return f"e{detail.name}.{obj._name_}", () if enum_by_name(obj) else (obj._value_,), None
    if kind == "state":
        state = obj.__getstate__()
        keep.append(state)
        return "g" + detail.name, (state,), None
    if kind not in ("slots", "dict", "fields", "extends"):   # refused by the walk
        return "?" + type_name(cls), (), None
    schema = detail
    values = instance_parts(schema, obj)
    key = f"o{schema.name}:{schema.version}:{','.join(schema.shape_of(obj))}"
    unordered_from = None
    base = schema.base
    if base is not None:
        if base is set or base is frozenset:
            unordered_from = len(values) - base.__len__(obj)
        key += ":" + base.__name__
    keep.append(values)
    return key, values, unordered_from
