"""Content fingerprints and the upgrade of a checkpoint log to changed content.

A game describes its content to the log as step keys per node: key *i* of a node says
what step *i* executes. The state passed to the *i*-th ``log.step`` after ``enter`` is
the state *before* step *i* runs (a dialogue line's checkpoint is taken as the line is
about to show), so the state at step *i* depends on the node's entry state and its
steps ``0 .. i-1`` only.

The log keeps a table of *fingerprints* (``fid`` -> node name and the xxh64 of each
step key, 8 bytes per step; None for a node the content no longer has) and each node
record names the fingerprint it was recorded against. Opening with content whose
fingerprint of a node differs appends (never rewrites) an upgrade: a new fingerprint,
and for each record of that node its new geometry, mapped through a longest common
subsequence of the step hashes (difflib's, as Nova's NodeUpgradeMaker diffs dialogue
hashes); bookmarks moved or dropped; reached keys of removed steps dropped. It is one
ordinary commit, so a crash leaves the log as it was or wholly upgraded.

Under the new content a checkpoint at step *s* still holds the state the new script
gives only if steps ``0 .. s-1`` are unchanged (``s`` at most the common prefix); the
others are dropped, and restore goes back to the nearest one left — along the branch's
parents in the same node, down to the node's entry, whose checkpoint never depends on
the node's steps — and replays forward under the new content.
"""

import difflib
import json
from bisect import bisect_right
from collections.abc import Mapping

import attrs
import xxhash

from ..errors import LoadError, LostPositionError
from .records import pack_checkpoints

HASH_SIZE = 8


def step_hash(key):
    """The 8-byte fingerprint of one step key (str, bytes or int)."""
    if type(key) is str:
        raw = b"s" + key.encode("utf-8", "surrogatepass")
    elif type(key) is bytes:
        raw = b"b" + key
    elif type(key) is int:
        raw = b"i" + str(key).encode()
    else:
        raise TypeError(f"a step key is a str, bytes or int, not {type(key).__name__}")
    return xxhash.xxh64_digest(raw)


def fingerprint(keys):
    """The fingerprint of a node's step keys: their hashes, concatenated."""
    if isinstance(keys, (str, bytes)):
        raise TypeError("a node's content is a sequence of step keys, not one str or bytes")
    return b"".join(step_hash(k) for k in keys)


def node_hash(hashes):
    """One hash for a whole node (Nova's nodeHashes), as hex; None for a removed node."""
    return None if hashes is None else xxhash.xxh64_hexdigest(hashes)


def split(hashes):
    return [hashes[i:i + HASH_SIZE] for i in range(0, len(hashes), HASH_SIZE)]


class Content:
    """The game's current content: a mapping node -> step keys, or a callable that
    returns the keys of a node (None, or KeyError, for a node the game no longer has).
    Each node is asked for once."""

    def __init__(self, source):
        if not (isinstance(source, Mapping) or callable(source)):
            raise TypeError("content is a mapping node -> step keys, or a callable node -> keys")
        self.source = source
        self.cache = {}

    def hashes(self, name):
        """The fingerprint of ``name`` under this content, or None if it has none."""
        if name not in self.cache:
            if isinstance(self.source, Mapping):
                keys = self.source.get(name)
            else:
                try:
                    keys = self.source(name)
                except KeyError:
                    keys = None
            self.cache[name] = None if keys is None else fingerprint(keys)
        return self.cache[name]


@attrs.define
class Table:
    """The fingerprints a log holds: fid -> (node name, hashes or None), and the
    current fid of each node name."""
    prints: list = attrs.Factory(list)
    current: dict = attrs.Factory(dict)

    def add(self, name, hashes):
        self.prints.append((name, hashes))
        self.current[name] = len(self.prints) - 1
        return len(self.prints) - 1

    def rows(self):
        return [[fid, name, hashes] for fid, (name, hashes) in enumerate(self.prints)]


# -- the mapping of one node's steps ----------------------------------------------------------

class StepMap:
    """Old step indexes of a node to new ones, from a diff of their step hashes."""

    def __init__(self, old, new):
        a, b = split(old), split(new)
        self.new_count = len(b)
        self.to_new = [None] * len(a)
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for i, j, n in matcher.get_matching_blocks():
            for k in range(n):
                self.to_new[i + k] = j + k
        prefix = 0
        while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
            prefix += 1
        self.prefix = prefix                 # checkpoints at steps <= prefix stay valid
        self.surviving = [i for i, j in enumerate(self.to_new) if j is not None]

    def exact(self, step):
        """The new index of old step ``step``, or None if it was removed. The step
        after the last line (the node played to its end) is the new node's end."""
        if step == len(self.to_new) and self.new_count:
            return self.new_count
        return self.to_new[step] if 0 <= step < len(self.to_new) else None

    def before(self, step):
        """The new index of the nearest surviving step at or before old ``step``; the
        node's start (0) if none survives (the state there is the node's entry
        state, which no step changes); -1 if the new content has no step."""
        if self.new_count == 0:
            return -1
        if step == len(self.to_new):
            return self.new_count
        k = bisect_right(self.surviving, step)
        return self.to_new[self.surviving[k - 1]] if k else 0

    def pairs(self):
        return [[i, j] for i, j in enumerate(self.to_new)]


