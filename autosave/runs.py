"""Checkpoints of a run split into shards: a step is visible only once every shard of
it is durable (docs/runs.md).

Files appear whole by the checkpoint log's means: written to a temporary file,
fsynced, linked to their name, the directory fsynced; every call that changes the
disk goes through ``autosave.log.ops`` so that faults and crashes can be injected.
"""

import errno
import os
import re
import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgpack  # type: ignore[import-untyped]
import xxhash

from .errors import ChecksumError, FormatError
from .files import (PathLike, _remove_stale_temporaries, _stem, dumps, loads,
                    temporary_name, this_process)
from .format.wire import unframe
from .log.ops import SYSTEM, SystemOps

MAGIC = b"\x89ASVRUN\n"
HEAD = struct.Struct("<8sQ")          # magic, body length: what the checksum covers
CHECKSUM = struct.Struct("<Q")
MANIFEST_FORMAT = 1
MAX_MANIFEST = 64 << 20               # a manifest lists shards: never near this
STEP_END = 1 << 64
SHARD_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_COMMIT = re.compile(r"step-(\d{20})\.commit")
_SHARD = re.compile(r"step-(\d{20})\.([A-Za-z0-9_-]{1,64})\.shard")
_TEMPORARY = re.compile(r"\.(step-\d{20}\.(?:[A-Za-z0-9_-]{1,64}\.shard|commit))\.autosave-.*\.tmp")


class CheckpointError(Exception):
    """A RunCheckpoint call refused: a step or shard that is not there, a committed step
    written again, an argument out of range."""


class ShardReceipt(NamedTuple):
    """What ``save_shard`` returns and ``commit`` takes: the shard's file as written."""
    shard: str
    step: int
    size: int
    digest: int


def shard_name(shard: str | int) -> str:
    """The shard id as the files hold it (ints in decimal)."""
    if type(shard) is int and shard >= 0:
        return str(shard)
    if type(shard) is str and SHARD_ID.fullmatch(shard):
        return shard
    raise CheckpointError(f"a shard id is an int >= 0 or a str of 1 to 64 characters "
                          f"from A-Z a-z 0-9 _ -, not {shard!r}")


def _step(step: object) -> int:
    if type(step) is not int or not 0 <= step < STEP_END:
        raise CheckpointError(f"a step is an int from 0 to 2**64 - 1, not {step!r}")
    return step


def _digest(data: bytes | memoryview) -> int:
    return xxhash.xxh3_64_intdigest(data)


