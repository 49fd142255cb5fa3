"""The `autosave compat snapshot | check | verify` and `autosave diff` commands.

Exit status: 0 compatible (or, for diff, the same structure), 1 breaking (differing),
2 a usage or input error (a bad baseline, corpus, config or file).
"""

import os
import sys
import tempfile

from ..errors import CompatError, LoadError
from . import baselines as baselines_
from . import config as config_
from . import model, report
from .check import compare, compare_forward
from .corpus import attributes_seen, with_corpus

FORMATS = ("human", "json", "github")


def add_parsers(sub):
    compat = sub.add_parser(
        "compat", help="the release gate: snapshot a release's schema, check a build "
                       "against it, verify a save corpus (docs/compat.md)",
        description="Judge whether a build still loads the saves of every shipped release. "
                    "Exit 0 compatible, 1 breaking, 2 usage or input error.")
    commands = compat.add_subparsers(dest="compat_command", required=True)

    snap = commands.add_parser("snapshot", help="write the schema of PACKAGE as it is now",
                               description="Import PACKAGE and write its schema snapshot "
                                           "(the manifest): commit it at release.")
    snap.add_argument("packages", nargs="+", metavar="PACKAGE")
    snap.add_argument("-o", "--out", help="write here (default: standard output)")
    snap.add_argument("--corpus", action="append", default=[], metavar="PATH",
                      help="saves of this release: attributes their records hold become "
                           "fields of plain classes (origin corpus)")
    snap.set_defaults(run=cmd_snapshot)

    check = commands.add_parser(
        "check", help="judge the current code against baseline snapshots",
        description="Compare PACKAGE as it is now with each baseline. PACKAGE may also be "
                    "a snapshot file (*.json) of the current build.")
    check.add_argument("packages", nargs="+", metavar="PACKAGE")
    check.add_argument("--baseline", action="append", default=[], metavar="PATH",
                       help="a snapshot file, or a directory of them (repeatable; default: "
                            "the baseline path, if it exists)")
    check.add_argument("--against", action="append", default=[], metavar="GITREF",
                       help="read the baselines from this git ref (repeatable)")
    check.add_argument("--baseline-path", metavar="PATH",
                       help="where the baselines are, for --against and the default "
                            "(default: baseline-path in [tool.autosave.compat], else compat)")
    check.add_argument("--allow", action="append", default=[], metavar="RULE_ID:name",
                       help="accept a deliberate break (repeatable); recorded in the report")
    check.add_argument("--config", default="pyproject.toml",
                       help="the file holding [tool.autosave.compat] (default pyproject.toml)")
    check.add_argument("--forward", action="store_true",
                       help="also judge forward compatibility: each baseline's (older) "
                            "build reading saves of this one (cloud saves, rollbacks); "
                            "reported separately (default: forward in the config)")
    check.add_argument("--corpus", action="append", default=[], metavar="PATH",
                       help="saves of the baseline releases: attributes their records "
                            "hold become fields of the baselines' plain classes")
    check.add_argument("--older-code", metavar="DIR",
                       help="with forward mode: the older release's source tree (the "
                            "directory its packages import from); a subprocess imports "
                            "them there and asks their loader. Baselines read with "
                            "--against use their ref's tree without it")
    check.add_argument("--format", choices=FORMATS, default="human")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="also list the compatible changes")
    check.set_defaults(run=cmd_check)

    verify = commands.add_parser(
        "verify", help="load every save of a corpus with the current code",
        description="Import PACKAGE, then load every save under --saves with the same trust "
                    "rules as autosave.load, and hold its fields to the declared types.")
    verify.add_argument("packages", nargs="+", metavar="PACKAGE")
    verify.add_argument("--saves", action="append", required=True, metavar="PATH",
                        help="a save, or a directory searched recursively (repeatable)")
    verify.add_argument("--format", choices=FORMATS, default="human")
    verify.add_argument("--content", metavar="JSON",
                        help="the game's current content, {node: [step key, ...]}: every "
                             "bookmark of every checkpoint log must restore under it")
    verify.set_defaults(run=cmd_verify)

    diff = sub.add_parser(
        "diff", help="compare two saves by structure",
        description="Compare two saves: records by class, and changed values, classes, "
                    "fields and items along object paths. Nothing is built or imported: "
                    "safe on any file. Exit 0 same structure, 1 different, 2 unreadable.")
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B")
    diff.add_argument("--format", choices=("human", "json"), default="human")
    diff.add_argument("--limit", type=int, default=200, help="changes listed (default 200)")
    diff.add_argument("--all-classes", action="store_true",
                      help="list every class, not only those whose counts differ")
    diff.set_defaults(run=cmd_diff)


