"""`autosave diff A B`: two saves compared by structure, safe on files from anyone.

Both files are only decoded (``autosave.format.wire.decode``): no object is built, nothing
is imported or called, so the files may come from strangers. The comparison walks both
graphs from the root at once, pairing records met along the same object path
(``root.npcs[3].hp``): it reports changed values, changed classes, fields and items
added or removed, and, for the whole file, the record count of every class. Each
record of A is visited once and the walk is a queue, so a save of N bytes is compared
in time linear in N, however deep its graph (a path is shown with its middle elided
when it is long).
"""

from bisect import bisect_left
from collections import Counter, deque

import attrs

from ..model.adapters import ADAPTERS_BY_NAME
from ..errors import FormatError
from ..format.forms import target as reference_target
from ..checks.limits import FLOOD_MIN, OverBudget, check_flood, file_budget
from ..format.expand import records_of
from ..format.wire import ABSENT

COROUTINE = "autosave.coroutine"
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
            # decoded under the file's own budget, as a load decodes (docs/security.md);
            # the walk below builds no object a record declares, and is linear in both
            # files (docs/security.md, "Budgets")
            with file_budget(len(data)):
                self.types, self.records, self.root = records_of(data)
        except FormatError as e:
            raise FormatError(f"{which}: {e}") from None
        except OverBudget as e:
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
    # repr only where == is not enough (NaN): repr of every value would be paid once
    # per pairing, and one record of B may be paired with many of A
    return type(a) is type(b) and (a == b or type(a) is float and repr(a) == repr(b))


def _key_text(value):
    if type(value) is int and value.bit_length() > 128:
        return f"[<int of {value.bit_length()} bits>]"     # no quadratic int -> str
    return "[" + repr(value)[:40] + "]"


