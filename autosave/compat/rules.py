"""The compatibility rules: one id per kind of change, what it means for old saves.

A rule's severity is fixed: ``breaking`` (an old save may fail to load, or load wrong:
the check exits 1), ``warning`` (loads, but something may be lost: reported, exit 0) or
``info`` (a compatible change, listed so a reviewer sees it). docs/compat.md renders
this table; a test keeps the two the same.
"""

import attrs

BREAKING, WARNING, INFO = "breaking", "warning", "info"
SEVERITIES = (BREAKING, WARNING, INFO)


@attrs.frozen
class Rule:
    id: str
    severity: str
    what: str
    why: str
    fix: str


RULES = {r.id: r for r in [
    Rule("CLASS_REMOVED", BREAKING,
         "a class of the baseline resolves neither by its stable name nor by an alias",
         "saves name each object's class by stable name; the load stops with "
         "IncompatibleSaveError",
         "keep the class, or add aliases=('OLD.NAME',) to the @autosave.saveable of the "
         "class replacing it"),
    Rule("CLASS_RENAMED", INFO,
         "the class's stable name changed and the old name is an alias",
         "saves holding the old name load through the alias", "-"),
    Rule("CLASS_MOVED", INFO,
         "the Python class was renamed or moved to another module, its stable name kept",
         "saves hold the stable name, not the Python path", "-"),
    Rule("CLASS_ADDED", INFO, "a class the baseline did not have",
         "no old save holds it", "-"),
    Rule("CLASS_KIND_CHANGED", BREAKING,
         "how the class is saved changed in a way old records cannot follow: to or from "
         "an enum, from __getstate__/__setstate__ or __reduce__ to anything else, or "
         "the builtin type it extends (str, int, tuple...) changed",
         "old records hold a member name, a state or constructor arguments the class no "
         "longer reads",
         "keep the class saved the old way, or give the new one a new stable name"),
    Rule("CLASS_KIND_ADOPTED", INFO,
         "a class saved field by field now defines __getstate__/__setstate__ or "
         "__reduce__",
         "old records are still read field by field", "-"),
    Rule("ALIAS_REMOVED", WARNING,
         "an alias the baseline class had is gone",
         "saves of releases older than the baseline that hold the alias stop loading; "
         "saves of the baseline itself are fine",
         "keep the alias while saves of those releases may still exist"),
    Rule("FIELD_ADDED", INFO, "a declared field added with a default",
         "old saves get the default", "-"),
    Rule("FIELD_ADDED_NO_DEFAULT", BREAKING,
         "a declared field added without a default, with no upgrade hook chain from the "
         "baseline's version",
         "an old save does not hold the field and nothing supplies it",
         "give FIELD a default, or bump the version and add an @autosave.upgrade hook "
         "that sets it"),
    Rule("FIELD_RENAMED", INFO,
         "a field was renamed and declares its old name (autosave.renamed_from, "
         "__autosave_renamed__)", "saves fill it through the old name", "-"),
    Rule("FIELD_PROBABLY_RENAMED", BREAKING,
         "a field of the baseline is gone and a new one of the same type appeared in the "
         "same class, and no old name is declared",
         "if it is a rename, every save's value is dropped on load (or refused when the "
         "new field has no default)",
         "declare the old name with autosave.renamed_from(OLD); if unrelated, reserve the "
         "old name: __autosave_reserved__ = (OLD,)"),
    Rule("RESERVED_NAME_REUSED", BREAKING,
         "a field or enum member uses a name the class reserves (__autosave_reserved__), "
         "or a coroutine's resume point has a label the baseline reserved "
         "(@autosave.coroutine(reserved=...))",
         "saves may hold a value under that name, or be parked at a removed point of "
         "that label, that meant something else",
         "choose another name; for a label, keep it reserved so the yield takes another"),
    Rule("RESERVED_NAME_RELEASED", WARNING,
         "a name or label the baseline reserved is not reserved any more",
         "a later change could reuse it with another meaning",
         "keep it in __autosave_reserved__ (a label: in reserved= of @autosave.coroutine)"),
    Rule("ATTRIBUTE_ADDED_NO_DEFAULT", BREAKING,
         "a plain class's __init__ sets a new attribute and the class body gives it no "
         "default",
         "loads never run __init__: every loaded instance lacks the attribute",
         "give it a class-level default in the class body (or set it in "
         "__autosave_loaded__)"),
    Rule("CLASS_NOT_JUDGED", WARNING,
         "a plain class whose attributes the gate cannot read from __init__ (no source, "
         "setattr, self.__dict__)",
         "attributes it gains or loses are not checked",
         "set its attributes by plain assignments in __init__, or declare attrs fields"),
    Rule("FIELD_TYPE_CONVERTED_BY_HOOK", WARNING,
         "a field's declared type changed and an upgrade hook chain runs for old saves",
         "the hook must convert the old values; the check cannot see that it does",
         "run `autosave compat verify` on a corpus: it holds upgraded records to the "
         "declared types"),
    Rule("FIELD_REMOVED", INFO, "a field of the baseline is gone",
         "its saved value is dropped on load", "-"),
    Rule("FIELD_TYPE_CHANGED", BREAKING,
         "a field's declared type changed to one that does not accept every old value, "
         "with no version bump and upgrade hook chain",
         "old saves hold values of the old type; the load would put them in the field "
         "unconverted",
         "bump the version and add an @autosave.upgrade hook converting FIELD, or keep "
         "the old type in a union"),
    Rule("FIELD_TYPE_WIDENED", INFO,
         "a field's declared type now accepts every value the old type did (a union "
         "member added, int -> float, -> object/Any)",
         "old values are still valid", "-"),
    Rule("FIELD_NOW_SAVED", INFO,
         "a transient field is saved now and has a default",
         "old saves do not hold it; it gets its default", "-"),
    Rule("FIELD_NOW_SAVED_NO_DEFAULT", BREAKING,
         "a transient field is saved now, has no default and no upgrade hook chain",
         "old saves do not hold it and nothing supplies it",
         "give FIELD a default, or bump the version and add an @autosave.upgrade hook"),
    Rule("FIELD_NOW_TRANSIENT", WARNING, "a saved field is transient now",
         "the value old saves hold for it is discarded on load",
         "if the old value matters, read it in an upgrade hook before it is dropped"),
    Rule("VERSION_DECREASED", BREAKING, "the class version is lower than the baseline's",
         "a save from a newer version than the code is refused",
         "restore the version (versions only grow)"),
    Rule("UPGRADE_MISSING", BREAKING,
         "the version was bumped but a hook of the chain from the baseline's version is "
         "missing",
         "loading an old save needs every hook from its version to the current one",
         "add @autosave.upgrade(NAME, from_version=V)"),
    Rule("UPGRADE_NOT_INHERITED", WARNING,
         "a class's version was bumped with hooks, and subclasses of it (which a field "
         "declared as the class may hold) kept their version",
         "hooks are per stable name: the subclasses' records are not upgraded",
         "bump the subclasses' versions and register hooks for them if they changed too"),
    Rule("ENUM_MEMBER_REMOVED", BREAKING, "an enum member (or its name) is gone",
         "saves hold enum members by name",
         "keep the member; for a rename keep OLD = <the new member's value> as an alias"),
    Rule("ENUM_MEMBER_ADDED", INFO, "a new enum member", "no old save holds it", "-"),
    Rule("ASSET_REMOVED", BREAKING, "a registered asset id of the baseline is gone",
         "saves hold assets by id; the load stops with IncompatibleSaveError",
         "keep registering autosave.asset(obj, ID), under its old id"),
    Rule("ASSET_ADDED", INFO, "a new asset id", "no old save holds it", "-"),
    Rule("COROUTINE_REMOVED", BREAKING,
         "an @autosave.coroutine function of the baseline is gone or not decorated",
         "a save may hold a coroutine of it, parked anywhere",
         "keep the function (decorated, same module and name) while old saves exist"),
    Rule("COROUTINE_LABEL_REMOVED", BREAKING,
         "a resume point (label) of a coroutine is gone: its yield statement was edited, "
         "moved into another block or deleted",
         "a save may be parked at that yield; it cannot resume anywhere else",
         "restore the yield statement; a small edit keeps its label when autosave-codegen "
         "runs with the previous manifest in place, or pin it: yield autosave.label(OLD, "
         "value); reserve a label gone for good"),
    Rule("COROUTINE_LABEL_ADDED", INFO, "a new resume point", "no old save is parked there",
         "-"),
    Rule("COROUTINE_LOCAL_MISSING", BREAKING,
         "at a resume point kept, the code needs a local (or parameter) that was not "
         "live there in the baseline: a local renamed, or a new one used after the yield",
         "a save parked there does not hold it",
         "keep the old local's name, or bind the new local after the yield; for a new "
         "parameter, give it a default"),
    Rule("COROUTINE_TWINS_CHANGED", BREAKING,
         "the number of identical yields (same statement in the same blocks) of a "
         "coroutine changed, and the baseline's are not all pinned",
         "unpinned identical yields are told apart by their order; a save parked at one "
         "may resume at another, a step early or late",
         "pin the baseline's labels on the yields they name: yield autosave.label(OLD, "
         "value); or keep their number"),
    Rule("COROUTINE_LOCAL_FROM_UPGRADED", WARNING,
         "a local saved at a kept label is computed from a field of a class whose upgrade "
         "hooks run for old saves",
         "the hook converts the field; the local keeps the value computed before",
         "recompute the local after the yield, or convert it where the coroutine resumes"),
    Rule("COROUTINE_YIELDS_REORDERED", WARNING,
         "two kept resume points swapped places", "a save parked at one continues in the "
         "new order", "check a save parked between them, or keep the order"),
    Rule("COROUTINE_LOOP_CHANGED", WARNING,
         "the header of a loop around a kept resume point changed (a bound, an iterable)",
         "saves parked in the loop continue under the new header",
         "check that a save parked in the loop still ends where it should"),
    Rule("COROUTINE_RENAMED", INFO,
         "a coroutine function was renamed and its old name is kept as a module-level "
         "alias", "saves naming the old function resolve through the alias", "-"),
    Rule("LOAD_REFUSED", BREAKING,
         "the loader, asked with the records a baseline save holds, refuses one for a "
         "reason no other rule names",
         "a save of the baseline stops loading with the loader's own error",
         "follow the loader's message"),
    Rule("LOAD_ACCEPTED", INFO,
         "a change a rule would call breaking, which the loader accepts for every record "
         "of the baseline (a class or coroutine resolved another way)",
         "the load decides; it finds what the save names", "-"),
    Rule("FORWARD_NOT_JUDGED", BREAKING,
         "forward mode with the older build's code: the older packages could not be "
         "imported (or did not answer) to ask their loader",
         "whether the older build reads this build's saves is unknown; the gate fails "
         "closed",
         "make the older release's packages importable from the --older-code directory, "
         "or judge by the manifest rules only: leave out --older-code"),
    Rule("ROOT_REMOVED", WARNING, "a class is no longer a @save_root",
         "loading still works while its namespace stays trusted",
         "keep @autosave.save_root if games still pass its instances as roots"),
    Rule("ROOT_ADDED", INFO, "a new @save_root class", "-", "-"),
    Rule("NAMESPACE_UNTRUSTED", BREAKING,
         "a namespace trusted by the baseline is not trusted now",
         "saves naming its classes or functions are refused with UntrustedTypeError",
         "call autosave.allow(NAMESPACE) again, or keep a @saveable class there"),
    Rule("NAMESPACE_TRUSTED", INFO, "a newly trusted namespace", "-", "-"),
    Rule("BASELINE_INCOMPLETE", WARNING,
         "the baseline is an older manifest without a section (assets, coroutine "
         "details, trusted namespaces): those rules could not be applied",
         "a manifest of format 1 did not record them",
         "take a new snapshot with `autosave compat snapshot` at the next release"),
]}


def rule(rule_id):
    return RULES[rule_id]
