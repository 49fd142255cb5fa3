"""The `autosave` command.

    autosave dump FILE [--out OUT]    a save as readable JSON (never builds objects,
                                      so it is safe on any file)
"""

import argparse
import json
import sys

from .errors import LoadError
from .format import to_jsonable


def cmd_dump(args):
    with open(args.file, "rb") as f:
        data = f.read()
    text = json.dumps(to_jsonable(data), indent=args.indent, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def build_parser():
    parser = argparse.ArgumentParser(prog="autosave", description="Inspect autosave files.")
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="print a save as readable JSON",
                          description="Print a save as JSON: its type table and every record, "
                                      "references shown as {\"ref\": index}. No object is built "
                                      "and no module imported, so it is safe on any file.")
    dump.add_argument("file", help="a file written by autosave.save")
    dump.add_argument("--out", help="write the JSON here instead of standard output")
    dump.add_argument("--indent", type=int, default=1, help="JSON indentation (default 1)")
    dump.set_defaults(run=cmd_dump)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (LoadError, OSError) as e:
        print(f"autosave {args.command}: {getattr(args, 'file', '')}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
