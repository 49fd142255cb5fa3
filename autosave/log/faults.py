"""Fault injection for the checkpoint log's file operations (in the spirit of SQLite's
test VFS and LevelDB's fault-injection Env).

``FaultyOps`` counts the calls that change the file (``pwrite``, ``fsync``,
``ftruncate``, directory fsync) and makes the Nth one fail:

* ``"eio"``     raise EIO (an fsync that fails also drops the file's dirty pages: the
                file goes back to what the last good fsync made durable, as the Linux
                page cache may do after a writeback error);
* ``"enospc"``  raise ENOSPC;
* ``"short"``   a pwrite writes only the first half and returns that count;
* ``"full"``    a short write, then ENOSPC for the next ``full_for`` pwrites (a disk
                that fills up, then has space again).

It also keeps, per file, the bytes the last successful fsync made durable: ``durable``
is what a power cut at this instant would leave on disk.

The log changes its file only through these calls (it never uses ``write`` or
``rename``: it is one file, written in place at explicit offsets), so they are all
a fault can hit.
"""

import errno
import os

from .ops import SystemOps

KINDS = ("eio", "enospc", "short", "full")


class InjectedFault(OSError):
    """An OSError raised by FaultyOps (to tell it from a real one in a test)."""


class FaultyOps(SystemOps):
    def __init__(self, fail_at=None, kind="eio", full_for=2):
        if kind not in KINDS:
            raise ValueError(f"kind is one of {KINDS}, not {kind!r}")
        self.fail_at, self.kind, self.full_for = fail_at, kind, full_for
        self.calls = 0               # mutating calls so far
        self.faults = []             # (call number, operation) of each fault injected
        self.paths = {}              # fd -> path
        self.durable = {}            # path -> bytes the last good fsync made durable
        self._full_left = 0

    # -- bookkeeping ------------------------------------------------------------------

    def open(self, path, flags, mode):
        fd = super().open(path, flags, mode)
        self.paths[fd] = path
        if path not in self.durable:
            self.durable[path] = _read_all(fd)
        return fd

    def close(self, fd):
        self.paths.pop(fd, None)
        super().close(fd)

    def _due(self, operation):
        """True if this call is the one to fail."""
        self.calls += 1
        if self.calls == self.fail_at:
            self.faults.append((self.calls, operation))
            return True
        return False

    # -- the mutating calls -------------------------------------------------------------

    def pwrite(self, fd, data, offset):
        due = self._due("pwrite")
        if self._full_left:
            self._full_left -= 1
            self.faults.append((self.calls, "pwrite"))
            raise InjectedFault(errno.ENOSPC, "No space left on device (injected)")
        if due:
            if self.kind == "eio":
                raise InjectedFault(errno.EIO, "Input/output error (injected)")
            if self.kind == "enospc":
                raise InjectedFault(errno.ENOSPC, "No space left on device (injected)")
            if self.kind == "full":
                self._full_left = self.full_for
            half = len(data) // 2
            return super().pwrite(fd, bytes(data[:half]), offset) if half else 0
        return super().pwrite(fd, data, offset)

    def fsync(self, fd):
        if self._due("fsync"):          # every kind fails an fsync the same way
            path = self.paths.get(fd)
            if path is not None:         # the dirty pages are gone: back to the disk's bytes
                image = self.durable[path]
                os.ftruncate(fd, len(image))
                os.pwrite(fd, image, 0)
            raise InjectedFault(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd)
        path = self.paths.get(fd)
        if path is not None:
            self.durable[path] = _read_all(fd)

    def ftruncate(self, fd, length):
        if self._due("ftruncate"):
            raise InjectedFault(errno.EIO, "Input/output error (injected ftruncate)")
        super().ftruncate(fd, length)

    def fsync_directory(self, directory):
        if self._due("fsync_directory"):
            raise InjectedFault(errno.EIO, "Input/output error (injected directory fsync)")
        super().fsync_directory(directory)


def _read_all(fd):
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""
