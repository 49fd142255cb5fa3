"""The checkpoint log: a history tree of node records, checkpoints, bookmarks, reached
data and globals, kept in one crash-safe file (log/file.py, docs/log-format.md).

A *node record* covers a range of steps of one named node along one path of play. Its
parent is the record play came from, and ``parent_step`` is the parent's last step on
that path. Entering a node makes a child of the current record (or finds the child with
the same name and key). Stepping from a position that is not the last step of its record
starts a *branch*: a new record for the same node, so history is never overwritten.
Checkpoints (full states from the serializer) are taken at a record's first step and
every ``checkpoint_every`` steps; restoring loads the nearest one at or before the
target and lets the game replay the rest.

Everything is a metadata event appended to the file at ``flush()``; opening replays
them (and never reads a checkpoint until one is restored).
"""

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Self

import attrs

from ..errors import CorruptLogError, ReadOnlyLogError, StepOrderError
from ..files import dumps, dumps_later
from .file import PAYLOAD, LogFile
from .content import HASH_SIZE, Content, Report, Table, check_restorable, is_branch, plan
from .chain import load_checkpoint_at
from .tables import newest_step, pack_row
from .replay import Replay
from .writer import CheckpointWriter

_PLAIN_KEYS = (type(None), bool, int, str, bytes)
# A node key tells apart entries of one node; reached keys are str, int or bytes.
NodeKey = None | bool | int | str | bytes
ReachedKey = int | str | bytes
# The game's content: node name -> its step keys, or a callable giving a node's keys
# (None for a node the game no longer has).
StepKey = str | bytes | int
ContentSource = Mapping[str, Iterable[StepKey]] | Callable[[str], Iterable[StepKey] | None]
# replay(state, steps) re-executes ``steps`` steps from ``state`` and returns the state.
Replayer = Callable[[Any, int], Any]
# What msgpack can write: a key outside this range would make every later flush fail.
_INT_RANGE = range(-2 ** 63, 2 ** 64)


class _NoState:
    """enter() without the state the node starts from (None is a state like any other)."""

    def __repr__(self):
        return "<no state>"


_NO_STATE: Any = _NoState()


def _check_key(key, what):
    if type(key) is int and key not in _INT_RANGE:
        raise ValueError(f"{what} {key} does not fit in 64 bits")


@attrs.frozen
class Position:
    """A step of play: ``step`` of node ``node``, in node record ``record``."""
    node: str
    step: int
    record: int


@attrs.define
class NodeRecord:
    id: int
    name: str
    key: object
    parent: int | None
    parent_step: int | None      # the parent's last step on this path
    first_step: int
    last_step: int               # first_step - 1 while the record has no step
    checkpoints: dict = attrs.Factory(dict)   # step -> payload offset
    children: list = attrs.Factory(list)      # record ids, in creation order
    fid: int | None = None       # the content fingerprint it was recorded against
    # [count, offset] of the table segments sealed so far: its smallest steps (tables.py)
    segments: list = attrs.Factory(list)

    def row(self, append):
        """The record's snapshot row; ``append(bytes) -> offset`` writes the table
        segments it seals."""
        table, self.segments = pack_row(self.checkpoints, self.segments, append)
        row = [self.id, self.name, self.key, self.parent, self.parent_step, self.first_step,
               self.last_step, table]
        return row if self.fid is None else [*row, self.fid]


@attrs.frozen
class Bookmark:
    position: Position
    description: str
    created: float
    screenshot_offset: int
    _log: Any = attrs.field(repr=False, eq=False)

    @property
    def screenshot(self) -> bytes | None:
        """The screenshot bytes given to ``bookmark()``, read from the log, or None."""
        if not self.screenshot_offset:
            return None
        return self._log.file.read(self.screenshot_offset)[1]


