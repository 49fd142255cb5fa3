"""The checker: a baseline snapshot and the current one -> findings, one per change.

Every rule mirrors what the loader does with an old save (autosave/loading/rebuild.py,
autosave/coroutines/adapter.py, autosave/model/registry.py): a class is found by stable name
or alias, fields are mapped by name, a declared field the save lacks needs a default
unless upgrade hooks run (then the hooks are trusted to supply it, and `verify` checks
that they do), hooks chain from the saved version to the current one, enum members are
found by name, assets by id, coroutines by function, label and live locals. docs/compat.md
states each rule; the repository's test suite holds the checker to the loader.
"""

import attrs

from ..errors import LoadError
from . import resolve
from .fields import FieldJudge
from .inflight import InFlight
from .model import LiveLocal
from .typetext import normal_type, widened  # noqa: F401  (the checker's API)
from .rules import BREAKING, RULES
from .twins import compare_reserved, compare_twins

# The rules whose verdict the load decides (resolve.py asks it): a class found by name,
# its version and hook chain, its fields and members; a coroutine's function, labels
# and locals.
LOADER_CLASS_RULES = frozenset({
    "CLASS_REMOVED", "VERSION_DECREASED", "UPGRADE_MISSING", "FIELD_ADDED_NO_DEFAULT",
    "FIELD_NOW_SAVED_NO_DEFAULT", "ENUM_MEMBER_REMOVED", "LOAD_REFUSED"})
LOADER_ASSET_RULES = frozenset({"ASSET_REMOVED", "LOAD_REFUSED"})
LOADER_COROUTINE_RULES = frozenset({
    "COROUTINE_REMOVED", "COROUTINE_LABEL_REMOVED", "COROUTINE_LOCAL_MISSING",
    "LOAD_REFUSED"})


@attrs.frozen
class Finding:
    rule: str
    name: str               # stable class name, function, asset id or namespace
    member: str | None      # field, enum member, label or local
    file: str | None        # in the current source when the thing still exists there,
    line: int | None        # else where it was in the baseline (``in_baseline``)
    message: str
    fix: str
    baseline: str
    in_baseline: bool = False
    allowed: str | None = None     # the --allow entry or config section that accepted it
    override: str | None = None    # the severity the config gives the rule, if any
    forward: bool = False          # judged the other way: an older build, a newer save

    @property
    def severity(self):
        return self.override or RULES[self.rule].severity

    @property
    def breaking(self):
        return self.severity == BREAKING and self.allowed is None

    @property
    def key(self):
        return f"{self.name}.{self.member}" if self.member is not None else self.name


