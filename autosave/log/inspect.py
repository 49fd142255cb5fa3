"""``autosave inspect`` on a checkpoint log: its history tree, checkpoints, bookmarks,
sizes and what opening it had to recover, printed without building any object the
file names (globals stay bytes; the newest checkpoint is decoded, never loaded).

Whatever the file holds, the output is complete or the call raises a LoadError (or
OSError) naming the offset at fault: the tree is walked without recursion, strings from
the file are printed with lone surrogates and control characters escaped, and the
checkpoint is inflated within the same bound as restore().
"""

import datetime
import re
import sys

from ..errors import FormatError, LoadError
from ..format.dump import sizes_by_class
from .file import LogFile
from .history import CheckpointLog
from .chain import read_checkpoint

MAX_INDENT = 32         # deeper nodes print their depth instead of more spaces
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def text(value):
    """A str from the file, printable on any terminal: escapes, never raises."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], value)


def inspect_log(path, top, out=None, content=None):
    """Print the log at ``path``; with ``content`` (node -> step keys) also what opening
    it with that content would upgrade (nothing is written)."""
    out = out or sys.stdout

    def say(line=""):
        out.write(line + "\n")

    file = LogFile(path, writable=False)
    with file:
        log = CheckpointLog(file, checkpoint_every=1, decode_globals=False, content=content)
        records = log.records
        say(f"{text(path)}: checkpoint log, {file.end:,} committed bytes in "
            f"{file.block_size}-byte blocks, {file.slot.seq} commits")
        for line in file.recovery:
            say(f"recovered: {line}")
        if file.recovered:
            say(f"torn tail: {file.recovered:,} bytes past the last commit (a write that "
                f"never completed; opening for writing cuts them)")
        else:
            say("no torn tail")
        marks = {}
        for slot, mark in log.bookmarks.items():
            marks.setdefault(mark.position.record, []).append(
                f"{text(slot)}@{mark.position.step}")
        say("history:" if content is None else "history, as upgraded to the content given:")
        # Depth-first, children in creation order, with an explicit stack: a history
        # may nest as deep as the game likes.
        stack = [(rid, 1) for rid in reversed(log.roots)]
        while stack:
            rid, depth = stack.pop()
            say(tree_line(records, rid, depth, marks))
            stack.extend((child, depth + 1) for child in reversed(records[rid].children))
        if log.position is not None:
            say(f"last position: {text(log.position.node)} step {log.position.step} "
                f"(#{log.position.record})")
        say(f"bookmarks: {len(log.bookmarks)}")
        sizes = {}
        for slot, mark in sorted(log.bookmarks.items()):
            if mark.screenshot_offset and mark.screenshot_offset not in sizes:
                sizes[mark.screenshot_offset] = len(mark.screenshot)
            shot = (f", screenshot {sizes[mark.screenshot_offset]:,} B"
                    if mark.screenshot_offset else "")
            say(f"  {text(slot)}: {text(mark.position.node)} step {mark.position.step} "
                f"(#{mark.position.record}) {mark.description!r} {when(mark.created)}{shot}")
        table = log._content
        if table.prints:
            say(f"content: {len(table.current)} nodes fingerprinted, {len(table.prints)} "
                f"fingerprints recorded")
        if log.upgrade_report is not None:
            print_report(log.upgrade_report, say)
        say(f"reached: {len(log.reached)} keys; globals: {len(log._saved_globals):,} bytes "
            f"(not loaded)")
        # Each record read once, however many events name it: the reading stays within
        # the file's size.
        offsets = {o for r in records.values() for o in r.checkpoints.values()}
        shots = {m.screenshot_offset for m in log.bookmarks.values() if m.screenshot_offset}
        checkpoint_bytes = sum(len(file.read(o)[1]) for o in offsets)
        shot_bytes = sum(len(file.read(o)[1]) for o in shots)
        other = file.end - file.block_size - checkpoint_bytes - shot_bytes
        count = sum(len(r.checkpoints) for r in records.values())
        say(f"bytes: checkpoints {count} ({checkpoint_bytes:,}), screenshots "
            f"{shot_bytes:,}, metadata and framing {other:,}, header {file.block_size:,}")
        if offsets:
            newest = max(offsets)
            say(f"newest checkpoint (offset {newest}), by class:")
            data = read_checkpoint(file, newest)
            try:
                print_sizes_by_class(data, top, indent="  ", out=out)
            except LoadError as e:
                raise FormatError(f"the checkpoint at offset {newest} does not decode: {e}") \
                    from None


def print_report(report, say):
    """What an upgrade to the content given does, per node and per bookmark."""
    say("upgrade to the content given:")
    for name, node in sorted(report.nodes.items()):
        steps = node.get("steps")
        mapping = (" steps " + " ".join(f"{old}->{'x' if new is None else new}"
                                         for old, new in steps)) if steps else ""
        say(f"  node {text(name)}: {node['status']}{mapping}")
    for slot, mark in sorted(report.bookmarks.items()):
        where = (f"step {mark['old']}" if mark["status"] != "moved"
                 else f"step {mark['old']} -> {mark['new']}")
        note = f" ({mark['note']})" if mark["note"] else ""
        say(f"  bookmark {text(slot)}: {mark['status']}, {text(mark['node'])} {where}{note}")
    if report.reached_dropped:
        say(f"  reached keys dropped: {len(report.reached_dropped)}")


def tree_line(records, rid, depth, marks):
    r = records[rid]
    steps = f"steps {r.first_step}-{r.last_step}" if r.last_step >= r.first_step else "no steps"
    branch = " (branch)" if r.parent is not None and records[r.parent].name == r.name else ""
    key = f" key={r.key!r}" if r.key is not None else ""
    checkpoints = ",".join(map(str, sorted(r.checkpoints))) or "-"
    extra = f"  bookmarks {' '.join(marks[rid])}" if rid in marks else ""
    indent = "  " * min(depth, MAX_INDENT) + (f"[depth {depth}] " if depth > MAX_INDENT else "")
    return f"{indent}#{rid} {text(r.name)}{branch}{key}  {steps}  checkpoints {checkpoints}{extra}"


def when(created):
    try:
        return datetime.datetime.fromtimestamp(created).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return f"(time {created!r})"


def print_sizes_by_class(data, top, indent, out=None):
    """Records and bytes by class of a save's bytes (decoded, never loaded)."""
    out = out or sys.stdout
    sizes = sizes_by_class(data)
    out.write(f"{indent}{sum(c for c, _ in sizes.values()):,} records of {len(sizes)} types\n")
    for name, (count, nbytes) in sorted(sizes.items(), key=lambda kv: -kv[1][1])[:top]:
        out.write(f"{indent}  {nbytes:>10,} B  {count:>8,}  {text(str(name))}\n")
