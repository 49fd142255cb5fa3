"""Accepted breaks (``--allow RULE_ID:name``) and the ``[tool.autosave.compat]`` section.

    [tool.autosave.compat]
    baseline-path = "compat"             # where --against looks inside a git ref
    allow = ["FIELD_ADDED_NO_DEFAULT:shop.Item.discount"]   # deliberate breaks
    severity = {FIELD_REMOVED = "breaking", CLASS_NOT_JUDGED = "breaking"}  # per rule
    forward = true                       # also judge older builds reading newer saves

An entry names a rule and what it accepts: a finding's name (a class, function, asset
id or namespace: every member of it) or ``name.member`` (one field, enum member, label
or local). Accepted findings stay in the report, marked with the entry that accepted
them; an entry that accepts nothing is reported too, so stale entries do not pile up.
"""

import tomllib

import attrs

from ..errors import CompatConfigError
from .rules import RULES, SEVERITIES

SECTION = "tool.autosave.compat"
DEFAULT_BASELINE_PATH = "compat"


@attrs.frozen
class Allow:
    rule: str
    name: str
    origin: str          # "--allow" or "pyproject.toml [tool.autosave.compat]"

    @property
    def text(self):
        return f"{self.rule}:{self.name}"

    def accepts(self, finding):
        return finding.rule == self.rule and self.name in (finding.name, finding.key)


@attrs.frozen
class Config:
    allows: tuple = ()
    baseline_path: str = DEFAULT_BASELINE_PATH
    severities: dict = attrs.field(factory=dict)     # rule id -> severity
    forward: bool = False


def parse_severities(value, origin):
    if not isinstance(value, dict):
        raise CompatConfigError(f"{origin}: severity must be a table of RULE_ID = "
                                f"\"breaking\" | \"warning\" | \"info\"")
    for rule, severity in value.items():
        if rule not in RULES:
            raise CompatConfigError(f"{origin}: unknown rule {rule!r} in severity; the rules "
                                    f"are {', '.join(sorted(RULES))}")
        if severity not in SEVERITIES:
            raise CompatConfigError(f"{origin}: severity of {rule} must be one of "
                                    f"{', '.join(SEVERITIES)}, not {severity!r}")
    return dict(value)


def parse_allow(entry, origin):
    if not isinstance(entry, str) or ":" not in entry:
        raise CompatConfigError(f"{origin}: {entry!r} is not RULE_ID:name "
                                f"(e.g. FIELD_ADDED_NO_DEFAULT:shop.Item.discount)")
    rule, _, name = entry.partition(":")
    rule, name = rule.strip(), name.strip()
    if rule not in RULES:
        raise CompatConfigError(f"{origin}: unknown rule {rule!r} in {entry!r}; the rules "
                                f"are {', '.join(sorted(RULES))}")
    if not name:
        raise CompatConfigError(f"{origin}: {entry!r} names no class, function, asset or "
                                f"namespace after the colon")
    return Allow(rule, name, origin)


def read(path):
    """The Config of a pyproject.toml (defaults when the file or section is absent)."""
    try:
        with open(path, "rb") as f:
            document = tomllib.load(f)
    except FileNotFoundError:
        return Config()
    except OSError as e:
        raise CompatConfigError(f"{path}: cannot read it: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise CompatConfigError(f"{path}: not valid TOML: {e}") from None
    section = document.get("tool", {}).get("autosave", {}).get("compat")
    if section is None:
        return Config()
    origin = f"{path} [{SECTION}]"
    if not isinstance(section, dict):
        raise CompatConfigError(f"{origin} must be a table")
    unknown = set(section) - {"allow", "baseline-path", "severity", "forward"}
    if unknown:
        raise CompatConfigError(f"{origin}: unknown key(s) {', '.join(sorted(unknown))}; "
                                f"known: allow, baseline-path, severity, forward")
    allows = section.get("allow", [])
    if not isinstance(allows, list):
        raise CompatConfigError(f"{origin}: allow must be a list of \"RULE_ID:name\" strings")
    baseline_path = section.get("baseline-path", DEFAULT_BASELINE_PATH)
    if not isinstance(baseline_path, str) or not baseline_path:
        raise CompatConfigError(f"{origin}: baseline-path must be a non-empty string")
    forward = section.get("forward", False)
    if not isinstance(forward, bool):
        raise CompatConfigError(f"{origin}: forward must be true or false")
    return Config(tuple(parse_allow(a, origin) for a in allows), baseline_path,
                  parse_severities(section.get("severity", {}), origin), forward)


def apply(findings, allows, severities=None):
    """(findings with the config's severities and the accepted ones marked, the allow
    entries that accepted none)."""
    used = set()
    out = []
    for finding in findings:
        if severities and finding.rule in severities:
            finding = attrs.evolve(finding, override=severities[finding.rule])
        for allow in allows:
            if allow.accepts(finding):
                used.add(allow)
                finding = attrs.evolve(finding, allowed=f"{allow.text} ({allow.origin})")
                break
        out.append(finding)
    return out, [a for a in allows if a not in used]
