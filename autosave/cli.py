"""The `autosave` command.

    autosave dump FILE [--out OUT]    a save as readable JSON
    autosave inspect FILE             a checkpoint log's history tree, checkpoints,
                                      bookmarks and sizes; or a save's sizes by class
        [--content JSON]              and what that content would upgrade in the log
    autosave compat snapshot|check|verify   the release gate (autosave/compat/)
    autosave diff A B                 two saves compared by structure
    autosave docs [TOPIC]             the documentation shipped with autosave

Neither builds objects or imports anything a file names, so both are safe on any file.
"""

import argparse
import importlib.resources
import json
import os
import sys
from pathlib import Path

from . import __version__
from .compat.cli import add_parsers as add_compat_parsers
from .errors import LoadError
from .format.wire import MAGIC as SAVE_MAGIC
from .format.dump import to_jsonable
from .log.content import read_content
from .log.inspect import inspect_log, print_sizes_by_class
from .log.inspect import text as printable
from .log.records import MAGIC as LOG_MAGIC


def cmd_dump(args):
    with open(args.file, "rb") as f:
        data = f.read()
    if data[:8] and LOG_MAGIC.startswith(data[:8]):
        raise LoadError(f"a checkpoint log, not a save: `autosave inspect {printable(args.file)}` "
                        f"shows its history and checkpoints; in Python, "
                        f"autosave.CheckpointLog.open(path) opens it")
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
    if head and LOG_MAGIC.startswith(head):     # a log, or the first bytes of one
        inspect_log(args.file, args.top, content=read_content(args.content))
    elif head.startswith(SAVE_MAGIC):
        with open(args.file, "rb") as f:
            data = f.read()
        print(f"{printable(args.file)}: autosave save, {len(data):,} bytes")
        print_sizes_by_class(data, args.top, indent="")
    else:
        raise LoadError(f"neither an autosave save nor a checkpoint log (magic {head[:8]!r} "
                        f"at offset 0)")


def docs_folder():
    """The shipped docs (autosave/docs in an installed package), or a source checkout's
    docs/ folder when autosave runs from the repository without being installed."""
    try:
        found = importlib.resources.files("autosave.docs")
        if found.joinpath("format.md").is_file():
            return found
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "docs"


def doc_topics():
    """{topic: text} of every shipped document, by name (format, security, ...)."""
    folder = docs_folder()
    return {entry.name[:-3]: entry.read_text(encoding="utf-8")
            for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".md")}


def cmd_docs(args):
    topics = doc_topics()
    if args.topic is None:
        width = max(map(len, topics))
        for name, text in topics.items():
            title = text.partition("\n")[0].lstrip("# ").strip()
            print(f"{name:<{width}}  {title}")
        print("\nautosave docs TOPIC prints one.")
        return 0
    text = topics.get(args.topic.removesuffix(".md").removeprefix("docs/"))
    if text is None:
        print(f"autosave docs: no topic {args.topic!r}; the topics are "
              f"{', '.join(topics)}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def version_text():
    """The version, and which loops the engine runs: the C extension, or the Python
    fallback (same bytes, slower) and why."""
    from .format import kernels
    if kernels.IMPLEMENTATION == "C":
        return f"autosave {__version__} (C loops: autosave._speedups)"
    why = ("AUTOSAVE_PUREPYTHON is set" if os.environ.get("AUTOSAVE_PUREPYTHON") else
           "the C extension autosave._speedups was not built: reinstall with a C compiler")
    return f"autosave {__version__} (pure-Python loops: {why})"


class _Version(argparse.Action):
    """argparse's own version action wraps the line to the terminal's width."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser():
    parser = argparse.ArgumentParser(prog="autosave", description="Inspect autosave files.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version and which loops run (C or pure Python)")
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
    inspect.add_argument("--content", metavar="JSON",
                         help="for a log: what opening it with this content (a JSON object "
                              "node -> [step key, ...]) would upgrade; nothing is written")
    inspect.set_defaults(run=cmd_inspect)
    docs = sub.add_parser("docs", help="print the documentation shipped with autosave",
                          description="Without TOPIC, list the documents; with one, print it "
                                      "(the Markdown of docs/TOPIC.md).")
    docs.add_argument("topic", nargs="?", help="format, security, types, codegen, ...")
    docs.set_defaults(run=cmd_docs)
    add_compat_parsers(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.run(args)
    except BrokenPipeError:
        # the reader went away (``autosave inspect log | head``): not an error of ours;
        # point stdout at nothing so the interpreter's final flush stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (LoadError, OSError) as e:
        file = getattr(args, "file", None)
        where = f"{file}: " if file is not None else ""
        print(_one_line(f"autosave {args.command}: {where}{_without_path(e, file)}"),
              file=sys.stderr)
        return 2
    except Exception as e:       # a defect of autosave's, not of the file: say so, briefly
        print(_one_line(f"autosave {args.command}: {getattr(args, 'file', '')}: internal "
                        f"error ({type(e).__name__}: {e}); please report it with the file"),
              file=sys.stderr)
        return 2
    return status or 0


def _without_path(error, path):
    """The error's own words: the line already begins with the path, so a path the
    error repeats (an OSError's filename, a log error's prefix) is left out."""
    if isinstance(error, OSError) and error.strerror:
        other = error.filename not in (None, path) and os.fsdecode(error.filename) != path
        return f"{error.strerror} ({error.filename})" if other else error.strerror
    message = str(error)
    for prefix in (f"{path}: ", f"{printable(path)}: "):
        while message.startswith(prefix):
            message = message[len(prefix):]
    return message


def _one_line(text):
    return " ".join(text.split()).encode("ascii", "backslashreplace").decode("ascii")


if __name__ == "__main__":
    sys.exit(main())