def fail(command, error):
    print(f"autosave {command}: {error}", file=sys.stderr)
    return 2


def cmd_snapshot(args):
    from . import live
    try:
        snap = live.manifest(args.packages)
        if args.corpus:
            snap = with_corpus(snap, attributes_seen(args.corpus))
        text = _dumps(snap)
        if args.out:
            directory = os.path.dirname(args.out)
            if directory:
                os.makedirs(directory, exist_ok=True)
            with open(args.out, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            print(f"wrote {args.out}")
        else:
            sys.stdout.write(text)
    except (CompatError, OSError) as e:
        return fail("compat snapshot", e)
    return 0


def _dumps(snapshot):
    return model.dumps(snapshot)


def load_baselines(args, cfg, refs=None):
    """The baselines; ``refs`` (if given) gets {source: git ref} of those from git."""
    path = args.baseline_path or cfg.baseline_path
    out = []
    for item in args.baseline:
        out += baselines_.from_path(item)
    for ref in args.against:
        found = baselines_.from_git(ref, path)
        if refs is not None:
            refs.update((b.source, ref) for b in found)
        out += found
    if not args.baseline and not args.against:
        if not os.path.isdir(path) and not os.path.isfile(path):
            raise CompatError(f"no baseline: give --baseline PATH or --against GITREF (the "
                              f"default baseline path {path!r} does not exist)")
        out += baselines_.from_path(path)
    return out


def current_snapshot(packages, bases):
    if len(packages) == 1 and packages[0].endswith(".json"):
        snap = model.load(packages[0])
        if snap.format < 2:
            raise CompatError(f"{packages[0]}: the current build must be described by a "
                              f"snapshot of format 2 (autosave compat snapshot)")
        return snap
    from . import live
    return live.current(packages, bases)


def cmd_check(args):
    try:
        cfg = config_.read(args.config)
        allows = list(cfg.allows) + [config_.parse_allow(a, "--allow") for a in args.allow]
        refs: dict = {}
        bases = load_baselines(args, cfg, refs)
        if args.corpus:
            seen = attributes_seen(args.corpus)
            bases = [with_corpus(b, seen) for b in bases]
        current = current_snapshot(args.packages, bases)
        findings = []
        for base in bases:
            findings += compare(base, current)
        if args.forward or cfg.forward:
            findings += forward_findings(args, bases, current, refs)
        findings, unused = config_.apply(findings, allows, cfg.severities)
    except (CompatError, OSError) as e:
        return fail("compat check", e)
    if args.format == "json":
        sys.stdout.write(report.check_json(findings, unused, [b.source for b in bases]))
    elif args.format == "github":
        sys.stdout.write(report.check_github(findings, unused))
    else:
        sys.stdout.write(report.check_text(findings, unused, args.verbose))
    return 1 if any(f.breaking for f in findings) else 0


def forward_findings(args, bases, current, refs):
    """Forward mode: by the older build's loader where its code is at hand (--older-code,
    or an --against ref's tree), else by the manifest rules."""
    from . import forward
    packages = list(current.packages) if args.packages[0].endswith(".json") \
        else list(args.packages)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        trees: dict = {}
        for base in bases:
            code = args.older_code
            if code is None and base.source in refs:
                ref = refs[base.source]
                if ref not in trees:
                    trees[ref] = forward.code_of_ref(ref, os.path.join(tmp, str(len(trees))))
                code = trees[ref]
            out += forward.judge(base, current, packages, code) if code is not None \
                else compare_forward(base, current)
    return out


def cmd_verify(args):
    from . import live
    from .verify import BREAKING, CORRUPT, verify
    try:
        from ..log.content import read_content
        live.import_packages(args.packages)
        results = verify(args.saves, read_content(args.content))
    except (CompatError, OSError, LoadError) as e:
        return fail("compat verify", e)
    writer = {"json": report.verify_json, "github": report.verify_github}.get(
        args.format, report.verify_text)
    sys.stdout.write(writer(results))
    if any(r.status == CORRUPT for r in results):
        return 2
    return 1 if any(r.status in BREAKING for r in results) else 0


def cmd_diff(args):
    from .diff import diff
    if args.limit < 0:
        return fail("diff", "--limit must be >= 0")
    try:
        with open(args.a, "rb") as f:
            a = f.read()
        with open(args.b, "rb") as f:
            b = f.read()
        result = diff(a, b, args.limit, (args.a, args.b))
    except (LoadError, OSError) as e:
        return fail("diff", e)
    if args.format == "json":
        sys.stdout.write(report.diff_json(result, args.a, args.b))
    else:
        sys.stdout.write(report.diff_text(result, args.a, args.b, args.all_classes))
    return 1 if result.total_changes or any(x != y for _, x, y in result.classes) else 0