class Walk:
    def __init__(self, a, b, limit):
        self.a, self.b, self.limit = a, b, limit
        self.changes, self.total = [], 0
        self.seen = bytearray(len(a.records))
        self.queue = deque()
        # B's tables, built once per record (or type): a record of B may be paired
        # with many of A, and each pairing must cost only what A's record holds
        self.b_maps, self.b_sets, self.b_fields, self.b_rest = {}, {}, {}, {}

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
        rest_a = rec_a[1 + len(fields_a):]
        # B's record sliced once: it may be paired with many records of A
        rest_b = self.b_rest.get(j)
        if rest_b is None:
            rest_b = self.b_rest[j] = rec_b[1 + len(fields_b):]
        if name_a == COROUTINE and len(rest_a) >= 2 and len(rest_b) >= 2:
            self.coroutine(path, i, rest_a, j, rest_b)
        elif name_a in MAPPINGS:
            self.mapping(path, i, rest_a, j, rest_b)
        elif name_a in SETS:
            self.members(path, i, rest_a, j, rest_b)
        else:
            self.items(path, i, rest_a, j, rest_b)

    def coroutine(self, path, i, rest_a, j, rest_b):
        """A suspended coroutine ``[function, label, name, value, ...]``: its function,
        where it is parked, and its locals by name (not as list positions)."""
        self.queue.append(((path, ".<function>"), rest_a[0], i, rest_b[0], j))
        label_a, label_b = rest_a[1], rest_b[1]
        if not _same(label_a, label_b):
            self.change((path, ".<label>"), "value", label_a, label_b)
        here = (path, f"{{at {str(label_b)[:40]!r}}}")
        locals_a = dict(zip(rest_a[2::2], rest_a[3::2]))
        locals_b = dict(zip(rest_b[2::2], rest_b[3::2]))
        for name, value in locals_a.items():
            segment = (here, f".{name}" if type(name) is str else f"[{name!r:.40}]")
            if name in locals_b:
                self.queue.append((segment, value, i, locals_b[name], j))
            else:
                self.change(segment, "local removed", self.show(self.a, value, i), None)
        for name, value in locals_b.items():
            if name not in locals_a and self.room():
                self.change((here, f".{name}" if type(name) is str else f"[{name!r:.40}]"),
                            "local added", None, self.show(self.b, value, j))
            elif name not in locals_a:
                self.total += 1

    @staticmethod
    def enum_like(name, record, fields):
        """An enum member's record: a class (not an autosave adapter) without fields
        whose record holds one name. Shown as Color.RED, not as an item list."""
        return (not fields and len(record) == 2 and type(record[1]) is str
                and name not in ADAPTERS_BY_NAME)

    def room(self):
        return len(self.changes) < self.limit

    def items(self, path, i, rest_a, j, rest_b):
        """Item by item, in time linear in A's record: items only B holds are counted,
        and listed only while the report has room."""
        common = min(len(rest_a), len(rest_b))
        for k in range(common):
            self.queue.append(((path, f"[{k}]"), rest_a[k], i, rest_b[k], j))
        for k in range(common, len(rest_a)):
            self.change((path, f"[{k}]"), "item removed", self.show(self.a, rest_a[k], i),
                        None)
        added = len(rest_b) - common
        if added > 0:
            shown = min(added, max(self.limit - len(self.changes), 0))
            for k in range(common, common + shown):
                self.change((path, f"[{k}]"), "item added", None,
                            self.show(self.b, rest_b[k], j))
            self.total += added - shown

    def fields(self, path, i, rec_a, fields_a, j, rec_b, fields_b):
        """Field by field, in time linear in A's record: B's type's tables are built
        once, and the fields only B holds are counted from them."""
        b_at, b_order, b_positions = self.field_tables(j, fields_b)
        a_fields = set()
        shared = 0
        for k, field in enumerate(fields_a, 1):
            if k >= len(rec_a):
                break
            a_fields.add(field)
            here = (path, "." + field)
            at = b_at.get(field)
            if at is None:
                self.change(here, "field removed", self.show(self.a, rec_a[k], i), None)
            elif at < len(rec_b):
                shared += 1
                self.queue.append((here, rec_a[k], i, rec_b[at], j))
        extra = bisect_left(b_positions, len(rec_b)) - shared
        listed = 0
        if extra > 0 and self.room():
            for k, field in b_order:        # skips at most len(a_fields) fields
                if k >= len(rec_b) or not self.room():
                    break
                if field not in a_fields:
                    self.change((path, "." + field), "field added", None,
                                self.show(self.b, rec_b[k], j))
                    listed += 1
        self.total += max(extra - listed, 0)

    def field_tables(self, j, fields_b):
        """B's field -> position, its (position, field) list and its positions, sorted,
        once per B type."""
        t = self.b.records[j][0]
        tables = self.b_fields.get(t)
        if tables is None:
            b_at = {f: k for k, f in enumerate(fields_b, 1)}
            order = sorted((k, f) for f, k in b_at.items())
            tables = self.b_fields[t] = b_at, order, [k for k, _ in order]
        return tables

    def mapping(self, path, i, rest_a, j, rest_b):
        keys_a = rest_a[0::2]
        if not (_scalar(keys_a) and self.b_table(j, rest_b) is not None):
            return self.items(path, i, rest_a, j, rest_b)
        b_value = self.b_table(j, rest_b)
        _flood(keys_a, self.a.which, i)
        a_keys = set()
        for key, value in zip(keys_a, rest_a[1::2]):
            a_keys.add((type(key), key))
            here = (path, _key_text(key))
            if (type(key), key) in b_value:
                self.queue.append((here, value, i, b_value[(type(key), key)], j))
            else:
                self.change(here, "item removed", self.show(self.a, value, i), None)
        self.only_in_b(a_keys, b_value, lambda key, value: self.change(
            (path, _key_text(key[1])), "item added", None, self.show(self.b, value, j)))

    def b_table(self, j, rest_b):
        """(type, key) -> value of B's mapping record j, built once (None: not keyed
        by plain values)."""
        if j not in self.b_maps:
            keys_b = rest_b[0::2]
            table = None
            if _scalar(keys_b):
                _flood(keys_b, self.b.which, j)
                table = {(type(k), k): v for k, v in zip(keys_b, rest_b[1::2])}
            self.b_maps[j] = table
        return self.b_maps[j]

    def only_in_b(self, a_keys, b_table, report):
        """Report B's entries A lacks, in B's order: counted from the sizes, listed
        only while the report has room (a scan skips at most len(a_keys) entries)."""
        extra = len(b_table) - sum(1 for key in a_keys if key in b_table)
        listed = 0
        if extra > 0 and self.room():
            for key, value in b_table.items():
                if not self.room():
                    break
                if key not in a_keys:
                    report(key, value)
                    listed += 1
        self.total += max(extra - listed, 0)

    def members(self, path, i, rest_a, j, rest_b):
        def plain(v):
            return type(v) is not list and v is not ABSENT

        values_a = [v for v in rest_a if plain(v)]
        _flood(values_a, self.a.which, i)
        a_set = {(type(v), v) for v in values_a}
        tables = self.b_sets.get(j)
        if tables is None:
            values_b = [v for v in rest_b if plain(v)]
            _flood(values_b, self.b.which, j)
            tables = self.b_sets[j] = (
                dict.fromkeys(sorted({(type(v), v) for v in values_b}, key=_member_order)),
                [v for v in rest_b if not plain(v)])
        b_set, refs_b = tables
        for _, v in sorted(a_set.difference(b_set), key=_member_order):
            self.change(path, "member removed", self.show(self.a, v, i), None)
        self.only_in_b(a_set, b_set, lambda key, _: self.change(
            path, "member added", None, self.show(self.b, key[1], j)))
        refs_a = [v for v in rest_a if not plain(v)]
        self.items((path, "{}"), i, refs_a, j, refs_b)


def _scalar(keys):
    return all(type(k) in (str, int, float, bool, bytes, type(None)) for k in keys)


def _member_order(member):
    t, v = member
    return (t.__name__, _key_text(v))


def _flood(keys, which, record):
    """The loader's check on a dict or set the diff builds from a file's keys."""
    if len(keys) >= FLOOD_MIN:
        try:
            check_flood([(type(k), k) for k in keys], f"record {record}")
        except FormatError as e:
            raise FormatError(f"{which}: {e}") from None


def diff(data_a, data_b, limit=200, names=("A", "B")):
    """The Diff of two saves (bytes); FormatError naming the file that is malformed."""
    a, b = Side(data_a, names[0]), Side(data_b, names[1])
    walk = Walk(a, b, limit).run()
    count_a, count_b = a.counts(), b.counts()
    classes = [(name, count_a.get(name, 0), count_b.get(name, 0))
               for name in sorted(set(count_a) | set(count_b))]
    return Diff(len(a.records), len(b.records), classes, walk.changes, walk.total)
