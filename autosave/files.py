"""dumps/loads and save/load: the pipeline walk -> format -> bytes, and back."""

import errno
import gc
import os
import re
import stat
from collections.abc import Callable, Iterable
from pickle import PickleBuffer
from typing import IO, Any, Protocol, TypeVar

import xxhash

from .saving.saver import Saver
from .errors import FormatError, SaveError
from .format import buffers as out_of_band
from .format.buffers import OUT_OF_BAND_MIN, SavePolicy
from .format.buffers import views_of as buffers_of
from .format.wire import decode, encode
from .model.generated import GENERATED
from .checks.limits import OverBudget, file_budget, no_budget
from .loading.rebuild import load_records


_T = TypeVar("_T")
# What save() and load() take as a path: what open() takes, less file descriptors.
PathLike = str | bytes | os.PathLike[str] | os.PathLike[bytes]


class ReadableFile(Protocol):
    """A binary file open for reading, as ``pickle.load`` takes one."""
    def read(self, /) -> bytes | bytearray: ...


class WritableFile(Protocol):
    """A binary file open for writing, as ``pickle.dump`` takes one."""
    def write(self, data: memoryview, /) -> int | None: ...


class collector_paused:
    """Pause the cyclic GC: a save or load makes hundreds of thousands of small lists
    that live until it returns, and collecting them over and over would cost more
    than the work itself. Nothing they make is garbage until then. (A class, not a
    generator: entered at every save and load, it costs a tenth as much.)"""

    __slots__ = ("was_enabled",)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def dumps(root: object, *, buffer_callback: Callable[[PickleBuffer], Any] | None = None,
          out_of_band_min: int = OUT_OF_BAND_MIN) -> bytes:
    """Everything reachable from ``root``, as bytes. Raises SaveError with the object path.

    The graph is walked once, by the one save engine, with the game's generated code
    where it has some (which writes the bytes reflection would).

    ``buffer_callback``, as pickle's protocol 5: each contiguous numpy array of plain
    data of at least ``out_of_band_min`` bytes is handed to it as a ``PickleBuffer``,
    without a copy; where it returns a false value the array's data is left out of
    the bytes, for the caller to carry and give back to ``loads(data, buffers=...)``
    (docs/format.md, "Out-of-band buffers"). Without it, the bytes are as ever."""
    walker = _walker()
    walker.encodes_now = True                    # encoded below, before the game runs
    if buffer_callback is not None:
        walker.out_of_band = SavePolicy(out_of_band_min)     # this walk's, no other's
    with collector_paused():
        types, records, root_value, batches = walker.run(root)
        try:
            return encode(types, records, root_value, batches, buffer_callback)
        except Exception as e:       # records hold only encodable values: a defect
            if buffer_callback is not None and not isinstance(e, (TypeError, ValueError)):
                raise                # the caller's callback failed: its error, as pickle
            raise SaveError(f"the records could not be encoded: {type(e).__name__}: {e}",
                            "root") from e


class Walked:
    """A walk of a graph whose bytes are not made yet: ``dumps(root)`` split in two, the
    reading of the graph done (``dumps_later``), the rest left to ``encode()``.

    What the walk returns is a snapshot (``Walker.run_deferred``): it holds immutable
    values and lists the walk made, nothing of the graph's, so ``encode`` may run on
    another thread while the game changes the graph, and gives the bytes ``dumps``
    gave at the walk. ``encode`` writes the batches' columns, encodes, and lets go of
    the walk's tables, so that they are freed on the thread that encodes; it may be
    called again after it raised (an error of its own, never the graph's)."""

    __slots__ = ("_parts",)

    def __init__(self, parts: tuple) -> None:
        self._parts: tuple | None = parts

    def encode(self) -> bytes:
        parts = self._parts
        if parts is None:
            raise RuntimeError("this walk was encoded already")
        types, records, root_value, finish = parts
        try:
            data = encode(types, records, root_value, finish())
        except (TypeError, ValueError) as e:   # records hold only encodable values
            raise SaveError(f"the records could not be encoded: {type(e).__name__}: {e}",
                            "root") from e
        self._parts = None                # freed here, by the thread that encoded them
        del parts, types, records, root_value, finish
        return data


def dumps_later(root: object) -> Walked:
    """Walk ``root`` now (a SaveError with the object path, as ``dumps``); the bytes
    ``dumps(root)`` would give now come from ``.encode()``, on any thread, whatever
    happens to the graph meanwhile."""
    with collector_paused():
        return Walked(_walker().run_deferred(root))


def _walker() -> Saver:
    """The save engine, configured once per save: with the game's generated handlers
    when it has them (they write the records reflection would)."""
    return Saver(generated=GENERATED.activate())