class RunCheckpoint:
    """A directory of checkpoints of a sharded run. ``ops``: the file operations
    (``autosave.log.faults.FaultyOps`` in tests)."""

    def __init__(self, directory: PathLike, *, ops: SystemOps | None = None) -> None:
        self.directory = os.path.abspath(os.fsdecode(os.fspath(directory)))
        self.ops = ops or SYSTEM
        os.makedirs(self.directory, exist_ok=True)

    def __repr__(self) -> str:
        return f"RunCheckpoint({self.directory!r})"

    # -- names --------------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    @staticmethod
    def shard_file(shard: str, step: int) -> str:
        return f"step-{step:020d}.{shard}.shard"

    @staticmethod
    def commit_file(step: int) -> str:
        return f"step-{step:020d}.commit"

    # -- writing ------------------------------------------------------------------------

    def _publish(self, name: str, data: bytes) -> None:
        """Make ``name`` hold ``data``, durably, appearing whole or not at all;
        FileExistsError if the name exists."""
        ops, directory = self.ops, self.directory
        stem = _stem(name)
        _remove_stale_temporaries(directory, stem)
        fd, tmp = self._create_temporary(stem)
        try:
            try:
                view, offset = memoryview(data), 0
                while offset < len(view):
                    written = ops.pwrite(fd, view[offset:], offset)
                    if not written:
                        raise OSError(errno.ENOSPC, "no space left: a write wrote nothing", tmp)
                    offset += written
                ops.fsync(fd)
            finally:
                ops.close(fd)
            ops.link(tmp, self._path(name))
        except BaseException:
            try:
                ops.unlink(tmp)
            except OSError:
                pass                 # the first error is the one to report
            raise
        ops.unlink(tmp)
        ops.fsync_directory(directory)

    def _create_temporary(self, stem: str) -> tuple[int, str]:
        host, start = this_process()
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            tmp = self._path(temporary_name(stem, os.getpid(), host, start))
            try:
                return self.ops.open(tmp, flags, 0o666), tmp
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no unused temporary file name", self.directory)

    def save_shard(self, shard: str | int, state: object, step: int) -> ShardReceipt:
        """Save one shard's ``state`` at ``step``, durably; the step stays invisible
        until ``commit``. Raises SaveError (nothing written) for a state that cannot be
        saved, CheckpointError if the step is committed."""
        shard, step = shard_name(shard), _step(step)
        if os.path.exists(self._path(self.commit_file(step))):
            raise CheckpointError(f"step {step} is committed in {self.directory}; a "
                                  f"committed step never changes: save to a later step")
        data = dumps(state)
        name = self.shard_file(shard, step)
        try:
            self._publish(name, data)
        except FileExistsError:
            # an earlier attempt at this uncommitted step (a shard restarted): replaced
            self.ops.unlink(self._path(name))
            self._publish(name, data)
        return ShardReceipt(shard, step, len(data), _digest(data))

    def commit(self, step: int, shards: Iterable[ShardReceipt | str | int],
               meta: object = None) -> None:
        """Make ``step`` visible, with every shard in ``shards`` (receipts from
        ``save_shard``, or shard ids): each must be in the directory, whole. ``meta``:
        anything autosave saves (the run's settings, a clock), read by ``meta(step)``."""
        step = _step(step)
        entries = {}
        for item in shards:
            if isinstance(item, ShardReceipt):
                shard, receipt = shard_name(item.shard), item
                if item.step != step:
                    raise CheckpointError(f"the receipt of shard {shard!r} is for step "
                                          f"{item.step}, not {step}")
            else:
                shard, receipt = shard_name(item), None
            if shard in entries:
                raise CheckpointError(f"shard {shard!r} is listed twice for step {step}")
            entries[shard] = self._durable_shard(shard, step, receipt)
        if not entries:
            raise CheckpointError("a step is committed with at least one shard")
        listed = [[shard, *entries[shard]] for shard in sorted(entries)]
        body = msgpack.packb([MANIFEST_FORMAT, step, listed,
                              None if meta is None else dumps(meta)], use_bin_type=True)
        head = HEAD.pack(MAGIC, len(body))
        manifest = b"".join((head, CHECKSUM.pack(_manifest_checksum(head, body)), body))
        name = self.commit_file(step)
        try:
            self._publish(name, manifest)
        except FileExistsError:
            with open(self._path(name), "rb") as f:
                if f.read() != manifest:
                    raise CheckpointError(f"step {step} is already committed in "
                                          f"{self.directory} with other shards or meta"
                                          ) from None
            self.ops.fsync_directory(self.directory)     # a retried commit: made durable

    def _durable_shard(self, shard: str, step: int,
                       receipt: ShardReceipt | None) -> tuple[int, int]:
        """(size, digest) of a shard file checked whole, and made durable whoever wrote
        it."""
        path = self._path(self.shard_file(shard, step))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise CheckpointError(f"shard {shard!r} of step {step} is not in "
                                  f"{self.directory}: save_shard({shard!r}, state, {step}) "
                                  f"first") from None
        digest = _digest(data)
        if receipt is not None and (receipt.size, receipt.digest) != (len(data), digest):
            raise CheckpointError(f"{path} changed since save_shard returned its receipt "
                                  f"(another writer saved this shard of step {step})")
        try:
            unframe(data)
        except FormatError as e:
            raise type(e)(f"{path}: {e}") from None
        fd = self.ops.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0)
        try:
            self.ops.fsync(fd)
        except OSError:
            # After a failed fsync the file's pages may never reach the disk, even if a
            # later fsync succeeds (Linux marks them clean): only a new save is sure.
            self.ops.close(fd)
            try:
                self.ops.unlink(path)
            except OSError:
                pass
            raise
        else:
            self.ops.close(fd)
        self.ops.fsync_directory(self.directory)
        return len(data), digest

    # -- reading ------------------------------------------------------------------------

    def _listing(self) -> tuple[list[int], dict[int, list[str]]]:
        """(committed steps ascending, step -> shard file names) of the directory."""
        committed: list[int] = []
        shard_files: dict[int, list[str]] = {}
        for name in os.listdir(self.directory):
            if (m := _COMMIT.fullmatch(name)) is not None:
                committed.append(int(m[1]))
            elif (m := _SHARD.fullmatch(name)) is not None:
                shard_files.setdefault(int(m[1]), []).append(name)
        committed.sort()
        return committed, shard_files

    def steps(self) -> list[int]:
        """The committed steps, ascending."""
        return self._listing()[0]

    def latest_step(self) -> int | None:
        """The highest committed step, or None. Its manifest is checked whole."""
        steps = self.steps()
        if not steps:
            return None
        self._manifest(steps[-1])
        return steps[-1]

    def _resolve(self, step: int | None) -> int:
        if step is None:
            latest = self.latest_step()
            if latest is None:
                raise CheckpointError(f"no step is committed in {self.directory}")
            return latest
        return _step(step)

    def _manifest(self, step: int) -> tuple[dict[str, tuple[int, int]], Any]:
        """(shard -> (size, digest), meta bytes or None) of a committed step."""
        path = self._path(self.commit_file(step))
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_MANIFEST + 1)
        except FileNotFoundError:
            raise CheckpointError(f"step {step} is not committed in {self.directory} "
                                  f"(committed: {self.steps()})") from None
        return _read_manifest(data, step, path)

    def shards(self, step: int | None = None) -> list[str]:
        """The shard ids of a committed step (default: the latest)."""
        return sorted(self._manifest(self._resolve(step))[0])

    def meta(self, step: int | None = None) -> Any:
        """The ``meta`` a committed step was given (default: the latest)."""
        meta = self._manifest(self._resolve(step))[1]
        return None if meta is None else loads(meta)

    def load_shard(self, shard: str | int, step: int | None = None) -> Any:
        """The state ``shard`` saved at ``step`` (default: the latest committed step),
        checked against the step's manifest."""
        shard, step = shard_name(shard), self._resolve(step)
        listed, _ = self._manifest(step)
        if shard not in listed:
            raise CheckpointError(f"step {step} has no shard {shard!r}; its shards are "
                                  f"{sorted(listed)}")
        path = self._path(self.shard_file(shard, step))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise ChecksumError(f"{path} is missing, its step {step} committed: the "
                                f"directory was changed by other means") from None
        if (len(data), _digest(data)) != listed[shard]:
            raise ChecksumError(f"{path} is not the file step {step} committed: it "
                                f"changed since (another writer, or a damaged disk)")
        try:
            return loads(data)
        except Exception as e:
            e.add_note(f"while loading {path}")
            raise

    # -- pruning ------------------------------------------------------------------------

    def prune(self, keep: int) -> list[int]:
        """Remove every committed step but the ``keep`` latest, and the shard files of
        steps never committed older than the latest committed one. Returns the
        committed steps removed."""
        if type(keep) is not int or keep < 1:
            raise CheckpointError(f"prune keeps at least one step, not {keep!r}")
        committed, shard_files = self._listing()
        removed = committed[:-keep]
        ops = self.ops
        for step in removed:                 # manifests first: no step loses a shard
            ops.unlink(self._path(self.commit_file(step)))
        if removed:
            ops.fsync_directory(self.directory)
        latest = committed[-1] if committed else -1
        kept = set(committed[-keep:])
        doomed = [name for step, names in sorted(shard_files.items())
                  if step < latest and step not in kept for name in names]
        for name in doomed:
            try:
                ops.unlink(self._path(name))
            except FileNotFoundError:
                pass                         # another prune removed it
        if doomed:
            ops.fsync_directory(self.directory)
        # temporary files of writers that died mid-write: their names are never
        # written again (each step's names are new), so no later write removes them
        for stem in {m[1] for name in os.listdir(self.directory)
                     if (m := _TEMPORARY.fullmatch(name)) is not None}:
            _remove_stale_temporaries(self.directory, stem)
        return removed


