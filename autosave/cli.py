"""The `autosave` command.

    autosave dump FILE [--out OUT]    a save as readable JSON
    autosave inspect FILE             a checkpoint log's history tree, checkpoints,
                                      bookmarks and sizes; or a save's sizes by class
    autosave compat snapshot|check|verify   the release gate (autosave/compat/)
    autosave diff A B                 two saves compared by structure

Neither builds objects or imports anything a file names, so both are safe on any file.
"""

import argparse
import datetime
import json
import sys
import zlib


from . import __version__
from .errors import LoadError
from .format import MAGIC as SAVE_MAGIC
from .format import sizes_by_class, to_jsonable
from .log.file import MAGIC as LOG_MAGIC
from .log.file import LogFile
from .log.history import CheckpointLog
from .compat.cli import add_parsers as add_compat_parsers


def cmd_dump(args):
    with open(args.file, "rb") as f:
        data = f.read()
    text = json.dumps(to_jsonable(data), indent=args.indent, ensure_ascii=False)
    # A lone surrogate (a str the game made from bytes) is written as its JSON escape
    # \udXXX: valid JSON that reads back as the same string.
    out = (text + "\n").encode("utf-8", "backslashreplace")
    if args.out:
        with open(args.out, "wb") as f:
            f.write(out)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()


def cmd_inspect(args):
    with open(args.file, "rb") as f:
        head = f.read(8)
    if head == LOG_MAGIC:
        inspect_log(args.file, args.top)
    elif head.startswith(SAVE_MAGIC):
        with open(args.file, "rb") as f:
            data = f.read()
        print(f"{args.file}: autosave save, {len(data):,} bytes")
        print_sizes_by_class(data, args.top, indent="")
    else:
        raise LoadError(f"neither an autosave save nor a checkpoint log (magic {head[:8]!r})")


def inspect_log(path, top):
    file = LogFile(path, writable=False)
    with file:
        log = CheckpointLog(file, checkpoint_every=1)
        records = log.records
        print(f"{path}: checkpoint log, {file.end:,} committed bytes in "
              f"{file.block_size}-byte blocks, {file.slot.seq} commits")
        if file.recovered:
            print(f"torn tail: {file.recovered:,} bytes past the last commit (a write that "
                  f"never completed; opening for writing cuts them)")
        else:
            print("no torn tail")
        marks = {}
        for slot, mark in log.bookmarks.items():
            marks.setdefault(mark.position.record, []).append(f"{slot}@{mark.position.step}")

        def show(rid, depth):
            r = records[rid]
            steps = f"steps {r.first_step}-{r.last_step}" if r.last_step >= r.first_step else "no steps"
            branch = " (branch)" if r.parent is not None and records[r.parent].name == r.name else ""
            key = f" key={r.key!r}" if r.key is not None else ""
            checkpoints = ",".join(map(str, sorted(r.checkpoints))) or "-"
            extra = f"  bookmarks {' '.join(marks[rid])}" if rid in marks else ""
            print(f"{'  ' * depth}#{rid} {r.name}{branch}{key}  {steps}  "
                  f"checkpoints {checkpoints}{extra}")
            for child in r.children:
                show(child, depth + 1)

        print("history:")
        for root in log.roots:
            show(root, 1)
        if log.position is not None:
            print(f"last position: {log.position.node} step {log.position.step} "
                  f"(#{log.position.record})")
        print(f"bookmarks: {len(log.bookmarks)}")
        for slot, mark in sorted(log.bookmarks.items()):
            when = datetime.datetime.fromtimestamp(mark.created).isoformat(timespec="seconds")
            shot = f", screenshot {len(mark.screenshot):,} B" if mark.screenshot_offset else ""
            print(f"  {slot}: {mark.position.node} step {mark.position.step} "
                  f"(#{mark.position.record}) {mark.description!r} {when}{shot}")
        print(f"reached: {len(log.reached)} keys; globals: "
              f"{', '.join(sorted(map(str, log.globals))) or 'none'}")
        offsets = [o for r in records.values() for o in r.checkpoints.values()]
        checkpoint_bytes = sum(len(file.read(o)[1]) for o in offsets)
        shot_bytes = sum(len(m.screenshot) for m in log.bookmarks.values() if m.screenshot_offset)
        other = file.end - file.block_size - checkpoint_bytes - shot_bytes
        print(f"bytes: checkpoints {len(offsets)} ({checkpoint_bytes:,}), screenshots "
              f"{shot_bytes:,}, metadata and framing {other:,}, header {file.block_size:,}")
        if offsets:
            newest = max(offsets)
            print(f"newest checkpoint (offset {newest}), by class:")
            print_sizes_by_class(zlib.decompress(file.read(newest)[1]), top, indent="  ")


def print_sizes_by_class(data, top, indent):
    sizes = sizes_by_class(data)
    print(f"{indent}{sum(c for c, _ in sizes.values()):,} records of {len(sizes)} types")
    for name, (count, nbytes) in sorted(sizes.items(), key=lambda kv: -kv[1][1])[:top]:
        shown = name.encode("utf-8", "backslashreplace").decode("utf-8")   # lone surrogates
        print(f"{indent}  {nbytes:>10,} B  {count:>8,}  {shown}")


def build_parser():
    parser = argparse.ArgumentParser(prog="autosave", description="Inspect autosave files.")
    parser.add_argument("--version", action="version", version=f"autosave {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="print a save as readable JSON",
                          description="Print a save as JSON: its type table and every record, "
                                      "references shown as {\"ref\": index}. No object is built "
                                      "and no module imported, so it is safe on any file.")
    dump.add_argument("file", help="a file written by autosave.save")
    dump.add_argument("--out", help="write the JSON here instead of standard output")
    dump.add_argument("--indent", type=int, default=1, help="JSON indentation (default 1)")
    dump.set_defaults(run=cmd_dump)
    inspect = sub.add_parser("inspect", help="show a checkpoint log's history, or a save's sizes",
                             description="For a checkpoint log: the history tree (node records, "
                                         "step ranges, checkpoints, bookmarks), counts, bytes per "
                                         "part and any torn tail; for a save: records and bytes "
                                         "by class. Read-only: nothing is cut or repaired.")
    inspect.add_argument("file", help="a checkpoint log or a file written by autosave.save")
    inspect.add_argument("--top", type=int, default=15, help="classes to list (default 15)")
    inspect.set_defaults(run=cmd_inspect)
    add_compat_parsers(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.run(args)
    except (LoadError, OSError) as e:
        print(_one_line(f"autosave {args.command}: {getattr(args, 'file', '')}: {e}"),
              file=sys.stderr)
        return 2
    except Exception as e:       # a defect of autosave's, not of the file: say so, briefly
        print(_one_line(f"autosave {args.command}: {getattr(args, 'file', '')}: internal "
                        f"error ({type(e).__name__}: {e}); please report it with the file"),
              file=sys.stderr)
        return 2
    return status or 0


def _one_line(text):
    return " ".join(text.split()).encode("ascii", "backslashreplace").decode("ascii")


if __name__ == "__main__":
    sys.exit(main())