def loads(data: bytes | bytearray | memoryview, *,
          buffers: Iterable[Any] | None = None) -> Any:
    """The root saved in ``data``. Raises only LoadError kinds on bad input.

    The whole load is held to the budget of ``data``'s size (autosave.checks.limits), or,
    inside a reader that opened one (a log's restore), to that reader's file's.
    ``buffers``: the out-of-band buffers ``dumps(..., buffer_callback=...)`` was given, in
    order; arrays are built on their memory without a copy, and the budget is that of
    a file as long as ``data`` and the buffers together. A memoryview ``data`` is read
    in place."""
    views = None if buffers is None else buffers_of(buffers)
    size = data.nbytes if isinstance(data, memoryview) else len(data)
    try:
        with collector_paused(), file_budget(size + sum(v.nbytes for v in views or ())):
            if views is None:
                return load_records(*decode(data))
            with out_of_band.loading():
                return load_records(*decode(data, views))
    except OverBudget as e:
        raise FormatError(str(e)) from None


def save(path: PathLike, root: object) -> int:
    """Write a save atomically: a crash leaves the old file or the new one, never neither.

    The bytes go to a temporary file beside the target, are flushed to disk, and replace
    the target by a rename; then the directory is flushed too. A symlink is written
    through (its target file is replaced, the link stays). An existing target keeps its
    mode, and its owner and group where the OS permits; a new one gets the mode ``open()``
    would give it. Temporary files that saves of this target killed mid-write left
    behind are removed. An OSError from flushing the directory (EIO) is raised: the
    new file is in place but a crash might still undo the rename. See
    docs/durability.md."""
    data = dumps(root)
    target = _resolve(path)
    directory, name = os.path.split(target)
    stem = _stem(name)
    _remove_stale_temporaries(directory, stem)
    try:
        found = os.stat(target)
    except FileNotFoundError:
        old = None
    else:
        old, mode = found, found.st_mode
        if not stat.S_ISREG(mode):
            raise (IsADirectoryError if stat.S_ISDIR(mode) else OSError)(
                errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                "autosave.save() replaces regular files only", target)
    # Private until it has the target's mode: another user must not open it meanwhile.
    fd, tmp = _create_temporary(directory, stem, 0o600 if old else 0o666)
    try:
        try:
            if old is not None:
                _copy_owner_and_mode(fd, old)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            try:
                os.close(fd)
            except OSError:
                pass                 # the first error is the one to report
            raise
        os.close(fd)                 # NFS reports some write errors only here
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # A rename a crash may still undo is not a save that returned: an error flushing
    # the directory is raised (the new file is in place, and may not stay).
    fsync_directory(directory)
    return len(data)


def _resolve(path):
    """The file a save to ``path`` replaces: symlinks followed, so that a link (to a
    cloud folder, or ``latest.sav`` to a slot) still points at the new save."""
    path = os.fsdecode(os.fspath(path))
    target = os.path.realpath(path)
    if os.path.islink(target):       # realpath stops inside a symlink loop
        raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
    return target


# -- temporary files --------------------------------------------------------------------
#
# ``.<target name>.autosave-<host>-<pid>-<start>-<random>.tmp``, beside the target:
#   host    8 hex digits identifying this machine and PID namespace: a pid means
#           nothing to another machine sharing the directory (NFS) or another container
#   pid     the writing process
#   start   8 hex digits identifying that process's start (boot id and start time), so
#           that a reused pid is not mistaken for the writer; 00000000 where unknown
# A later save of the same target removes the ones of this host whose writer is gone.

_TEMPORARY = re.compile(r"([0-9a-f]{8})-([1-9][0-9]{0,9})-([0-9a-f]{8})-[0-9a-f]{8}\.tmp")
_UNKNOWN_START = "00000000"
_PROCESS = (None, None)              # (pid, (host, start)): recomputed in a forked child


def _stem(name):
    """The target's name as temporary names carry it: whole if it leaves room for the
    rest of the name within the usual 255-byte limit, else shortened and hashed."""
    if len(os.fsencode(name)) <= 150:
        return name
    return f"{name[:40]}~{xxhash.xxh64_hexdigest(os.fsencode(name))}"


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def process_start(pid):
    """An 8-hex-digit token of when process ``pid`` started, or None where the OS does
    not say (no /proc). Two processes that ever had the same pid get different tokens."""
    stat_line = _read(f"/proc/{pid}/stat")
    boot_id = _read("/proc/sys/kernel/random/boot_id")
    if stat_line is None or boot_id is None:
        return None
    # The command name in parentheses may hold spaces; start time is field 22.
    fields = stat_line[stat_line.rfind(b")") + 2:].split()
    if len(fields) < 20:
        return None
    return xxhash.xxh32_hexdigest(boot_id.strip() + b":" + fields[19])


