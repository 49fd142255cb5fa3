"""Fault injection for the checkpoint log's file operations (in the spirit of SQLite's
test VFS and LevelDB's fault-injection Env).

``FaultyOps`` counts the calls that change the file (``pwrite``, ``fsync``,
``ftruncate``, directory fsync, and creation's ``link`` and ``unlink``) and makes the Nth one fail:

* ``"eio"``     raise EIO; a failed fsync also drops the dirty pages: the file goes back
                to what the last good fsync made durable;
* ``"lost"``    raise EIO; a failed fsync keeps the written bytes readable (the page
                cache marks them clean, as Linux does after a writeback error) but they
                never reach the disk, even when a later fsync succeeds — unless they
                are written again;
* ``"enospc"``  raise ENOSPC;
* ``"short"``   a pwrite writes only the first half and returns that count;
* ``"full"``    a short write, then ENOSPC for the next ``full_for`` pwrites (a disk
                that fills up, then has space again).

It also keeps, per file, ``durable``: the bytes the disk holds, i.e. what a power cut
at this instant would leave.

The log changes its file only through these calls (it never uses ``write`` or
``rename``: it is one file, created by linking a whole header block to its name, then
written in place at explicit offsets), so they are all a fault can hit.
"""

import errno
import os

from .ops import SystemOps

KINDS = ("eio", "lost", "enospc", "short", "full")


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
        self.durable = {}            # path -> the bytes on the disk
        self.lost = {}               # path -> [(start, stop)] readable, never to reach it
        self._full_left = 0

    # -- bookkeeping ------------------------------------------------------------------

    def open(self, path, flags, mode):
        fd = super().open(path, flags, mode)
        self.paths[fd] = path
        if path not in self.durable:
            self.durable[path] = _read_all(fd)
            self.lost[path] = []
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

    def _rewritten(self, fd, start, stop):
        """Bytes written again are dirty again: a later fsync does write them."""
        path = self.paths.get(fd)
        if path is not None:
            self.lost[path] = [piece for a, b in self.lost[path]
                               for piece in ((a, min(b, start)), (max(a, stop), b))
                               if piece[0] < piece[1]]

    # -- the mutating calls -------------------------------------------------------------

    def pwrite(self, fd, data, offset):
        due = self._due("pwrite")
        if self._full_left:
            self._full_left -= 1
            self.faults.append((self.calls, "pwrite"))
            raise InjectedFault(errno.ENOSPC, "No space left on device (injected)")
        if due:
            if self.kind in ("eio", "lost"):
                raise InjectedFault(errno.EIO, "Input/output error (injected)")
            if self.kind == "enospc":
                raise InjectedFault(errno.ENOSPC, "No space left on device (injected)")
            if self.kind == "full":
                self._full_left = self.full_for
            data = bytes(data[:len(data) // 2])
            if not data:
                return 0
        written = super().pwrite(fd, data, offset)
        self._rewritten(fd, offset, offset + written)
        return written

    def fsync(self, fd):
        path = self.paths.get(fd)
        if self._due("fsync"):          # every kind fails an fsync with EIO
            if path is not None:
                current, image = _read_all(fd), self.durable[path]
                if self.kind == "lost":
                    # Clean in the cache, missing on the disk: what differs from it.
                    self.lost[path].append((0, len(current)))
                else:                    # the dirty pages are gone: back to the disk
                    os.ftruncate(fd, len(image))
                    os.pwrite(fd, image, 0)
            raise InjectedFault(errno.EIO, "Input/output error (injected fsync)")
        super().fsync(fd)
        if path is not None:
            image = bytearray(_read_all(fd))
            old = self.durable[path]
            for start, stop in self.lost[path]:
                stop = min(stop, len(image))
                piece = old[start:stop]
                image[start:stop] = piece + bytes(stop - start - len(piece))
            self.durable[path] = bytes(image)

    def ftruncate(self, fd, length):
        if self._due("ftruncate"):
            raise InjectedFault(errno.EIO, "Input/output error (injected ftruncate)")
        super().ftruncate(fd, length)

    def fsync_directory(self, directory):
        if self._due("fsync_directory"):
            raise InjectedFault(errno.EIO, "Input/output error (injected directory fsync)")
        super().fsync_directory(directory)

    def link(self, source, target):
        if self._due("link"):
            raise InjectedFault(errno.EIO, "Input/output error (injected link)")
        super().link(source, target)
        self.durable[target] = self.durable.get(source, b"")
        self.lost[target] = list(self.lost.get(source, []))

    def unlink(self, path):
        if self._due("unlink"):
            raise InjectedFault(errno.EIO, "Input/output error (injected unlink)")
        super().unlink(path)


def _read_all(fd):
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""