def is_branch(records, record):
    """A record continuing its parent record of the same node (a branch)."""
    if record.parent is None or record.first_step == 0:
        return False
    parent = records[record.parent]
    return parent.name == record.name and record.first_step == record.parent_step + 1


# -- the plan --------------------------------------------------------------------------------

@attrs.define
class Report:
    """What opening with content changed. ``nodes``: name -> {"status": unchanged |
    changed | removed | adopted (recorded without content), "hash": the new node hash,
    and for changed nodes
    "steps": [[old, new or None], ...]}. ``bookmarks``: slot -> {"status": kept | moved
    | lost, "node", "old", "new", "note"}. ``reached_dropped``: reached keys of removed
    steps. ``records``: how many node records were remapped."""
    nodes: dict = attrs.Factory(dict)
    bookmarks: dict = attrs.Factory(dict)
    reached_dropped: list = attrs.Factory(list)
    records: int = 0

    @property
    def lost(self):
        return sorted(s for s, b in self.bookmarks.items() if b["status"] == "lost")

    def as_dict(self):
        return {"nodes": self.nodes, "bookmarks": self.bookmarks,
                "reached_dropped": [repr(k) for k in self.reached_dropped],
                "records_remapped": self.records}


def plan(log, content):
    """(events that upgrade ``log`` to ``content``, Report). Reads the log, changes
    nothing: the events are applied by replaying them, as a reopen would."""
    return ContentUpgrade(log, content).plan()


class ContentUpgrade:
    """The events that move a log's records, bookmarks, position and reached keys to
    changed content, each step a method: new content prints, remapped records, the
    nodes' report, bookmarks, the position, reached keys."""

    def __init__(self, log, content):
        self.log, self.content = log, content
        self.table, self.records, self.report = log._content, log._records, Report()
        self.events = []
        self.names = dict.fromkeys(r.name for r in self.records.values())
        self.new_fid = {}         # node name -> its content print under the new content
        self.fresh = {}           # new print id -> (name, hashes)
        self.maps = {}            # (old fid, new fid) -> StepMap
        self.geometry = {}        # record id -> new (first, last)
        self.kinds = {}           # node name -> "changed" / "adopted"

    def plan(self):
        self.add_prints()
        self.remap_records()
        self.report_nodes()
        self.move_bookmarks()
        self.move_position()
        self.drop_reached()
        return self.events, self.report

    def add_prints(self):
        """A content event for each node whose step hashes changed."""
        table = self.table
        for name in self.names:
            hashes = self.content.hashes(name)
            fid = table.current.get(name)
            if fid is not None and table.prints[fid][1] == hashes:
                self.new_fid[name] = fid
            else:
                self.new_fid[name] = len(table.prints) + len(self.events)
                self.events.append(["content", self.new_fid[name], name, hashes])
        self.fresh = {e[1]: (e[2], e[3]) for e in self.events}

    def print_of(self, fid):
        return self.fresh[fid] if fid in self.fresh else self.table.prints[fid]

    def step_map(self, old, new):
        if (old, new) not in self.maps:
            self.maps[old, new] = StepMap(self.print_of(old)[1], self.print_of(new)[1])
        return self.maps[old, new]

    def mapping(self, record):
        """The StepMap of a record that is remapped, "adopt", or None."""
        target = self.new_fid[record.name]
        if record.fid == target or self.print_of(target)[1] is None:
            return None
        if record.fid is None or self.print_of(record.fid)[1] is None:
            return "adopt"       # recorded without content, or in a node now back
        return self.step_map(record.fid, target)

    def new_parent_step(self, record):
        """The step of its parent a record branches from, under the new content."""
        parent_step = record.parent_step
        if record.parent is not None and record.parent in self.geometry:
            parent = self.records[record.parent]
            parent_map = self.mapping(parent)
            first, last = self.geometry[record.parent]
            if parent_step < parent.first_step:
                parent_step = first - 1
            elif isinstance(parent_map, StepMap):
                parent_step = min(max(parent_map.before(parent_step), first - 1), last)
        return parent_step

    def remap_records(self):
        records = self.records
        for record in records.values():          # ids ascend: parents come first
            m = self.mapping(record)
            parent_step = self.new_parent_step(record)
            if m is None and parent_step == record.parent_step:
                continue
            if isinstance(m, StepMap):
                self.kinds.setdefault(record.name, "changed")
                first = parent_step + 1 if is_branch(records, record) else 0
                last = max(m.before(record.last_step), first - 1) \
                    if record.last_step >= record.first_step else first - 1
                checkpoints = {s: o for s, o in record.checkpoints.items()
                               if s <= m.prefix and first <= s <= last}
            else:
                if m == "adopt":
                    self.kinds.setdefault(record.name, "adopted")
                first, last, checkpoints = record.first_step, record.last_step, \
                    record.checkpoints
            self.geometry[record.id] = (first, last)
            self.report.records += 1
            fid = self.new_fid[record.name] if m is not None else record.fid
            self.events.append(["remap", record.id, fid, first, last, parent_step,
                                pack_checkpoints(checkpoints)])

    def report_nodes(self):
        for name in self.names:
            hashes = self.print_of(self.new_fid[name])[1]
            status = self.kinds.get(name, "unchanged")
            if hashes is None:
                status = "removed"
            entry = {"status": status, "hash": node_hash(hashes)}
            if status == "changed":
                ms = [m for (_, new), m in self.maps.items() if self.print_of(new)[0] == name]
                current = [m for (old, new), m in self.maps.items()
                           if self.print_of(new)[0] == name
                           and old == self.table.current.get(name)]
                entry["steps"] = (current or ms)[0].pairs()
            self.report.nodes[name] = entry

    def move(self, record, step):
        """(record, step, note) of old ``step`` of ``record`` under the new content;
        None if it is lost."""
        m = self.mapping(record)
        if self.print_of(self.new_fid[record.name])[1] is None:
            return None
        if not isinstance(m, StepMap):
            return record, step, None
        new = m.exact(step)
        note = None
        if new is None:
            new = m.before(step)
            if new < 0:
                return None
            note = "its step was removed: moved to the nearest step before it"
        target = record
        while new < self.geometry.get(target.id, (target.first_step,))[0] and is_branch(
                self.records, target):
            target = self.records[target.parent]
        return target, new, note

    def move_bookmarks(self):
        report, events = self.report, self.events
        for slot, mark in self.log._bookmarks.items():
            record = self.records[mark.position.record]
            old = mark.position.step
            moved = self.move(record, old)
            if moved is None:
                gone = self.print_of(self.new_fid[record.name])[1] is None
                report.bookmarks[slot] = {"status": "lost", "node": record.name, "old": old,
                                          "new": None, "note": "its node was removed" if gone
                                          else "its node has no steps left"}
                events.append(["unbookmark", slot])
                continue
            target, new, note = moved
            status = "kept" if (target.id, new) == (record.id, old) else "moved"
            report.bookmarks[slot] = {"status": status, "node": record.name, "old": old,
                                      "new": new, "note": note}
            if status == "moved":
                events.append(["bookmark", slot, target.id, new, mark.description,
                               mark.created, mark.screenshot_offset])

    def move_position(self):
        log = self.log
        if log._current is None or log._current.id not in self.geometry:
            return
        record, step = log._current, log._step
        first, last = self.geometry[record.id]
        m = self.mapping(record)
        if isinstance(m, StepMap) and step >= record.first_step:
            step = min(max(m.before(step), first - 1), last)
        elif isinstance(m, StepMap):
            step = first - 1
        self.events.append(["at", record.id, step])

    def drop_reached(self):
        """Reached keys are the game's: those equal to a step key that a changed node
        dropped, and that no node of the new content has, point at lines that are gone."""
        old_hashes, new_hashes = set(), set()
        for old, _ in self.maps:
            old_hashes.update(split(self.print_of(old)[1]))
        for name in self.names:
            hashes = self.print_of(self.new_fid[name])[1]
            if hashes is not None:
                new_hashes.update(split(hashes))
        removed_fids = {r.fid for r in self.records.values() if r.fid is not None
                        and self.print_of(self.new_fid[r.name])[1] is None}
        for fid in removed_fids:
            old_hashes.update(split(self.print_of(fid)[1] or b""))
        gone = old_hashes - new_hashes
        if gone:
            for key in sorted(self.log.reached, key=lambda k: (type(k).__name__, k)):
                if type(key) in (str, bytes, int) and step_hash(key) in gone:
                    self.report.reached_dropped.append(key)
                    self.events.append(["unreach", key])


def check_restorable(log, record):
    """LostPositionError if ``record`` belongs to a node the content no longer has."""
    table = log._content
    fid = table.current.get(record.name)
    if fid is not None and table.prints[fid][1] is None:
        raise LostPositionError(f"{log.file.path}: node {record.name!r} (record #{record.id}) "
                                f"was removed from the content: its positions are lost")


def read_content(path):
    """The JSON content file of ``--content`` (inspect, compat verify): {node: [step key, ...]}."""
    if path is None:
        return None
    with open(path, "rb") as f:
        try:
            content = json.load(f)
        except ValueError as e:
            raise LoadError(f"--content {path}: not JSON ({e})") from None
    if not isinstance(content, dict) or not all(
            isinstance(keys, list) and all(type(k) in (str, int) for k in keys)
            for keys in content.values()):
        raise LoadError(f"--content {path}: not an object of node -> [step key, ...] "
                        f"(str or int keys)")
    return content
