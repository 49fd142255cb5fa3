"""Reports of check, verify and diff: human text, JSON for tools, GitHub annotations."""

import json

from .rules import BREAKING, INFO, WARNING

ORDER = {BREAKING: 0, WARNING: 1, INFO: 2}


def _where(f):
    if f.file is None:
        return ""
    place = f"{f.file}:{f.line}" if f.line else f.file
    return f"{place}{' (baseline)' if f.in_baseline else ''}: "


def _sorted(findings):
    return sorted(findings, key=lambda f: (ORDER[f.severity], f.baseline, f.rule, f.key))


def check_text(findings, unused, verbose):
    lines = []
    for f in _sorted(findings):
        if f.severity == INFO and not verbose:
            continue
        label = "allowed" if f.allowed else f.severity
        direction = "forward: " if f.forward else ""
        lines.append(f"{_where(f)}{label} {f.rule} [{direction}{f.baseline}]: {f.message}")
        if f.allowed:
            lines.append(f"    accepted by {f.allowed}")
        elif f.fix != "-" and f.severity != INFO:
            lines.append(f"    fix: {f.fix}")
    for allow in unused:
        lines.append(f"warning: {allow.text} ({allow.origin}) accepts nothing; remove it")
    forward = [f for f in findings if f.forward]
    if forward:
        lines.append(f"forward (older builds reading saves of this one): "
                     f"{sum(f.breaking for f in forward)} breaking, "
                     f"{sum(f.severity == WARNING for f in forward)} warnings")
        findings = [f for f in findings if not f.forward] + forward
    breaking = sum(f.breaking for f in findings)
    allowed = sum(f.allowed is not None for f in findings)
    counts = {s: sum(f.severity == s for f in findings) for s in (WARNING, INFO)}
    verdict = "BREAKING" if breaking else "compatible"
    lines.append(f"{verdict}: {breaking} breaking, {allowed} allowed, {counts[WARNING]} "
                 f"warnings, {counts[INFO]} compatible changes"
                 + ("" if verbose or not counts[INFO] else " (--verbose lists them)"))
    return "\n".join(lines) + "\n"


def finding_json(f):
    return {"rule": f.rule, "severity": f.severity, "name": f.name, "member": f.member,
            "file": f.file, "line": f.line, "in_baseline": f.in_baseline,
            "message": f.message, "fix": f.fix, "baseline": f.baseline,
            "allowed": f.allowed, "breaking": f.breaking, "forward": f.forward}


def check_json(findings, unused, baselines):
    return json.dumps({
        "compatible": not any(f.breaking for f in findings),
        "baselines": baselines,
        "findings": [finding_json(f) for f in _sorted(findings)],
        "unused_allows": [a.text for a in unused],
    }, indent=1, ensure_ascii=False) + "\n"


def _escape(text, prop=False):
    """GitHub workflow-command escaping (properties also escape ':' and ',')."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def check_github(findings, unused):
    lines = []
    for f in _sorted(findings):
        if f.severity == INFO:
            continue
        level = "error" if f.breaking else "warning"
        props = [f"title={_escape(f.rule, True)}"]
        if f.file and not f.in_baseline:
            props.insert(0, f"file={_escape(f.file, True)}")
            if f.line:
                props.insert(1, f"line={f.line}")
        note = f" (accepted by {f.allowed})" if f.allowed else f" Fix: {f.fix}"
        lines.append(f"::{level} {','.join(props)}::{_escape(f.message + note)}")
    for allow in unused:
        lines.append(f"::warning title=unused allow::{_escape(allow.text)} accepts nothing")
    return "\n".join(lines) + ("\n" if lines else "")


def verify_text(results):
    lines = [f"{r.status:<12} {r.path}" + (f": {r.error}: {r.message}" if r.error else
                                           f": {r.message}" if r.message else "")
             for r in results]
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return "\n".join(lines) + "\n"


def verify_json(results):
    return json.dumps({"files": [{"path": r.path, "status": r.status, "error": r.error,
                                  "message": r.message} for r in results]},
                      indent=1, ensure_ascii=False) + "\n"


def verify_github(results):
    lines = []
    for r in results:
        if r.status in ("ok", "skipped"):
            continue
        lines.append(f"::error file={_escape(r.path, True)},title=save does not load::"
                     f"{_escape(f'{r.error}: {r.message}')}")
    return "\n".join(lines) + ("\n" if lines else "")


def _plain(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def diff_json(d, a, b):
    return json.dumps({
        "a": {"file": a, "records": d.a_records}, "b": {"file": b, "records": d.b_records},
        "classes": [{"name": n, "a": x, "b": y} for n, x, y in d.classes],
        "changes": [{"path": c.path, "kind": c.kind, "a": _plain(c.a), "b": _plain(c.b)}
                    for c in d.changes],
        "total_changes": d.total_changes,
        "truncated": d.total_changes > len(d.changes),
    }, indent=1, ensure_ascii=False) + "\n"


def diff_text(d, a, b, all_classes):
    lines = [f"A {a}: {d.a_records:,} records; B {b}: {d.b_records:,} records"]
    shown = [(n, x, y) for n, x, y in d.classes if all_classes or x != y]
    if shown:
        width = max(len(n) for n, _, _ in shown)
        lines.append("records by class (A -> B):")
        for name, x, y in shown:
            delta = f"{y - x:+,}" if x != y else "="
            lines.append(f"  {name:<{width}}  {x:>8,} -> {y:<8,} {delta}")
    lines.append(f"{d.total_changes:,} changes along object paths"
                 + (f" (first {len(d.changes)})" if d.total_changes > len(d.changes) else ""))
    for c in d.changes:
        if c.kind == "value":
            lines.append(f"  {c.path}: {c.a!r} -> {c.b!r}")
        elif c.kind == "class":
            lines.append(f"  {c.path}: class {c.a} -> {c.b}")
        elif c.a is not None:
            lines.append(f"  {c.path}: {c.kind} (was {c.a!r})")
        else:
            lines.append(f"  {c.path}: {c.kind} ({c.b!r})")
    return "\n".join(lines) + "\n"