class Checker:
    def __init__(self, base, current):
        self.base, self.cur = base, current
        self.findings = []
        self.coroutine_names = {}     # baseline function -> the current one it resolves to
        self.upgraded = {}            # field name -> a class whose upgrade hooks run
        self.alias_of = {}
        for name, entry in current.classes.items():
            for alias in entry.aliases:
                self.alias_of.setdefault(alias, name)

    def add(self, rule, name, member, where, message, fix=None, in_baseline=False):
        file, line = where
        self.findings.append(Finding(rule=rule, name=name, member=member, file=file,
                                     line=line, message=message,
                                     fix=fix if fix is not None else RULES[rule].fix,
                                     baseline=self.base.source, in_baseline=in_baseline))

    def run(self):
        self.renamed = {}
        for name, entry in self.base.classes.items():
            current = self.match_class(name, entry)
            if current is not None:
                self.renamed[name] = current
        for name, current in self.renamed.items():
            self.compare_class(name, self.base.classes[name], current,
                               self.cur.classes[current])
        matched = set(self.renamed.values())
        for name, entry in self.cur.classes.items():
            if name not in matched:
                self.add("CLASS_ADDED", name, None, at(entry),
                         f"new class {name} ({entry.path})", "-")
        self.compare_assets()
        self.compare_coroutines()
        self.compare_trust()
        if self.cur.live:
            self.judge_by_loader()
        return self.findings

    # -- the loader's verdict ------------------------------------------------------------

    def judge_by_loader(self):
        """Hold every verdict the load decides to the load's own decision: a refusal no
        rule explained is LOAD_REFUSED; a rule's break the loader accepts is LOAD_ACCEPTED."""
        refusals = []
        for name, entry in self.base.classes.items():
            refusals += [(r, {name, self.renamed.get(name)}, LOADER_CLASS_RULES)
                         for r in resolve.class_refusals(name, entry)]
        for function, entry in self.base.coroutines.items():
            names = {function, self.coroutine_names.get(function)}
            refusals += [(r, names, LOADER_COROUTINE_RULES)
                         for r in resolve.coroutine_refusals(function, entry)]
        refusals += [(r, {r.name}, LOADER_ASSET_RULES)
                     for r in resolve.asset_refusals(self.base.assets or ())]
        refused_names = set()
        for refusal, names, rules in refusals:
            refused_names |= {(n, r) for n in names for r in rules}
            explained = any(f.name in names and f.rule in rules and f.severity == BREAKING
                            for f in self.findings)
            if not explained:
                message, _, fix = refusal.message.partition("; ")
                self.add("LOAD_REFUSED", refusal.name, refusal.member, (None, None),
                         f"the loader refuses a record of {refusal.name} saved by the "
                         f"baseline: {message}", fix or None, in_baseline=True)
        for i, f in enumerate(self.findings):
            decided = (f.rule in LOADER_CLASS_RULES or f.rule in LOADER_COROUTINE_RULES
                       or f.rule in LOADER_ASSET_RULES)
            if decided and f.severity == BREAKING and (f.name, f.rule) not in refused_names:
                self.findings[i] = attrs.evolve(
                    f, rule="LOAD_ACCEPTED", fix="-",
                    message=f"{f.message} -- but the loader accepts every record of the "
                            f"baseline, so this is not a break ({f.rule})")

    # -- classes -------------------------------------------------------------------------

    def match_class(self, name, entry):
        if name in self.cur.classes:
            current = self.cur.classes[name]
            if current.path != entry.path:
                self.add("CLASS_MOVED", name, None, at(current),
                         f"{entry.path} is {current.path} now; saves hold its stable "
                         f"name {name!r}, which is kept", "-")
            return name
        if name in self.alias_of:
            stable = self.alias_of[name]
            self.add("CLASS_RENAMED", name, None, at(self.cur.classes[stable]),
                     f"{name} is saved as {stable} now; old saves load through the alias "
                     f"{name!r}", "-")
            return stable
        self.add("CLASS_REMOVED", name, None, at(entry), (
            f"class {name} ({entry.path}, {where_text(entry)} in the baseline) is gone: "
            f"neither a class's stable name nor an alias is {name!r}, so saves holding one "
            f"stop loading"),
            f"keep the class, or add aliases=({name!r},) to the @autosave.saveable of the "
            f"class replacing it", in_baseline=True)
        return None

    def compare_class(self, name, old, stable, new):
        for alias in old.aliases:
            if alias != stable and alias not in new.aliases:
                self.add("ALIAS_REMOVED", stable, alias, at(new),
                         f"{stable} no longer has the alias {alias!r}",
                         f"keep aliases=({alias!r}, ...) while saves naming it may exist")
        if old.root and not new.root:
            self.add("ROOT_REMOVED", stable, None, at(new), f"{stable} is no longer a "
                     f"@save_root")
        elif new.root and not old.root:
            self.add("ROOT_ADDED", stable, None, at(new), f"{stable} is a @save_root now", "-")
        self.compare_strategy(stable, old, new)
        if old.strategy == "enum" and new.strategy == "enum":
            self.compare_members(stable, old, new)
        hooked = self.compare_versions(stable, old, new)
        if hooked:      # fields whose old values the hooks may convert
            for f in new.fields:
                self.upgraded.setdefault(f.name, stable)
            self.hook_coverage(stable, old, new)
        if old.strategy == "instance" and new.strategy == "instance":
            self.compare_fields(stable, old, new, hooked)

    def compare_strategy(self, stable, old, new):
        before, now = old.strategy, new.strategy
        old_base = old.base if old.base_recorded else new.base
        new_base = new.base
        # A record of a class extending a builtin carries its value or items after the
        # fields; only list, dict and set fill from none.
        if before == now == "instance" and old_base != new_base and not (
                old_base is None and new_base in ("list", "dict", "set")):
            self.add("CLASS_KIND_CHANGED", stable, None, at(new),
                     f"{stable} extended {old_base or 'no builtin type'} and extends "
                     f"{new_base or 'no builtin type'} now; old records do not hold what "
                     f"the new base needs")
            return
        if before == now:
            return
        if before == "instance" and now in ("state", "reduce"):
            self.add("CLASS_KIND_ADOPTED", stable, None, at(new),
                     f"{stable} is saved through {now} now; old records load field by "
                     f"field", "-")
        else:
            self.add("CLASS_KIND_CHANGED", stable, None, at(new),
                     f"{stable} was saved as {before} and is saved as {now} now; old "
                     f"records cannot be read the new way")

    def compare_members(self, stable, old, new):
        now = new.members or ()
        lines = new.member_lines
        for member in old.members or ():
            if member not in now:
                self.add("ENUM_MEMBER_REMOVED", stable, member, at(new),
                         f"enum {stable} has no member {member!r} any more; saves hold "
                         f"members by name",
                         f"keep {member}, or for a rename keep {member} = <the new member's "
                         f"value> as an alias")
        for member in now:
            if member in new.reserved:
                self.add("RESERVED_NAME_REUSED", stable, member,
                         (new.file, lines.get(member, new.line)),
                         f"enum {stable} has a member {member!r}, a name it reserves "
                         f"(__autosave_reserved__): saves may hold the old member of that "
                         f"name", "give the member another name")
            if member not in (old.members or ()):
                self.add("ENUM_MEMBER_ADDED", stable, member,
                         (new.file, lines.get(member, new.line)),
                         f"enum {stable} has a new member {member!r}", "-")

    def compare_versions(self, stable, old, new):
        """Whether hooks run when an old save of this class loads (a complete chain)."""
        before, now = old.version, new.version
        if now < before:
            self.add("VERSION_DECREASED", stable, None, at(new),
                     f"{stable} is version {now}, the baseline's is {before}: saves of "
                     f"version {before} are refused", f"restore version={before} or higher")
            return False
        if now == before:
            return False
        hooks = {u.from_version for u in new.upgrades}
        missing = [v for v in range(before, now) if v not in hooks]
        if missing:
            self.add("UPGRADE_MISSING", stable, None, at(new),
                     f"{stable} went from version {before} to {now}; old saves need "
                     f"upgrade hooks from version{'s' if len(missing) > 1 else ''} "
                     f"{', '.join(map(str, missing))}",
                     " and ".join(f"add @autosave.upgrade({stable!r}, from_version={v})"
                                  for v in missing))
            return False
        return True

    def hook_coverage(self, stable, old, new):
        """Hooks are registered per stable name: say which records they cover, and which
        subclass records (held through a field declared as this class) they do not."""
        left_out = []
        for sub in new.covered_by:
            before, now = self.base.classes.get(sub), self.cur.classes.get(sub)
            if before is not None and now is not None and before.version == now.version:
                left_out.append(f"{sub} (version {now.version})")
        if left_out:
            self.add("UPGRADE_NOT_INHERITED", stable, None, at(new),
                     f"the upgrade hooks of {stable} run for {stable} records only; records "
                     f"of its subclasses {', '.join(left_out)} are not upgraded",
                     f"if the subclasses changed too, bump their versions and register "
                     f"hooks for them (@autosave.upgrade('{left_out[0].split(' ')[0]}', "
                     f"from_version=...))")

    def compare_fields(self, stable, old, new, hooked):
        FieldJudge(self, stable, old, new, hooked).run()
        if new.unjudged is not None:
            self.add("CLASS_NOT_JUDGED", stable, None, at(new),
                     f"the attributes of {stable} are not all known: {new.unjudged}; "
                     f"attributes it gains are not checked",
                     f"set the attributes of {stable} by plain assignments in __init__ "
                     f"(self.name = ...), or give it attrs fields")

    # -- assets, coroutines, trust -------------------------------------------------------

    def incomplete(self, section):
        self.add("BASELINE_INCOMPLETE", section, None, (None, None),
                 f"the baseline (manifest format {self.base.format}) does not record "
                 f"{section}; its rules were not applied", in_baseline=True)

    def compare_assets(self):
        if self.base.assets is None:
            return self.incomplete("assets")
        now = set(self.cur.assets or ())
        for asset_id in self.base.assets:
            if asset_id not in now:
                self.add("ASSET_REMOVED", asset_id, None, (None, None),
                         f"asset {asset_id!r} is no longer registered; saves holding it "
                         f"stop loading",
                         f"keep registering autosave.asset(obj, {asset_id!r})")
        for asset_id in sorted(now - set(self.base.assets)):
            self.add("ASSET_ADDED", asset_id, None, (None, None),
                     f"new asset {asset_id!r}", "-")

    def current_coroutine(self, function):
        """The current entry of a baseline coroutine: by name, or (when the code is
        imported) by what the loader resolves the name to, an alias kept at module level
        for a renamed function."""
        new = self.cur.coroutines.get(function)
        if new is not None or not self.cur.live:
            return new
        try:
            spec = resolve.resolve_coroutine(function)
        except LoadError:
            return None
        new = self.cur.coroutines.get(spec.qualified_name)
        if new is not None:
            self.coroutine_names[function] = spec.qualified_name
            self.add("COROUTINE_RENAMED", function, None, new.where,
                     f"coroutine {function} is {spec.qualified_name} now; saves load "
                     f"through the module-level alias {function!r}", "-")
        return new

    def compare_coroutines(self):
        if self.base.coroutines and not self.base.detailed_coroutines:
            self.incomplete("the locals live at each coroutine label")
        for function, old in self.base.coroutines.items():
            new = self.current_coroutine(function)
            if new is None:
                self.add("COROUTINE_REMOVED", function, None, at(old),
                         f"coroutine {function} ({where_text(old)} in the baseline) is no "
                         f"longer an @autosave.coroutine function; saves holding one of its "
                         f"coroutines stop loading", in_baseline=True)
                continue
            self.compare_labels(function, old, new)
        renamed = {v: k for k, v in self.coroutine_names.items()}
        for function, new in self.cur.coroutines.items():
            old_name = renamed.get(function, function)
            if old_name not in self.base.coroutines:
                continue
            for label, info in new.labels.items():
                if label not in self.base.coroutines[old_name].labels:
                    self.add("COROUTINE_LABEL_ADDED", function, label,
                             (new.file, info.source_line),
                             f"coroutine {function} has a new resume point {label!r}", "-")

    def compare_labels(self, function, old, new):
        detailed = self.base.detailed_coroutines
        ambiguous = compare_twins(self, function, old, new)
        compare_reserved(self, function, old, new)
        InFlight(self, function, old, new).run()
        if detailed:
            self.compare_live(function, "<start>", set(old.params or ()),
                              [LiveLocal(p) for p in new.params or ()], at(new), new)
        for label, info in old.labels.items():
            now = new.labels.get(label)
            if now is None and label in ambiguous:
                self.add("COROUTINE_LABEL_REMOVED", function, label, at(new),
                         f"coroutine {function} no longer has the resume point {label!r}, "
                         f"one of identical `{info.text}` whose number changed: which of "
                         f"them went cannot be told from the code", ambiguous[label])
            elif now is None:
                text = info.text or label
                self.add("COROUTINE_LABEL_REMOVED", function, label, at(new),
                         f"coroutine {function} no longer has the resume point {label!r}: "
                         f"`{text}` at {old.file}:{info.source_line} in the "
                         f"baseline; a save parked there cannot resume",
                         f"restore `{text}` (same statement, same enclosing blocks) in "
                         f"{function}; if it is gone for good, reserve its label so no "
                         f"later yield takes it: @autosave.coroutine(reserved=({label!r},))")
            elif detailed:
                # what every save parked there holds: the locals bound there for sure
                held = {v.name for v in info.live or () if v.held}
                self.compare_live(function, label, held, now.live or (),
                                  (new.file, now.source_line), new)

    def compare_live(self, function, label, before, now, where, new):
        for local in now:
            if not local.required or local.name in before or local.name in new.defaults:
                continue
            if local.name in (new.params or ()):
                fix = (f"give the parameter {local.name!r} a default (def ...({local.name}="
                       f"...)): saves that lack it get the default on load")
            else:
                fix = (f"keep the old name of {local.name!r} at {label!r}, or bind it "
                       f"after the yield")
            self.add("COROUTINE_LOCAL_MISSING", function, local.name, where,
                     f"coroutine {function} at {label!r} needs the local "
                     f"{local.name!r}, which saves parked there do not hold", fix)

    def compare_trust(self):
        if self.base.trusted is None:
            return self.incomplete("the trusted namespaces")
        now = set(self.cur.trusted or ())

        def trusted(ns):
            return any(".".join(ns.split(".")[:i]) in now for i in range(1, ns.count(".") + 2))

        for ns in self.base.trusted:
            if not trusted(ns):
                self.add("NAMESPACE_UNTRUSTED", ns, None, (None, None),
                         f"namespace {ns!r} was trusted and is not any more: saves naming "
                         f"its classes or functions are refused",
                         f"call autosave.allow({ns!r}), or keep a @saveable class in it")
        for ns in sorted(now - set(self.base.trusted)):
            self.add("NAMESPACE_TRUSTED", ns, None, (None, None),
                     f"namespace {ns!r} is trusted now", "-")


def at(entry):
    return entry.where


def where_text(entry):
    return f"{entry.file or '?'}:{entry.line or '?'}"


def compare(base, current):
    """The findings of judging ``current`` against ``base`` (two Snapshots)."""
    return Checker(base, current).run()


def compare_forward(base, current):
    """Forward compatibility: the findings of the older build ``base`` reading saves of
    ``current`` (cloud saves, a rollback). The older code is not imported, so the
    manifest rules judge; each finding is marked ``forward``."""
    newer = attrs.evolve(current, live=False)
    older = attrs.evolve(base, live=False, source=current.source)
    return [attrs.evolve(f, forward=True, baseline=base.source)
            for f in Checker(newer, older).run()]