class Reached:
    """Keys reached in any play (dialogue ids, endings): shared by every save slot."""

    def __init__(self, log):
        self._log = log
        self._keys = set()

    def add(self, key: ReachedKey) -> None:
        self._log.file.check_writable()
        if type(key) not in _PLAIN_KEYS or type(key) is bool:
            raise TypeError(f"reached keys are str, int or bytes, not {type(key).__name__}")
        _check_key(key, "a reached key")
        if key not in self._keys:
            self._keys.add(key)
            self._log._events.append(["reached", key])

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[ReachedKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def _drop(self, key):
        """Forget a key whose step the content removed (an upgrade's "unreach")."""
        self._keys.discard(key)


class CheckpointLog:
    """One player profile's whole history. See the module docstring and docs/log-format.md."""

    def __init__(self, file: LogFile, checkpoint_every: int, decode_globals: bool = True,
                 content: ContentSource | None = None, full_every: int = 16) -> None:
        """A history over an open LogFile. With ``decode_globals=False`` the globals
        stay undecoded bytes (``globals`` is None): nothing the file names is built.
        ``content`` (node -> step keys, or a callable) upgrades the history to it: see
        autosave/log/content.py and ``upgrade_report``. ``full_every``: a whole
        checkpoint every so many delta checkpoints (0: whole ones only)."""
        if not isinstance(checkpoint_every, int) or checkpoint_every < 1:
            file.close()
            raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")
        if type(full_every) is not int or full_every < 0:
            file.close()
            raise ValueError(f"full_every must be an int >= 0, got {full_every!r}")
        self.file = file
        self.checkpoint_every = checkpoint_every
        # Compresses checkpoints off the game's thread (writer.py).
        self._writer = CheckpointWriter(file, full_every)
        self._taken: dict[int, int] = {}     # record id -> its newest checkpoint's step
        self._records: dict[int, NodeRecord] = {}     # id -> NodeRecord
        self.roots: list[int] = []   # ids of records without a parent
        self._bookmarks: dict[str, Bookmark] = {}   # slot -> Bookmark
        self.reached = Reached(self)
        # None only with decode_globals=False (autosave inspect), which open() never asks
        self.globals: dict[str, Any] = {}
        self._events: list[Any] = []       # metadata events not flushed yet
        self._extended: dict[int, int] = {}   # record id -> last step, not flushed yet
        self._saved_globals = dumps({})
        self._saved_at: tuple[int, int] | None = None   # (record id, step) as of the last flush
        self._current: NodeRecord | None = None
        self._step: int = 0          # current step in it (first_step - 1 before the first)
        self._reentered = False      # entered an existing record: its first step is reused
        self._bare = False           # enter() was not given the state the node starts from
        self._content = Table()      # content fingerprints (content.py)
        self._source = None
        self.upgrade_report: Report | None = None   # what opening with ``content`` changed (content.Report)
        try:
            Replay(self).run(decode_globals)
            if content is not None:
                self._source = Content(content)
                self._upgrade()
        except BaseException:
            file.close()
            raise
        if not decode_globals:
            self.globals = None     # type: ignore[assignment]
        elif not file.writable:
            self.globals = _FrozenDict(self.globals, file.path)

    @classmethod
    def open(cls, path: str | os.PathLike[str], checkpoint_every: int = 10, *,
             writable: bool = True, content: ContentSource | None = None,
             full_every: int = 16, **file_options: Any) -> Self:
        """Open (or create) the log at ``path`` for writing (one writer at a time), or
        with ``writable=False`` for reading: then every mutation raises ReadOnlyLogError.

        ``content``: the game's content, node name -> [step key, ...] (or a callable
        node -> keys, None for a node it no longer has). A history recorded against
        other content is upgraded to it, in one commit: see ``upgrade_report``.

        ``full_every``: checkpoints after the first hold only what changed since the one
        before (delta checkpoints), with a whole one every ``full_every`` deltas; 0
        writes whole ones only (docs/log-format.md, "Checkpoints")."""
        return cls(LogFile(path, writable=writable, **file_options), checkpoint_every,
                   content=content, full_every=full_every)

    def _upgrade(self):
        """Map the history onto the current content (content.plan), apply the events
        as a reopen would replay them, and commit them (a reader keeps them in memory)."""
        for record in self._records.values():
            self._source.hashes(record.name)     # the game's content errors are its own
        replay = Replay(self)
        # Whatever the history holds (it may be forged), planning gives events or a
        # CorruptLogError, as replaying does.
        found = []
        replay.guard(self.file.slot.meta, lambda: found.extend(plan(self, self._source)))
        events, self.upgrade_report = found
        if events:
            replay.guard(self.file.slot.meta, replay.events, events)
            replay.guard(self.file.slot.meta, replay.check_history)
            self._events.extend(events)
            if self.file.writable:
                try:
                    self.flush()
                except OSError:
                    # Rolled back (a full disk): nothing is lost, the events stay pending
                    # for the next flush, and the profile still opens. A poisoned writer
                    # is unusable: the caller reopens.
                    if self.file.poisoned:
                        raise

    def _declare(self, name):
        """Record the current content's fingerprint of ``name`` before a record of it
        is made, if the table does not hold it yet."""
        hashes = self._source.hashes(name)
        if hashes is None:
            # Its positions would be lost at once: a game entering a node it did not
            # describe has a content bug, better found here than at a player's restore.
            raise ValueError(f"node {name!r} is not in the content this log was opened with")
        fid = self._content.current.get(name)
        if fid is None or self._content.prints[fid][1] != hashes:
            fid = self._content.add(name, hashes)
            self._events.append(["content", fid, name, hashes])

    @property
    def records(self) -> dict[int, "NodeRecord"]:
        """Record id -> NodeRecord, every checkpoint taken so far in (waits for them)."""
        self._settle()
        return self._records

    def _settle(self, strict: bool = False) -> None:
        """Append the checkpoints still compressing (``strict``: even if poisoned)."""
        file = self.file
        if file.writable and file.fd is not None and (strict or not file.poisoned) and (
                os.getpid() == file.pid):
            self._writer.settle()

    @property
    def recovered(self) -> int:
        """Bytes of an unflushed, torn tail cut when the log was opened (0 if none)."""
        return self.file.recovered

    @property
    def recovery(self) -> list[str]:
        """What opening had to work around (damaged slots, a dropped last commit,
        commits found by scanning), one line each; empty for a log closed cleanly."""
        return list(self.file.recovery)

    # -- play -----------------------------------------------------------------------------

    def enter(self, node: str, key: NodeKey = None, *, state: Any = _NO_STATE) -> Position:
        """Begin node ``node``; ``key`` tells apart entries with different variables.

        ``state``: the state the node starts from, before its first line runs. It is
        recorded as the node's step 0, and each later ``step(state)`` is called after a
        line ran: the *i*-th holds the state after line *i - 1*, before line *i*, which
        is what a content patch needs (docs/log.md). A log opened with ``content``
        requires it (StepOrderError) and refuses (ValueError) a node the content lacks.
        Without ``state`` the game's first ``step()`` is the node's step 0."""
        self.file.check_writable()
        if not isinstance(node, str) or not node:
            raise TypeError(f"a node name is a non-empty str, not {node!r}")
        if type(key) not in _PLAIN_KEYS:
            raise TypeError(f"a node key is None, bool, int, str or bytes, not {type(key).__name__}")
        _check_key(key, "a node key")
        node = str(node)
        if self._source is not None:
            self._declare(node)
        self._enter(node, key)
        self._bare = False
        if state is _NO_STATE:
            self._bare = True
        else:
            try:
                self.step(state)
            except BaseException:
                self._bare = True        # a state that could not be recorded is no start
                raise
        return self._here()

    def _enter(self, node, key):
        parent = self._current
        siblings = parent.children if parent is not None else self.roots
        for rid in siblings:
            record = self._records[rid]
            if record.name == node and record.key == key and record.first_step == 0 and (
                    parent is None or record.parent_step == self._step):
                self._current, self._step, self._reentered = record, -1, True
                return
        record = self._new_record(node, key, parent, 0)
        self._current, self._step, self._reentered = record, -1, False

    def step(self, state: object, checkpoint: bool | None = None) -> Position:
        """One step of play ran and reached game state ``state``: call it after each line
        (after ``enter(node, state=...)`` recorded the state the node starts from, and
        after ``restore()``, whose state is already recorded: advance first). A
        checkpoint is written at a record's first step, every ``checkpoint_every``
        steps, or when ``checkpoint`` is True (never when it is False, except at a
        record's first step)."""
        self.file.check_writable()
        self._writer.collect()            # a failure on the writer thread surfaces here
        record = self._current
        if record is None:
            raise RuntimeError("step() before enter(): there is no node to step in")
        nxt = self._step + 1
        if self._source is not None:
            self._check_order(record, nxt)
        self._bare = False
        branch = nxt <= record.last_step
        if branch and self._reentered and nxt == record.first_step:
            self._step, self._reentered = nxt, False         # the same start, reached again
            return self._here()
        # Checkpoints are added in step order, so the newest is the last key (or one
        # still compressing).
        newest = self._taken.get(record.id)
        if newest is None:
            newest = newest_step(record.checkpoints)
        if newest is None:
            newest = nxt - self.checkpoint_every
        due = branch or nxt == record.first_step or checkpoint or (
            checkpoint is None and nxt - newest >= self.checkpoint_every)
        # Walked (a snapshot; encoded on the writer's thread) before anything changes:
        # a state that cannot be saved, or a failure of the thread, changes nothing.
        data = dumps_later(state) if due else None
        if data is not None:
            self._writer.make_room()
        if branch:
            record = self._new_record(record.name, record.key, record, nxt)
            self._current = record
        self._reentered = False
        record.last_step = self._extended[record.id] = self._step = nxt
        if data is not None:
            self._taken[record.id] = nxt
            self._writer.submit(data, self._checkpointed(record, nxt))
        return self._here()

    def _checkpointed(self, record, step):
        # The event takes its place now, its offset once the payload is appended: the
        # same play writes the same events, however far the writer's thread got.
        event = ["checkpoint", record.id, step, None]
        self._events.append(event)
        def done(offset):  # noqa: E306
            record.checkpoints[step] = event[3] = offset
        return done

    def _check_order(self, record, nxt):
        """Under content, step *i* must hold the state before line *i* (docs/log.md): a
        first step after a bare enter() may hold the state after line 0, and a step past
        the node's lines is one more than the content has (a duplicated step)."""
        name = record.name
        if self._bare:
            raise StepOrderError(
                f"node {name!r}: this log was opened with content, so the state a node "
                f"starts from goes to enter(): log.enter({name!r}, state=<the state before "
                f"its first line>), then log.step(state) after each line runs. A first "
                f"step() after a bare enter() may hold the state after line 0, which a "
                f"patch of that line would restore stale (docs/log.md)")
        lines = len(self._source.hashes(name) or b"") // HASH_SIZE
        if nxt > lines:
            raise StepOrderError(
                f"node {name!r} has {lines} lines in the content this log was opened "
                f"with: its steps are 0 (the state it starts from) to {lines} (after its "
                f"last line), and this would be step {nxt}. Call step() once per line "
                f"that ran; after restore() the restored state is already recorded: "
                f"advance before stepping (docs/log.md)")

    def _here(self) -> Position:
        # after enter() or step(): the log is at a node
        here = self.position
        assert here is not None
        return here

    @property
    def position(self) -> Position | None:
        """The Position of the last step (step first_step - 1 right after enter)."""
        if self._current is None:
            return None
        return Position(self._current.name, self._step, self._current.id)

    def restore(self, position: Position, replay: Replayer | None = None) -> Any:
        """The game state at ``position``; play continues from there (new steps branch).
        That state is already recorded at ``position``: the game advances it, then calls
        ``step()`` (stepping it again would record it twice).

        Loads the nearest checkpoint at or before the position, then calls
        ``replay(state, steps)``, which must re-execute ``steps`` steps without calling
        ``step()`` and return the resulting state."""
        record = self._record_at(position)
        self._settle(strict=True)         # its checkpoint may be compressing still
        check_restorable(self, record)
        # The nearest checkpoint at or before the position; an upgrade may have dropped
        # those of a branch (content.py), then its parent records in the node have one.
        holder, step = record, position.step
        while True:
            at = [s for s in holder.checkpoints if s <= step]
            if at or not is_branch(self._records, holder):
                break
            holder, step = self._records[holder.parent], holder.parent_step or 0
        if not at:            # only a forged file: every record of a node starts with one
            raise CorruptLogError(f"{self.file.path}: no checkpoint at or before {position} "
                                  f"in record #{holder.id} or the records it branches from")
        base = max(at)
        state = load_checkpoint_at(self.file, holder.checkpoints[base])
        steps = position.step - base
        if steps:
            if replay is None:
                raise ValueError(
                    f"{position} is {steps} steps after the nearest checkpoint (step {base}); "
                    f"pass replay=lambda state, steps: ... to re-execute them")
            state = replay(state, steps)
        self._current, self._step, self._reentered = record, position.step, False
        self._bare = False
        return state

    def back(self, n: int = 1) -> Position:
        """The Position ``n`` steps earlier along the history leading here."""
        if n < 0:
            raise ValueError("back() counts steps backwards: n >= 0")
        record, step = self._current, self._step
        if record is None:
            raise RuntimeError("back() before enter()")
        while True:
            if step - n >= record.first_step:
                return Position(record.name, step - n, record.id)
            n -= step - record.first_step + 1
            if record.parent is None:
                raise ValueError("back() goes before the first step of the history")
            record, step = self._records[record.parent], record.parent_step or 0

    def history(self) -> list[tuple[str, int, int]]:
        """[(node name, first step, last step)] of the path from the root to here."""
        out: list[tuple[str, int, int]] = []
        record, step = self._current, self._step
        while record is not None:
            out.append((record.name, record.first_step, step))
            step = record.parent_step or 0
            record = self._records[record.parent] if record.parent is not None else None
        return out[::-1]

    # -- bookmarks --------------------------------------------------------------------------

    @property
    def bookmarks(self) -> Mapping[str, "Bookmark"]:
        """slot -> Bookmark, read-only; see bookmark() and delete_bookmark()."""
        return _ReadOnly(self._bookmarks)

    def bookmark(self, slot: str, description: str = "", screenshot: bytes | None = None,
                 position: Position | None = None) -> Bookmark:
        """Point save slot ``slot`` at ``position`` (default: here). Instant: no state is
        written, the slot refers into the history."""
        self.file.check_writable()
        if not isinstance(slot, str) or not slot:
            raise TypeError(f"a bookmark slot is a non-empty str, not {slot!r}")
        slot = str(slot)
        position = position or self.position
        if position is None:
            raise RuntimeError("bookmark() before any step")
        self._record_at(position)
        if screenshot is not None:
            self._writer.settle()         # appended after the checkpoints before it
        else:
            self._writer.collect()
        shot = self.file.append(PAYLOAD, bytes(screenshot)) if screenshot is not None else 0
        mark = Bookmark(position, str(description), time.time(), shot, self)
        self._bookmarks[slot] = mark
        self._events.append(["bookmark", slot, position.record, position.step,
                             mark.description, mark.created, shot])
        return mark

    def delete_bookmark(self, slot: str) -> None:
        """Remove save slot ``slot`` (KeyError if there is none); its history stays."""
        self.file.check_writable()
        del self._bookmarks[slot]
        self._events.append(["unbookmark", slot])

    # -- durability ----------------------------------------------------------------------

    def flush(self) -> None:
        """Make everything so far durable (one atomic commit).

        If it raises, nothing of it is committed and nothing is forgotten: the events
        stay pending for the next flush, unless the writer is poisoned
        (LogPoisonedError: close and reopen; see docs/log-format.md)."""
        self.file.check_writable()
        self._writer.settle()
        events = self._events + [["steps", rid, last] for rid, last in self._extended.items()]
        saved = dumps(self.globals)
        if saved != self._saved_globals:
            events.append(["globals", saved])
        at = (self._current.id, self._step) if self._current is not None else None
        if at is not None and at != self._saved_at:     # None only before the first enter
            events.append(["at", *at])
        self.file.commit(events, lambda: self._state(saved, at))
        self._events = []
        self._extended.clear()
        self._saved_globals, self._saved_at = saved, at

    def close(self) -> None:
        """Flush (a writer in its own process, not poisoned) and release the file.
        Idempotent; the file is released even when the flush raises."""
        file = self.file
        if file.fd is None:
            return
        try:
            if file.writable and not file.poisoned and os.getpid() == file.pid:
                self.flush()
        finally:
            self._writer.close()
            file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self._writer.close()
            self.file.close()        # unflushed work is lost, as after a crash

    # -- internals -----------------------------------------------------------------------

    @staticmethod
    def _make_record(rid, name, key, parent, parent_step, first):
        return NodeRecord(rid, name, key, parent, parent_step, first, first - 1)

    def _make_bookmark(self, record, step, description, created, shot):
        return Bookmark(Position(record.name, step, record.id), description, created, shot, self)

    def _new_record(self, name, key, parent, first_step):
        rid = len(self._records)
        record = NodeRecord(rid, name, key, parent.id if parent else None,
                            self._step if parent else None, first_step, first_step - 1,
                            fid=self._content.current.get(name))
        self._records[rid] = record
        (parent.children if parent else self.roots).append(rid)
        self._events.append(["node", rid, name, key, record.parent, record.parent_step,
                             first_step])
        return record

    def _record_at(self, position):
        record = self._records.get(getattr(position, "record", None))
        if record is None or record.name != position.node or not (
                record.first_step <= position.step <= record.last_step):
            raise ValueError(f"{position!r} is not a step of this log's history")
        return record

    def _state(self, saved_globals, at):
        def append(segment):
            return self.file.append(PAYLOAD, segment)
        content = {"content": self._content.rows()} if self._content.prints else {}
        return {**content,
            "records": [r.row(append) for r in self._records.values()],
            "bookmarks": [[slot, b.position.record, b.position.step, b.description, b.created,
                           b.screenshot_offset] for slot, b in self._bookmarks.items()],
            "reached": sorted(self.reached, key=lambda k: (type(k).__name__, k)),
            "globals": saved_globals,
            "at": list(at) if at is not None else None,
        }


class _ReadOnly(Mapping):
    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class _FrozenDict(dict):
    """The globals of a log opened read-only: reading works, changing says why not."""

    def __init__(self, data, path):
        super().__init__(data)
        self._path = path

    def _refuse(self, *args, **kwargs):
        raise ReadOnlyLogError(f"{self._path} is open read-only: its globals cannot change")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse
