"""Rebuilding a CheckpointLog's history from its metadata records, trusting nothing.

Every field of every event and snapshot is type- and range-checked before use, and the
whole history is checked once replayed (every step range holds its checkpoints and
bookmarks, every record with steps has a checkpoint at its first step), so that a log
that opens can restore each of its positions. Anything else is a CorruptLogError naming
the offset of the metadata record at fault; nothing else escapes.
"""

import math
import reprlib
import sys
from array import array

from ..errors import CorruptLogError, LoadError
from ..files import collector_paused, loads
from ..checks.limits import OverBudget, file_budget
from .content import is_branch
from .file import PAYLOAD
from .tables import SEGMENTED, TABLE, CheckpointTable, charge_table

PLAIN_KEYS = (type(None), bool, int, str, bytes)
REACHED_KEYS = {type(None), int, str, bytes}
INTS = {int}
NUMBERS = (int, float)


class Invalid(Exception):
    """One field of a metadata record is wrong (turned into a CorruptLogError)."""


class Replay:
    def __init__(self, log):
        self.log = log
        self.file = log.file
        self.records, self.roots = log._records, log.roots
        self.first_offset = self.file.block_size       # where payload records may be
        self.end = self.file.end
        self.globals_at = None                         # offset of the newest globals
        self.handlers = {"node": (self.node, 6), "steps": (self.steps, 2),
                         "checkpoint": (self.checkpoint, 3), "bookmark": (self.bookmark, 6),
                         "unbookmark": (self.unbookmark, 1), "reached": (self.reached, 1),
                         "globals": (self.globals, 1), "at": (self.at, 2),
                         "content": (self.content, 3), "remap": (self.remap, 6),
                         "unreach": (self.unreach, 1)}

    def run(self, decode_globals):
        # Hundreds of thousands of small objects that all live on: collecting them over
        # and over would cost more than building them. The checkpoint tables a snapshot
        # inflates are charged to the log's budget (docs/security.md).
        with collector_paused(), file_budget(self.end, decoded=False):
            self._run(decode_globals)

    def _run(self, decode_globals):
        snapshot, deltas = self.file.metadata()
        if snapshot is not None:
            self.guard(snapshot[0], self.snapshot, snapshot[1])
        for offset, events in deltas:
            self.guard(offset, self.events, events)
        self.guard(self.file.slot.meta, self.check_history)
        if decode_globals and self.globals_at is not None:
            try:
                self.log.globals = loads(self.log._saved_globals)
            except LoadError as e:
                e.add_note(f"in the globals of the metadata record at offset {self.globals_at}")
                raise
            except Exception as e:
                raise CorruptLogError(f"{self.file.path}: the globals in the metadata record at "
                                      f"offset {self.globals_at} do not load: "
                                      f"{type(e).__name__}") from None

    def guard(self, offset, fn, *args):
        self.offset = offset
        try:
            fn(*args)
        except CorruptLogError:
            raise
        except Invalid as e:
            raise CorruptLogError(f"{self.file.path}: metadata record at offset {offset}: "
                                  f"{e}") from None
        except Exception as e:        # a check this module lacks: still a LoadError
            raise CorruptLogError(f"{self.file.path}: metadata record at offset {offset} does "
                                  f"not describe a history ({type(e).__name__})") from None

    # -- records ------------------------------------------------------------------------------

    def events(self, events):
        if type(events) is not list:
            raise Invalid("the events are not a list")
        handlers, records = self.handlers, self.records
        for event in events:
            if type(event) is not list or not event or type(event[0]) is not str:
                raise Invalid(f"an event is not [kind, ...]: {_brief(event)}")
            if event[0] == "checkpoint" and len(event) == 4:
                # Most events of a long play: the checks of checkpoint(), inlined.
                _, rid, step, offset = event
                if type(rid) is int and type(step) is int and type(offset) is int:
                    record = records.get(rid)
                    if record is not None and step >= record.first_step:
                        record.checkpoints[step] = offset
                        continue
            handler = handlers.get(event[0])
            if handler is None or len(event) != handler[1] + 1:
                raise Invalid(f"unknown event or wrong field count: {_brief(event)}")
            handler[0](*event[1:])

    def snapshot(self, state):
        if type(state) is not dict or set(state) - {"content"} != {
                "records", "bookmarks", "reached", "globals", "at"}:
            raise Invalid("the snapshot is not a map of records, bookmarks, reached, "
                          "globals, at and content")
        rows, marks, reached = state["records"], state["bookmarks"], state["reached"]
        if type(rows) is not list or type(marks) is not list or type(reached) is not list:
            raise Invalid("records, bookmarks and reached are lists")
        prints = state.get("content", [])
        if type(prints) is not list:
            raise Invalid("the content table is not a list")
        for row in prints:
            if type(row) is not list or len(row) != 3:
                raise Invalid(f"a content row is not 3 fields: {_brief(row)}")
            self.content(*row)
        for row in rows:
            if type(row) is not list or len(row) not in (8, 9):
                raise Invalid(f"a record row is not 8 or 9 fields: {_brief(row)}")
            self.node(*row[:6])
            record = self.records[row[0]]
            # As written: a row without one was recorded without content.
            record.fid = self.fingerprint(row[8], record) if len(row) == 9 else None
            self.steps(row[0], row[6])
            checkpoints = self.row_checkpoints(row[0], row[7], record)
            record.checkpoints = checkpoints
        for mark in marks:
            if type(mark) is not list or len(mark) != 6:
                raise Invalid(f"a bookmark row is not 6 fields: {_brief(mark)}")
            self.bookmark(*mark)
        if not set(map(type, reached)) <= REACHED_KEYS:
            raise Invalid("a reached key is not None, an int, a str or bytes")
        self.log.reached._keys.update(reached)
        self.globals(state["globals"])
        if state["at"] is not None:
            if type(state["at"]) is not list or len(state["at"]) != 2:
                raise Invalid("at is not [record, step]")
            self.at(*state["at"])

    def row_checkpoints(self, rid, packed, record):
        """The checkpoints of a snapshot row: a version 3 table, int64 pairs (version 2)
        or [step, offset] lists (version 1)."""
        if type(packed) is list and len(packed) == 3 and packed[0] in (TABLE, SEGMENTED):
            segments, tail = [], packed
            if packed[0] == SEGMENTED:
                segments, tail = self.segments(rid, packed[1]), packed[2]
            if type(tail) is not list or len(tail) != 3 or tail[0] != TABLE:
                raise Invalid(f"the checkpoints of record {rid} end in no table")
            try:
                charge_table(tail[1] + sum(count for count, _ in segments), tail[2])
            except (ValueError, OverBudget, TypeError) as e:
                raise Invalid(f"the checkpoints of record {rid} are not a table: "
                              f"{e}") from None
            # inflated when first used: opening stays as fast however long the history
            record.segments = segments
            return CheckpointTable(tail[1], tail[2], self.file.path, self.offset, rid,
                                   segments, self.segment)
        elif type(packed) is bytes:
            if len(packed) % 16:
                raise Invalid(f"the checkpoints of record {rid} are not int64 pairs")
            pairs = array("q", packed)
            if sys.byteorder == "big":
                pairs.byteswap()
            steps, offsets = pairs[0::2], pairs[1::2]
        elif type(packed) is list:
            try:
                pairs = dict(packed)
                steps, offsets = list(pairs), list(pairs.values())
            except (TypeError, ValueError):
                raise Invalid(f"the checkpoints of record {rid} are not [step, offset] "
                              f"pairs") from None
            if not set(map(type, steps)) | set(map(type, offsets)) <= INTS:
                raise Invalid(f"a checkpoint of record {rid} is not [int step, int offset]")
        else:
            raise Invalid(f"the checkpoints of record {rid} are not int64 pairs")
        # Ints by construction: nothing else is checked per checkpoint at open. An offset
        # is checked against the committed data when it is read, as every record is;
        # a step out of its record's range could only pick a different checkpoint, which
        # a forged file can do anyway.
        return dict(zip(steps, offsets))

    def segments(self, rid, segments):
        """A segmented table's [[count, offset], ...]: counts ints >= 0 (charged with the
        tail), offsets of earlier records (checked when read)."""
        if type(segments) is not list or not all(
                type(seg) is list and len(seg) == 2 and type(seg[0]) is int and seg[0] >= 0
                and type(seg[1]) is int for seg in segments):
            raise Invalid(f"the segments of record {rid}'s checkpoints are not [count, "
                          f"offset] pairs")
        return segments

    def segment(self, offset):
        """The stream of a table segment, a payload record (read when first used)."""
        kind, body = self.file.read(offset)
        if kind != PAYLOAD:
            raise CorruptLogError(f"{self.file.path}: the record at offset {offset} is of "
                                  f"kind {kind}, not a table segment")
        return body

    # -- events ---------------------------------------------------------------------------

    def record(self, rid):
        if type(rid) is not int:
            raise Invalid(f"record id {_brief(rid)} is not an int")
        record = self.records.get(rid)
        if record is None:
            raise Invalid(f"record {rid} does not exist")
        return record

    def node(self, rid, name, key, parent, parent_step, first):
        if type(rid) is not int or rid != len(self.records):
            raise Invalid(f"node record {_brief(rid)} out of order")
        if type(name) is not str or not name:
            raise Invalid(f"the name of node record {rid} is not a non-empty str")
        if type(key) not in PLAIN_KEYS:
            raise Invalid(f"the key of node record {rid} is a {type(key).__name__}")
        if type(first) is not int or first < 0:
            raise Invalid(f"the first step of node record {rid} is not an int >= 0")
        if parent is None:
            if parent_step is not None:
                raise Invalid(f"node record {rid} has a parent step but no parent")
            siblings = self.roots
        else:
            siblings = self.record(parent).children
            if type(parent_step) is not int:
                raise Invalid(f"the parent step of node record {rid} is not an int")
        record = self.log._make_record(rid, name, key, parent, parent_step, first)
        record.fid = self.log._content.current.get(name)
        self.records[rid] = record
        siblings.append(rid)

    def steps(self, rid, last):
        record = self.record(rid)
        if type(last) is not int or last < record.first_step - 1:
            raise Invalid(f"the last step of record {rid} is not an int >= its first - 1")
        record.last_step = last

    def checkpoint(self, rid, step, offset):
        record = self.record(rid)
        if type(step) is not int or step < record.first_step:
            raise Invalid(f"a checkpoint step of record {rid} is not an int >= its first step")
        if type(offset) is not int:
            raise Invalid(f"the checkpoint of record {rid} at step {step} has an offset that "
                          f"is not an int")
        record.checkpoints[step] = offset

    def bookmark(self, slot, rid, step, description, created, shot):
        record = self.record(rid)
        if type(slot) is not str or not slot:
            raise Invalid("a bookmark slot is not a non-empty str")
        if type(step) is not int or type(description) is not str:
            raise Invalid(f"bookmark {slot!r} has a step that is not an int or a description "
                          f"that is not a str")
        if type(created) not in NUMBERS or not math.isfinite(created):
            raise Invalid(f"the creation time of bookmark {slot!r} is not a finite number")
        if type(shot) is not int or not (shot == 0 or self.first_offset <= shot < self.end):
            raise Invalid(f"the screenshot of bookmark {slot!r} is outside the committed data")
        self.log._bookmarks[slot] = self.log._make_bookmark(record, step, description,
                                                            created, shot)

    def unbookmark(self, slot):
        if type(slot) is not str:
            raise Invalid("a deleted bookmark slot is not a str")
        self.log._bookmarks.pop(slot, None)

    def content(self, fid, name, hashes):
        table = self.log._content
        if type(fid) is not int or fid != len(table.prints):
            raise Invalid(f"content fingerprint {_brief(fid)} out of order")
        if type(name) is not str or not name:
            raise Invalid(f"the node of content fingerprint {fid} is not a non-empty str")
        if not (hashes is None or type(hashes) is bytes and len(hashes) % 8 == 0):
            raise Invalid(f"content fingerprint {fid} is not 8-byte step hashes or nil")
        table.add(name, hashes)

    def fingerprint(self, fid, record):
        prints = self.log._content.prints
        if type(fid) is not int or not 0 <= fid < len(prints):
            raise Invalid(f"record {record.id} names content fingerprint {_brief(fid)}, "
                          f"which does not exist")
        if prints[fid][0] != record.name:
            raise Invalid(f"record {record.id} names the content fingerprint of another node")
        return fid

    def remap(self, rid, fid, first, last, parent_step, checkpoints):
        """A record's geometry under the content fingerprint ``fid`` (an upgrade)."""
        record = self.record(rid)
        if fid is not None:
            fid = self.fingerprint(fid, record)
        if type(first) is not int or first < 0 or type(last) is not int or last < first - 1:
            raise Invalid(f"the remapped steps of record {rid} are not ints first >= 0, "
                          f"last >= first - 1")
        if (parent_step is None) != (record.parent is None) or not (
                parent_step is None or type(parent_step) is int):
            raise Invalid(f"the remapped parent step of record {rid} does not fit its parent")
        record.segments = []
        record.checkpoints = self.row_checkpoints(rid, checkpoints, record)
        record.fid, record.first_step, record.last_step = fid, first, last
        record.parent_step = parent_step

    def unreach(self, key):
        if type(key) not in REACHED_KEYS:
            raise Invalid(f"a dropped reached key is a {type(key).__name__}")
        self.log.reached._drop(key)

    def reached(self, key):
        if type(key) not in REACHED_KEYS:
            raise Invalid(f"a reached key is a {type(key).__name__}")
        self.log.reached._keys.add(key)

    def globals(self, data):
        if type(data) is not bytes:
            raise Invalid("the globals are not bytes")
        self.log._saved_globals = data
        self.globals_at = self.offset

    def at(self, rid, step):
        record = self.record(rid)
        if type(step) is not int:
            raise Invalid("the last position's step is not an int")
        self.log._current, self.log._step = record, step
        self.log._saved_at = (rid, step)

    # -- the whole history ----------------------------------------------------------------

    def check_history(self):
        records = self.records
        for record in records.values():
            first, last = record.first_step, record.last_step
            if record.parent is not None:
                parent = records[record.parent]
                if not parent.first_step - 1 <= record.parent_step <= parent.last_step:
                    raise Invalid(f"record {record.id} branches from step "
                                  f"{record.parent_step}, outside record {parent.id}")
            # A branch whose first checkpoint an upgrade dropped restores from its
            # parent record in the same node (content.py); any other record needs one.
            if last >= first and first not in record.checkpoints and not is_branch(
                    records, record):
                raise Invalid(f"record {record.id} has no checkpoint at its first step")
        for slot, mark in self.log._bookmarks.items():
            record = records[mark.position.record]
            if not record.first_step <= mark.position.step <= record.last_step:
                raise Invalid(f"bookmark {slot!r} is not on a step of record {record.id}")
        current, step = self.log._current, self.log._step
        if current is not None and not current.first_step - 1 <= step <= current.last_step:
            raise Invalid(f"the last position is not on a step of record {current.id}")


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist = 3, 60, 60, 4


def _brief(value):
    """A short repr of a value read from the file, whatever its depth or size."""
    return _REPR.repr(value)