def _manifest_checksum(head: bytes, body: bytes) -> int:
    h = xxhash.xxh3_64(head)
    h.update(body)
    return h.intdigest()


def _read_manifest(data: bytes, step: int,
                   path: str) -> tuple[dict[str, tuple[int, int]], bytes | None]:
    """A manifest's bytes, checked: its frame, then the shape of its body."""
    if len(data) < HEAD.size + CHECKSUM.size or not data.startswith(MAGIC):
        raise FormatError(f"{path} is not a run checkpoint manifest")
    _, length = HEAD.unpack_from(data)
    (stored,) = CHECKSUM.unpack_from(data, HEAD.size)
    body = data[HEAD.size + CHECKSUM.size:]
    if len(body) != length or _manifest_checksum(data[:HEAD.size], body) != stored:
        raise ChecksumError(f"{path} is damaged: it does not match its checksum")
    try:
        fmt, saved_step, listed, meta = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except (ValueError, TypeError, msgpack.UnpackException) as e:
        raise FormatError(f"{path}: the manifest body is malformed: {e}") from None
    if fmt != MANIFEST_FORMAT or saved_step != step or type(listed) is not list or not (
            meta is None or type(meta) is bytes):
        raise FormatError(f"{path}: not a format {MANIFEST_FORMAT} manifest of step {step}")
    shards = {}
    for entry in listed:
        if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str
                or not SHARD_ID.fullmatch(entry[0])
                or not all(type(v) is int and v >= 0 for v in entry[1:])):
            raise FormatError(f"{path}: a shard entry is malformed")
        shards[entry[0]] = (entry[1], entry[2])
    return shards, meta
