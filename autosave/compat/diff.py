"""`autosave diff A B`: two saves compared by structure, safe on files from anyone.

Both files are only decoded (``autosave.format.decode``): no object is built, nothing
is imported or called, so the files may come from strangers. The comparison walks both
graphs from the root at once, pairing records met along the same object path
(``root.npcs[3].hp``): it reports changed values, changed classes, fields and items
added or removed, and, for the whole file, the record count of every class. Each
record of A is visited once and the walk is a queue, so a save of N bytes is compared
in time linear in N, however deep its graph (a path is shown with its middle elided
when it is long).
"""

from collections import Counter, deque

import attrs

from ..adapters import ADAPTERS_BY_NAME
from ..errors import FormatError
from ..format import ABSENT, records_of, target as reference_target

MAPPINGS = {"builtins.dict", "collections.OrderedDict", "collections.Counter"}
SETS = {"builtins.set", "builtins.frozenset"}
PATH_HEAD, PATH_TAIL = 8, 24        # segments shown of a long path


@attrs.frozen
class Change:
    path: str
    kind: str            # "value", "class", "field added", "field removed", "item added",
    a: object            # "item removed", "member added", "member removed"
    b: object


@attrs.frozen
class Diff:
    a_records: int
    b_records: int
    classes: list        # (name, count in A, count in B), sorted by name
    changes: list        # the first ``limit`` Changes, in walk order
    total_changes: int


def _entry(types, t, which):
    entry = types[t]
    if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str
            or type(entry[2]) is not list or not all(type(f) is str for f in entry[2])):
        raise FormatError(f"{which}: type entry {t} is malformed: {entry!r:.120}")
    return entry


class Side:
    def __init__(self, data, which):
        self.which = which
        try:
            self.types, self.records, self.root = records_of(data)
        except FormatError as e:
            raise FormatError(f"{which}: {e}") from None
        for t in range(len(self.types)):
            _entry(self.types, t, which)
        # Every reference is checked once up front, so a malformed file is refused
        # whole, not only where the walk happens to go.
        for i, record in enumerate(self.records):
            for value in record:
                if type(value) is list:
                    self.target(value, i)
        if type(self.root) is list:
            self.target(self.root, len(self.records))

    def target(self, value, here):
        r = value[0] if value else None
        if type(r) is not int:
            raise FormatError(f"{self.which}: record {here} holds a malformed reference")
        j = reference_target(r, here)
        if not 0 <= j < len(self.records):
            raise FormatError(f"{self.which}: record {here} refers to record {j}, outside "
                              f"the {len(self.records)} records")
        return j

    def name(self, j):
        return self.types[self.records[j][0]][0]

    def fields(self, j):
        return self.types[self.records[j][0]][2]

    def counts(self):
        return Counter(self.types[rec[0]][0] for rec in self.records)


def render(path):
    """A path node (parent, segment) -> 'root.npcs[3].hp', long ones elided."""
    segments = []
    while path is not None:
        path, segment = path
        segments.append(segment)
    segments.reverse()
    if len(segments) > PATH_HEAD + PATH_TAIL:
        hidden = len(segments) - PATH_HEAD - PATH_TAIL
        segments = segments[:PATH_HEAD] + [f"…({hidden} more)…"] + segments[-PATH_TAIL:]
    return "".join(segments)


def _same(a, b):
    return type(a) is type(b) and (a == b or repr(a) == repr(b))


def _key_text(value):
    return "[" + repr(value)[:40] + "]"


