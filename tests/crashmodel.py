"""An fsync-ordered model of what a crash may leave on disk, in the style of ALICE and
CrashMonkey: the file operations of a real workload are recorded (``RecordingOps``),
then ``crash_state`` draws one state a power cut at a given instant may leave, as a
file system that promises only what fsync promises allows:

* a file holds what its last fsync made durable, plus any subset of the writes and
  truncations made since, applied in any order (reorderings between barriers);
* a write may be torn: any subset of its 512-byte sectors reached the disk;
* an append may have reached the disk as its size only: the new bytes read as zeros
  or as stale bytes of an earlier file (ext4 data=writeback, old XFS);
* a directory entry made or removed (create, link, unlink) is durable only once its
  directory is fsynced: before, it may be there or not.

``materialise`` writes such a state into a directory, where a recovery can run on it,
be recorded in turn, and be crashed again.
"""

import os
import random

from autosave.log.ops import SystemOps

SECTOR = 512


class RecordingOps(SystemOps):
    """The real calls, each change recorded as an operation on a file name or on the
    inode behind a descriptor (a link gives one inode two names)."""

    def __init__(self, names=None):
        self.trace = []
        self.inode = dict(names or {})        # name -> inode number
        self.fds = {}                         # fd -> inode number
        self.next_inode = max(self.inode.values(), default=0) + 1

    def mark(self, what):
        """A point of the workload (a flush returned): crash states after it must hold
        what it names."""
        self.trace.append(("mark", what))

    def open(self, path, flags, mode):
        name = os.path.basename(path)
        existed = os.path.exists(path)
        fd = super().open(path, flags, mode)
        if not existed:
            self.inode[name] = self.next_inode
            self.next_inode += 1
            self.trace.append(("create", name, self.inode[name]))
        self.fds[fd] = self.inode[name]
        return fd

    def close(self, fd):
        self.fds.pop(fd, None)
        super().close(fd)

    def pwrite(self, fd, data, offset):
        n = super().pwrite(fd, data, offset)
        self.trace.append(("write", self.fds[fd], offset, bytes(data[:n])))
        return n

    def fsync(self, fd):
        super().fsync(fd)
        self.trace.append(("fsync", self.fds[fd]))

    def ftruncate(self, fd, length):
        super().ftruncate(fd, length)
        self.trace.append(("truncate", self.fds[fd], length))

    def fsync_directory(self, directory):
        super().fsync_directory(directory)
        self.trace.append(("fsync_dir",))

    def link(self, source, target):
        super().link(source, target)
        s, t = os.path.basename(source), os.path.basename(target)
        self.inode[t] = self.inode[s]
        self.trace.append(("link", s, t))

    def unlink(self, path):
        super().unlink(path)
        name = os.path.basename(path)
        self.trace.append(("unlink", name))
        del self.inode[name]


def _apply(content, op):
    if op[0] == "truncate":
        return content[:op[2]] + bytes(max(0, op[2] - len(content)))
    _, _, offset, data = op
    if len(content) < offset:
        content += bytes(offset - len(content))
    return content[:offset] + data + content[offset + len(data):]


def _torn(content, op, rng):
    """Some of the write's sectors, the others as they were (zeros past the end)."""
    _, inode, offset, data = op
    out = bytearray(content)
    end = offset + len(data)
    if len(out) < end:
        out += bytes(end - len(out))
    start = offset - offset % SECTOR
    for at in range(start, end, SECTOR):
        lo, hi = max(at, offset), min(at + SECTOR, end)
        if rng.random() < 0.5:
            out[lo:hi] = data[lo - offset:hi - offset]
    return bytes(out)


def _size_only(content, op, rng):
    """An append whose size reached the disk and whose data did not."""
    _, inode, offset, data = op
    end = offset + len(data)
    if end <= len(content):
        return content
    filler = bytes(end - len(content)) if rng.random() < 0.5 else rng.randbytes(
        end - len(content))
    return content + filler


def run_state(trace, k, start):
    """(names, contents) as the first ``k`` operations leave them in the page cache,
    and as the last barriers made durable: (durable names, durable contents, the
    writes pending per inode, the name changes pending)."""
    names, contents = dict(start[0]), dict(start[1])
    durable_names, durable = dict(names), dict(contents)
    pending, pending_names = {}, []
    for op in trace[:k]:
        kind = op[0]
        if kind == "create":
            names[op[1]] = op[2]
            contents[op[2]] = b""
            durable.setdefault(op[2], b"")      # an inode that exists, empty
            pending_names.append(op)
        elif kind in ("write", "truncate"):
            contents[op[1]] = _apply(contents[op[1]], op)
            pending.setdefault(op[1], []).append(op)
        elif kind == "fsync":
            durable[op[1]] = contents[op[1]]
            pending[op[1]] = []
        elif kind == "fsync_dir":
            durable_names = dict(names)
            pending_names = []
        elif kind == "link":
            names[op[2]] = names[op[1]]
            pending_names.append(op)
        elif kind == "unlink":
            names.pop(op[1], None)
            pending_names.append(op)
    return durable_names, durable, pending, pending_names


def crash_state(trace, k, rng, start=({}, {})):
    """One state a power cut after the first ``k`` operations may leave: (name ->
    inode, inode -> bytes)."""
    names, durable, pending, pending_names = run_state(trace, k, start)
    contents = {}
    for inode, content in durable.items():
        ops = [op for op in pending.get(inode, ()) if rng.random() < 0.6]
        if rng.random() < 0.5:
            rng.shuffle(ops)                   # no order between barriers
        for op in ops:
            if op[0] == "truncate":
                content = _apply(content, op)
                continue
            way = rng.random()
            if way < 0.5:
                content = _apply(content, op)
            elif way < 0.8:
                content = _torn(content, op, rng)
            else:
                content = _size_only(content, op, rng)
        contents[inode] = content
    for op in pending_names:                   # in order: a later one needs the earlier
        if rng.random() < 0.5:
            break
        if op[0] == "create":
            names[op[1]] = op[2]
        elif op[0] == "link":
            if op[1] in names:
                names[op[2]] = names[op[1]]
        else:
            names.pop(op[1], None)
    return names, contents


def materialise(directory, state):
    names, contents = state
    for entry in os.listdir(directory):
        os.unlink(os.path.join(directory, entry))
    for name, inode in names.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(contents[inode])


def marks_before(trace, k):
    """What the last mark among the first ``k`` operations names (None if none)."""
    found = None
    for op in trace[:k]:
        if op[0] == "mark":
            found = op[1]
    return found


def seeded(seed):
    return random.Random(seed)
