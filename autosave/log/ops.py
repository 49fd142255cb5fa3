"""The operating-system calls the checkpoint log makes, in one replaceable object.

The log never calls ``os`` for its file directly: it calls these, so that a test (or
a game's own test suite) can make any write, fsync or truncate fail, write short, or
report a full disk at the Nth call (see faults.py) and check what survives.
"""

import fcntl
import os

from ..files import fsync_directory


class SystemOps:
    """The real calls."""

    def open(self, path, flags, mode):
        return os.open(path, flags, mode)

    def close(self, fd):
        os.close(fd)

    def lock(self, fd):
        """Take the writer's exclusive lock; BlockingIOError if another process has it."""
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def size(self, fd):
        return os.fstat(fd).st_size

    def pread(self, fd, n, offset):
        return os.pread(fd, n, offset)

    def pwrite(self, fd, data, offset):
        return os.pwrite(fd, data, offset)

    def fsync(self, fd):
        os.fsync(fd)

    def ftruncate(self, fd, length):
        os.ftruncate(fd, length)

    def fsync_directory(self, directory):
        fsync_directory(directory)

    def link(self, source, target):
        os.link(source, target)

    def unlink(self, path):
        os.unlink(path)


SYSTEM = SystemOps()