class Walk:
    def __init__(self, a, b, limit):
        self.a, self.b, self.limit = a, b, limit
        self.changes, self.total = [], 0
        self.seen = bytearray(len(a.records))
        self.queue = deque()

    def change(self, path, kind, va, vb):
        self.total += 1
        if len(self.changes) < self.limit:
            self.changes.append(Change(render(path), kind, va, vb))

    def show(self, side, value, here):
        if type(value) is list:
            j = side.target(value, here)
            name = side.name(j)
            record = side.records[j]
            if name == "autosave.asset" and len(record) == 2 and type(record[1]) is str:
                return f"<asset {record[1][:60]!r}>"
            return f"<{name}>"
        if value is ABSENT:
            return "<unset>"
        if type(value) is bytes:
            return f"bytes[{len(value)}]:{value[:16].hex()}"
        if type(value) is str and len(value) > 80:
            return value[:79] + "…"
        return value

    def run(self):
        self.queue.append(((None, "root"), self.a.root, len(self.a.records),
                           self.b.root, len(self.b.records)))
        while self.queue:
            self.step(*self.queue.popleft())
        return self

    def step(self, path, va, ha, vb, hb):
        a_ref, b_ref = type(va) is list, type(vb) is list
        if not a_ref and not b_ref:
            if not _same(va, vb):
                self.change(path, "value", self.show(self.a, va, ha), self.show(self.b, vb, hb))
            return
        if a_ref != b_ref:
            self.change(path, "value", self.show(self.a, va, ha), self.show(self.b, vb, hb))
            return
        i, j = self.a.target(va, ha), self.b.target(vb, hb)
        if self.seen[i]:
            return
        self.seen[i] = 1
        name_a, name_b = self.a.name(i), self.b.name(j)
        if name_a != name_b:
            self.change(path, "class", name_a, name_b)
            return
        rec_a, rec_b = self.a.records[i], self.b.records[j]
        fields_a, fields_b = self.a.fields(i), self.b.fields(j)
        if self.enum_like(name_a, rec_a, fields_a) and self.enum_like(name_b, rec_b, fields_b):
            if rec_a[1] != rec_b[1]:
                self.change(path, "value", f"{name_a}.{rec_a[1]}", f"{name_b}.{rec_b[1]}")
            return
        if fields_a or fields_b:
            self.fields(path, i, rec_a, fields_a, j, rec_b, fields_b)
            rest_a, rest_b = rec_a[1 + len(fields_a):], rec_b[1 + len(fields_b):]
        else:
            rest_a, rest_b = rec_a[1:], rec_b[1:]
        if name_a in MAPPINGS:
            self.mapping(path, i, rest_a, j, rest_b)
        elif name_a in SETS:
            self.members(path, i, rest_a, j, rest_b)
        else:
            self.items(path, i, rest_a, j, rest_b)

    @staticmethod
    def enum_like(name, record, fields):
        """An enum member's record: a class (not an autosave adapter) without fields
        whose record holds one name. Shown as Color.RED, not as an item list."""
        return (not fields and len(record) == 2 and type(record[1]) is str
                and name not in ADAPTERS_BY_NAME)

    def fields(self, path, i, rec_a, fields_a, j, rec_b, fields_b):
        b_at = {f: k for k, f in enumerate(fields_b, 1)}
        for k, field in enumerate(fields_a, 1):
            here = (path, "." + field)
            if k >= len(rec_a):
                break
            if field not in b_at:
                self.change(here, "field removed", self.show(self.a, rec_a[k], i), None)
            elif b_at[field] < len(rec_b):
                self.queue.append((here, rec_a[k], i, rec_b[b_at[field]], j))
        a_fields = set(fields_a)
        for k, field in enumerate(fields_b, 1):
            if field not in a_fields and k < len(rec_b):
                self.change((path, "." + field), "field added", None,
                            self.show(self.b, rec_b[k], j))

    def items(self, path, i, rest_a, j, rest_b):
        for k in range(max(len(rest_a), len(rest_b))):
            here = (path, f"[{k}]")
            if k >= len(rest_b):
                self.change(here, "item removed", self.show(self.a, rest_a[k], i), None)
            elif k >= len(rest_a):
                self.change(here, "item added", None, self.show(self.b, rest_b[k], j))
            else:
                self.queue.append((here, rest_a[k], i, rest_b[k], j))

    def mapping(self, path, i, rest_a, j, rest_b):
        keys_a, keys_b = rest_a[0::2], rest_b[0::2]
        scalar = lambda keys: all(type(k) in (str, int, float, bool, bytes, type(None))
                                  for k in keys)
        if not (scalar(keys_a) and scalar(keys_b)):
            return self.items(path, i, rest_a, j, rest_b)
        b_value = {(type(k), k): v for k, v in zip(keys_b, rest_b[1::2])}
        a_keys = set()
        for key, value in zip(keys_a, rest_a[1::2]):
            a_keys.add((type(key), key))
            here = (path, _key_text(key))
            if (type(key), key) in b_value:
                self.queue.append((here, value, i, b_value[(type(key), key)], j))
            else:
                self.change(here, "item removed", self.show(self.a, value, i), None)
        for key, value in zip(keys_b, rest_b[1::2]):
            if (type(key), key) not in a_keys:
                self.change((path, _key_text(key)), "item added", None,
                            self.show(self.b, value, j))

    def members(self, path, i, rest_a, j, rest_b):
        plain = lambda v: type(v) is not list and v is not ABSENT
        a_set = {(type(v), v) for v in rest_a if plain(v)}
        b_set = {(type(v), v) for v in rest_b if plain(v)}
        for t, v in sorted(a_set - b_set, key=repr):
            self.change(path, "member removed", self.show(self.a, v, i), None)
        for t, v in sorted(b_set - a_set, key=repr):
            self.change(path, "member added", None, self.show(self.b, v, j))
        refs_a = [v for v in rest_a if not plain(v)]
        refs_b = [v for v in rest_b if not plain(v)]
        self.items((path, "{}"), i, refs_a, j, refs_b)


def diff(data_a, data_b, limit=200, names=("A", "B")):
    """The Diff of two saves (bytes); FormatError naming the file that is malformed."""
    a, b = Side(data_a, names[0]), Side(data_b, names[1])
    walk = Walk(a, b, limit).run()
    count_a, count_b = a.counts(), b.counts()
    classes = [(name, count_a.get(name, 0), count_b.get(name, 0))
               for name in sorted(set(count_a) | set(count_b))]
    return Diff(len(a.records), len(b.records), classes, walk.changes, walk.total)
