"""The field rules of the gate: one class of a baseline against its current entry.

Fields are matched by name and by the old names a field declares
(``autosave.renamed_from``, ``__autosave_renamed__``), as the loader maps them. A field
gone and a field new of the same type in the same class is read as a probable rename,
whose only safe fixes are declaring the old name or reserving it
(``__autosave_reserved__``): suggesting a default there would turn a refused load into
a silently lost value. A plain class's attributes come from its ``__init__``
(``autosave.compat.plain``), which loads never run.
"""

from .model import ClassEntry, FieldEntry
from .typetext import normal_type, widened


def type_of(field: FieldEntry, classes, renamed=None):
    return normal_type(field.type, classes, renamed)


class FieldJudge:
    def __init__(self, checker, stable: str, old: ClassEntry, new: ClassEntry, hooked: bool):
        self.c, self.stable, self.old, self.new, self.hooked = checker, stable, old, new, hooked
        self.version = f"version {old.version}"
        # attributes read from __init__ are compared only when the baseline recorded them
        self.plain_known = checker.base.format >= 4
        self.before = {f.name: f for f in old.fields
                       if self.plain_known or f.origin is None
                       or f.origin in ("corpus", "corpus-some")}
        self.now = {f.name: f for f in new.fields if self.plain_known or f.origin is None}
        # current name -> the baseline field it continues under an old name
        self.continues = {}
        for f in self.now.values():
            for o in f.old_names:
                if o in self.before and o not in self.now:
                    self.continues[f.name] = self.before[o]

    def where(self, field):
        return (self.new.file, field.line or self.new.line)

    def add(self, rule, name, where, message, fix=None):
        self.c.add(rule, self.stable, name, where, message, fix)

    def run(self):
        renames = self.probable_renames()
        for name, field in self.now.items():
            prior = self.before.get(name) or self.continues.get(name)
            if prior is not None and prior.origin == "corpus-some" and \
                    self.needs_value(field) and field.origin in ("init", "method"):
                self.add("ATTRIBUTE_ADDED_NO_DEFAULT", name, self.where(field),
                         f"{self.stable}.{name} is set by the class's code now, and only "
                         f"some saves of the corpus hold it (code outside the class set "
                         f"it); loads never run __init__, so the others lack it",
                         f"give it a class-level default in the body of {self.stable} "
                         f"({name} = <its initial value>; for a mutable value, set it in "
                         f"__autosave_loaded__(self) instead)")
                continue
            if name in self.new.reserved:
                self.add("RESERVED_NAME_REUSED", name, self.where(field),
                         f"{self.stable}.{name} is a field again, but the name is reserved "
                         f"(__autosave_reserved__): saves may hold an old value meaning "
                         f"something else under it",
                         f"give the field another name, or take {name!r} out of "
                         f"__autosave_reserved__ if it means what it meant")
            if prior is None:
                if name in renames:
                    self.rename_finding(renames[name], field)
                else:
                    self.added(name, field)
                continue
            if prior.name != name:
                self.add("FIELD_RENAMED", name, self.where(field),
                         f"{self.stable}.{prior.name} is {name} now; saves fill it through "
                         f"its declared old name", "-")
            self.compare(name, prior, field)
        taken = {f.name for f in self.continues.values()} | {r.name for r in renames.values()}
        for name, prior in self.before.items():
            # an attribute the corpus shows and the code does not set: loads keep it
            if name not in self.now and name not in taken and not prior.transient \
                    and prior.origin not in ("corpus", "corpus-some"):
                self.add("FIELD_REMOVED", name, self.new.where,
                         f"{self.stable}.{name} is gone; its saved values are dropped on load",
                         "-")
        for name in sorted(set(self.old.reserved) - set(self.new.reserved)):
            self.add("RESERVED_NAME_RELEASED", name, self.new.where,
                     f"{self.stable} no longer reserves {name!r}",
                     f"keep {name!r} in __autosave_reserved__ while saves holding it exist")

    def needs_value(self, field):
        if field.transient or field.default is not None:
            return False
        return field.declared or field.origin in ("init", "method")

    def hook_note(self):
        bases = [n for n, e in self.c.cur.classes.items() if self.stable in e.covered_by
                 and e.upgrades]
        if not bases:
            return ""
        return (f" (the upgrade hooks of {', '.join(bases)} do not run for {self.stable} "
                f"records: hooks are registered per class)")

    def added(self, name, field):
        needs = self.needs_value(field)
        if needs and field.origin in ("init", "method"):
            how = ("in __init__ now; loads never run __init__, so every loaded "
                   f"{self.stable} lacks it" if field.origin == "init" else
                   f"by a method now (line {field.line}); a save made where that method "
                   f"ran in an older build lacks it")
            self.add("ATTRIBUTE_ADDED_NO_DEFAULT", name, self.where(field),
                     f"{self.stable}.{name} is set {how}",
                     f"give it a class-level default in the body of {self.stable} "
                     f"({name} = <its initial value>; for a mutable value, set it in "
                     f"__autosave_loaded__(self) instead)")
        elif needs and not self.hooked:
            self.add("FIELD_ADDED_NO_DEFAULT", name, self.where(field),
                     f"{self.stable}.{name} is new and has no default; saves of "
                     f"{self.version} do not hold it{self.hook_note()}",
                     f"give {name} a default, or bump the version of {self.stable} and add "
                     f"@autosave.upgrade({self.stable!r}, from_version={self.old.version}) "
                     f"setting fields[{name!r}]")
        elif not field.transient:
            how = ("the upgrade hooks must set it (verify checks they do)" if needs
                   else "old saves get its default")
            self.add("FIELD_ADDED", name, self.where(field), f"{self.stable}.{name} is new; "
                     f"{how}", "-")

    def probable_renames(self):
        """{new field: the baseline field it probably continues}: one gone and one new,
        of the same declared type, neither transient, the old name not reserved."""
        gone = [f for n, f in self.before.items() if n not in self.now and not f.transient
                and n not in self.new.reserved and f not in self.continues.values()]
        new = [f for n, f in self.now.items() if n not in self.before
               and n not in self.continues and not f.transient]
        out = {}
        for field in new:
            t = type_of(field, self.c.cur.classes)
            for prior in gone:
                if prior.origin == field.origin and \
                        type_of(prior, self.c.base.classes, self.c.renamed) == t:
                    out[field.name] = prior
                    gone.remove(prior)
                    break
        return out

    def rename_finding(self, prior, field):
        old, new = prior.name, field.name
        if field.declared and field.origin is None:
            how = (f"declare the old name: {new} = attrs.field(..., metadata="
                   f"autosave.renamed_from({old!r})) (dataclasses.field for a dataclass; "
                   f"__autosave_renamed__ = {{{new!r}: {old!r}}} in the body of a slotted "
                   f"or plain class)")
        else:
            how = f"declare the old name: __autosave_renamed__ = {{{new!r}: {old!r}}} in the " \
                  f"body of {self.stable}"
        self.add("FIELD_PROBABLY_RENAMED", new, self.where(field),
                 f"{self.stable}.{old} is gone and {self.stable}.{new} is new, of the same "
                 f"type ({field.type or 'undeclared'}): if {new} is {old} renamed, every "
                 f"save's {old} is dropped on load",
                 f"{how}; if they are unrelated, reserve the old name: "
                 f"__autosave_reserved__ = ({old!r},)")

    def compare(self, name, prior, field):
        stable, where = self.stable, self.where(field)
        if prior.transient and not field.transient:
            if self.needs_value(field) and not self.hooked:
                self.add("FIELD_NOW_SAVED_NO_DEFAULT", name, where,
                         f"{stable}.{name} was transient and is saved now, without a "
                         f"default; saves of {self.version} do not hold it",
                         f"give {name} a default, or bump the version and add an "
                         f"upgrade hook setting it")
            else:
                self.add("FIELD_NOW_SAVED", name, where,
                         f"{stable}.{name} was transient and is saved now", "-")
        elif field.transient and not prior.transient:
            self.add("FIELD_NOW_TRANSIENT", name, where,
                     f"{stable}.{name} is transient now; the value saves of {self.version} "
                     f"hold for it is discarded")
        if prior.transient or field.transient:
            return
        old_type = type_of(prior, self.c.base.classes, self.c.renamed)
        new_type = type_of(field, self.c.cur.classes)
        if old_type is None or new_type is None or old_type == new_type:
            return
        if widened(old_type, new_type):
            self.add("FIELD_TYPE_WIDENED", name, where,
                     f"{stable}.{name}: {old_type} -> {new_type} accepts every old value", "-")
        elif self.hooked:
            self.add("FIELD_TYPE_CONVERTED_BY_HOOK", name, where,
                     f"{stable}.{name} was declared {old_type} and is {new_type} now; the "
                     f"upgrade hooks from {self.version} must convert fields[{prior.name!r}]",
                     f"make sure the hook converts fields[{prior.name!r}]; `autosave compat "
                     f"verify` holds every upgraded record to {new_type}")
        else:
            self.add("FIELD_TYPE_CHANGED", name, where,
                     f"{stable}.{name} was declared {old_type} and is {new_type} now; "
                     f"saves of {self.version} hold {old_type} values",
                     f"bump the version of {stable} and add @autosave.upgrade("
                     f"{stable!r}, from_version={self.old.version}) converting "
                     f"fields[{name!r}], or declare {new_type} | {old_type}")