def this_process():
    """(host, start) tokens of the running process."""
    global _PROCESS
    pid = os.getpid()
    cached = _PROCESS
    if cached[0] != pid:
        try:
            namespace = os.readlink("/proc/self/ns/pid")
        except OSError:
            namespace = ""
        node = os.uname().nodename if hasattr(os, "uname") else ""
        host = xxhash.xxh32_hexdigest(f"{node}\0{namespace}".encode())
        cached = _PROCESS = pid, (host, process_start(pid) or _UNKNOWN_START)
    return cached[1]


def temporary_name(stem, pid, host, start):
    return f".{stem}.autosave-{host}-{pid}-{start}-{os.urandom(4).hex()}.tmp"


def _create_temporary(directory, stem, mode):
    host, start = this_process()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(directory, temporary_name(stem, os.getpid(), host, start))
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", directory)


def _writer_gone(pid, start):
    """True only when the process that named a temporary file is certainly not running:
    anything unsure keeps the file."""
    if pid == os.getpid():
        return start != this_process()[1]    # else another thread of ours is saving
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass                                 # alive, another user's
    except (OSError, OverflowError):
        return False
    now = process_start(pid)
    return now is not None and start != _UNKNOWN_START and now != start


def _remove_stale_temporaries(directory, stem):
    if os.name != "posix":           # no way to tell a live writer from a dead one
        return
    prefix = f".{stem}.autosave-"
    host = this_process()[0]
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        match = _TEMPORARY.fullmatch(name, len(prefix))
        if match is None or match[1] != host or not _writer_gone(int(match[2]), match[3]):
            continue
        try:
            os.unlink(os.path.join(directory, name))
        except OSError:
            pass                     # removed by another save meanwhile, or not ours to remove


def _copy_owner_and_mode(fd, old):
    """Give the new file the old one's owner, group (where permitted) and mode bits."""
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
        for uid, gid in ((old.st_uid, old.st_gid), (-1, old.st_gid)):
            try:
                os.fchown(fd, uid, gid)          # before fchmod: it may clear set-id bits
                break
            except PermissionError:
                continue
    try:
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise                    # file systems without modes refuse; keep what they gave


def load(file: PathLike | ReadableFile | IO[bytes]) -> Any:
    """Load a save from a path, or from a binary file object open for reading (as
    ``pickle.load`` takes one): the file's remaining bytes are the save."""
    if hasattr(file, "read"):
        data = file.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"autosave.load() needs a binary file, {type(file).__name__}.read() "
                            f"returned {type(data).__name__}; open it with 'rb'")
        where = getattr(file, "name", None)
    else:
        with open(file, "rb") as f:
            data = f.read()
        where = os.fspath(file)
    try:
        return loads(data)
    except Exception as e:
        if where is not None:
            e.add_note(f"while loading {where}")
        raise


def dump(root: object, file: WritableFile | IO[bytes]) -> int:
    """Write the save of ``root`` to a binary file object open for writing (as
    ``pickle.dump`` does); returns the number of bytes. Not atomic: for a save slot
    on disk, ``save(path, root)`` replaces the file only once the new one is whole."""
    if not hasattr(file, "write"):
        raise TypeError(f"autosave.dump() writes to a binary file object, not a "
                        f"{type(file).__name__}; to write a path use autosave.save(path, root)")
    data = dumps(root)
    view = memoryview(data)
    while view:                      # a raw file may take fewer bytes than offered
        written = file.write(view)
        if written is None:          # a non-blocking raw file that would block
            raise BlockingIOError(errno.EAGAIN, "autosave.dump(): the file would block")
        view = view[written:]
    return len(data)


def copy(root: _T) -> _T:
    """A deep copy of everything reachable from ``root``, made through a save and a
    load: what games use for undo, rollback and look-ahead. Shares assets, aliases and
    cycles exactly as a save would."""
    with collector_paused(), no_budget():
        walker = _walker()
        types, records, root_value, batches = walker.run(root)
        # The records go to the loader as decode() would give them, without the bytes
        # in between: cycle marks moved out of the type indices, unset slots
        # counted. Everything else (every check
        # of the load) is the same as for a file's.
        unset = walker.unset
        closes_cycle = bytearray(len(records))
        for i, rec in enumerate(records):
            if rec[0] < 0:
                rec[0] = ~rec[0]
                closes_cycle[i] = 1
        return load_records(types, records, root_value, unset, closes_cycle, batches)


# errno values by which a file system says it does not fsync directories at all (some
# network and FUSE ones, or a directory that may not be opened for reading): the entry
# is as durable as that file system makes it. Any other error (EIO) is raised.
NO_DIRECTORY_FSYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF,
                      errno.EISDIR, errno.EACCES, errno.EPERM}


def fsync_directory(directory: PathLike) -> None:
    """Make a rename or a new file in ``directory`` durable. OSError if the file system
    reports that it failed (a crash may then lose the entry); returns quietly where it
    does not fsync directories at all (docs/durability.md)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as e:
        if e.errno in NO_DIRECTORY_FSYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in NO_DIRECTORY_FSYNC:
            raise
    finally:
        os.close(fd)
