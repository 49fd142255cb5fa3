"""The schema manifest as typed records: what `autosave-codegen` and `autosave compat
snapshot` write (``autosave.compat.describe`` builds them) and what the gate reads.

This module is the one owner of the manifest's shape. A document is read by ``parse``
(every part checked first: a malformed baseline is a ``BaselineError`` naming the place
in the document, never a KeyError half-way through a judgement) and written by
``Snapshot.document`` / ``dumps``. Keys a format lacks get their meaning here, so the
checker reads every release's snapshot the same way.

Format history (``"autosave_manifest"``):

* 1: ``packages``, ``classes``, ``external``, and ``coroutines`` as ``{function:
  {"labels": {label: {context, text, line, index}}}}``.
* 2: adds ``assets``, ``trusted`` (release snapshots only), per class
  ``file``/``line``/``upgrades``, per field ``declared``/``line``, and per coroutine
  ``file``/``line``/``params`` and per label ``source_line`` and ``live``.
* 3: adds per class ``layout`` and ``generated``.
* 4: adds per field ``old_names`` (``autosave.renamed_from``) and ``origin`` (where an
  undeclared attribute was found: ``init``), per class ``reserved`` names,
  ``covered_by`` (its subclasses: a field declared as the class may hold their records;
  each has its own entry, version and hooks) and ``unjudged`` (why a plain class's
  attributes are not all known), per coroutine ``aliases``, ``defaults`` (parameters
  with a default) and ``derived`` (local -> the attributes its value is computed from),
  per label ``loops`` (the loop headers around the yield); a label's ``live`` lists
  every local saved at the yield with ``required`` (the code after it reads it) and
  ``bound`` (bound for sure there, so every save holds it). Read without a format
  change (absent means false / empty): per label ``pinned`` (written on the yield with
  ``autosave.label``) and per coroutine ``reserved`` (labels no yield may take).
"""

import json

import attrs

from ..errors import BaselineError

FORMAT = 4
FORMATS = (1, 2, 3, 4)    # manifest formats this reader understands


@attrs.frozen
class Default:
    """A field's default as the manifest spells it: a factory's name or a value (a JSON
    scalar, else its repr)."""
    factory: str | None = None
    value: object = None

    def document(self) -> dict:
        return {"factory": self.factory} if self.factory is not None else {"value": self.value}


@attrs.frozen
class FieldEntry:
    name: str
    type: str | None = None          # the declared type's text, None when undeclared
    where: str = "dict"              # "slot" or "dict"
    transient: bool = False
    default: Default | None = None
    declared: bool = True            # declared by the class (attrs, dataclass, annotation)
    line: int | None = None
    old_names: tuple[str, ...] = ()  # names saves of earlier releases hold it under
    origin: str | None = None        # "init" / "method": a plain class's assignment there;
                                     # "corpus" / "corpus-some": held by saves (compat.corpus)

    def document(self) -> dict:
        out: dict = {"name": self.name, "type": self.type, "in": self.where,
               "transient": self.transient,
               "default": self.default.document() if self.default is not None else None,
               "declared": self.declared, "line": self.line}
        if self.old_names:
            out["old_names"] = list(self.old_names)
        if self.origin is not None:
            out["origin"] = self.origin
        return out


@attrs.frozen
class UpgradeEntry:
    from_version: int
    hook: str = "?"
    file: str | None = None
    line: int | None = None

    def document(self) -> dict:
        return {"from": self.from_version, "hook": self.hook, "file": self.file,
                "line": self.line}


@attrs.frozen
class ClassEntry:
    path: str                        # module.QualName
    version: int
    strategy: str
    base: str | None = None
    layout: str | None = None
    generated: str | None = None
    aliases: tuple[str, ...] = ()
    root: bool = False
    fields: tuple[FieldEntry, ...] = ()
    fingerprint: str | None = None
    file: str | None = None
    line: int | None = None
    upgrades: tuple[UpgradeEntry, ...] = ()
    members: tuple[str, ...] | None = None      # an enum's member names
    member_lines: dict = attrs.field(factory=dict)
    reserved: tuple[str, ...] = ()
    covered_by: tuple[str, ...] = ()    # stable names of the saveable subclasses
    unjudged: str | None = None         # why its attributes are not all known
    base_recorded: bool = True          # False: an old document without "base"

    @property
    def where(self) -> tuple[str | None, int | None]:
        return self.file, self.line

    def field(self, name: str) -> FieldEntry | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def document(self) -> dict:
        out: dict = {"class": self.path, "version": self.version, "strategy": self.strategy,
               "base": self.base, "layout": self.layout, "generated": self.generated,
               "aliases": list(self.aliases), "root": self.root,
               "fields": [f.document() for f in self.fields],
               "fingerprint": self.fingerprint, "file": self.file, "line": self.line,
               "upgrades": [u.document() for u in self.upgrades]}
        if self.members is not None:
            out["members"] = list(self.members)
            out["member_lines"] = dict(self.member_lines)
        if self.reserved:
            out["reserved"] = list(self.reserved)
        if self.covered_by:
            out["covered_by"] = list(self.covered_by)
        if self.unjudged is not None:
            out["unjudged"] = self.unjudged
        return out


@attrs.frozen
class LiveLocal:
    """A local a coroutine frame saves at a resume point."""
    name: str
    required: bool = True    # the code after the yield needs it: a save must hold it
    bound: bool | None = None    # bound for sure there, so every save holds it (format 4;
                                 # None: an older manifest, whose saves held the required)

    @property
    def held(self) -> bool:
        return self.required if self.bound is None else self.bound


@attrs.frozen
class LabelEntry:
    context: tuple = ()
    text: str = ""
    line: int | None = None          # relative to the function's def line
    index: int = 0
    source_line: int | None = None
    live: tuple[LiveLocal, ...] | None = None   # None: not recorded (format 1)
    loops: tuple[str, ...] = ()                 # loop headers around the yield
    pinned: bool = False             # written on the yield (autosave.label)

    def labels_document(self) -> dict:
        """The part label matching reads (``autosave.coroutines.labels``)."""
        out = {"context": list(self.context), "text": self.text, "line": self.line,
               "index": self.index}
        if self.pinned:
            out["pinned"] = True
        return out

    def document(self) -> dict:
        out = self.labels_document()
        out["source_line"] = self.source_line
        if self.live is not None:
            out["live"] = [{"name": v.name, "required": v.required}
                           | ({} if v.bound is None else {"bound": v.bound})
                           for v in self.live]
        if self.loops:
            out["loops"] = list(self.loops)
        return out


@attrs.frozen
class CoroutineEntry:
    function: str
    labels: dict                     # label -> LabelEntry
    file: str | None = None
    line: int | None = None
    params: tuple[str, ...] | None = None      # None: not recorded (format 1)
    aliases: tuple[str, ...] = ()
    defaults: tuple[str, ...] = ()   # parameters with a default value
    derived: dict = attrs.field(factory=dict)   # local -> attributes it is computed from
    reserved: tuple[str, ...] = ()   # labels no yield may take (removed resume points)

    @property
    def where(self) -> tuple[str | None, int | None]:
        return self.file, self.line

    @property
    def detailed(self) -> bool:
        return self.params is not None and all(
            info.live is not None for info in self.labels.values())

    def document(self) -> dict:
        out: dict = {"function": self.function, "file": self.file, "line": self.line}
        if self.params is not None:
            out["params"] = list(self.params)
        out["labels"] = {k: v.document() for k, v in self.labels.items()}
        if self.aliases:
            out["aliases"] = list(self.aliases)
        if self.defaults:
            out["defaults"] = list(self.defaults)
        if self.derived:
            out["derived"] = {k: list(v) for k, v in self.derived.items()}
        if self.reserved:
            out["reserved"] = list(self.reserved)
        return out


@attrs.frozen
class Snapshot:
    source: str           # where it was read from: a path, "REF:path", or "current"
    format: int
    classes: dict         # stable name -> ClassEntry
    assets: list | None = None     # None: not recorded (format 1)
    trusted: list | None = None
    coroutines: dict = attrs.field(factory=dict)     # function -> CoroutineEntry
    packages: list = attrs.field(factory=list)
    external: list = attrs.field(factory=list)
    live: bool = False    # describes code imported in this process: the loader can judge

    @property
    def detailed_coroutines(self) -> bool:
        """Whether every label carries its live locals (format 2 and later)."""
        return self.format >= 2 and all(c.detailed for c in self.coroutines.values())

    def document(self) -> dict:
        out: dict = {"autosave_manifest": self.format, "packages": list(self.packages),
                     "classes": {k: v.document() for k, v in self.classes.items()},
                     "external": list(self.external), "assets": self.assets}
        if self.coroutines:
            out["coroutines"] = {k: v.document() for k, v in self.coroutines.items()}
        if self.trusted is not None:
            out["trusted"] = list(self.trusted)
        return out


def dumps(snapshot: "Snapshot | dict") -> str:
    document = snapshot.document() if isinstance(snapshot, Snapshot) else snapshot
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# -- reading -----------------------------------------------------------------------------

def _need(cond, where, what):
    if not cond:
        raise BaselineError(f"{where}: {what}")


def _str_list(value, where, source) -> tuple[str, ...]:
    _need(type(value) is list and all(type(v) is str for v in value), source,
          f"{where} must be a list of strings")
    return tuple(value)


def _optional_int(value) -> bool:
    return value is None or (type(value) is int and value >= 0)


def _optional_str(value) -> bool:
    return value is None or type(value) is str


def parse(document, source: str) -> Snapshot:
    """A Snapshot from a decoded JSON document, or BaselineError."""
    _need(type(document) is dict, source, "a snapshot is a JSON object")
    fmt = document.get("autosave_manifest")
    _need(type(fmt) is int, source, "not an autosave manifest (no \"autosave_manifest\" "
          "format number)")
    _need(fmt in FORMATS, source, f"manifest format {fmt} is not one this autosave reads "
          f"({', '.join(map(str, FORMATS))}); upgrade autosave")
    classes = document.get("classes", {})
    _need(type(classes) is dict, source, "\"classes\" must be an object")
    parsed = {name: _class_entry(name, entry, source) for name, entry in classes.items()}
    assets = document.get("assets")
    if assets is not None:
        assets = list(_str_list(assets, "\"assets\"", source))
    trusted = document.get("trusted")
    if trusted is not None:
        trusted = list(_str_list(trusted, "\"trusted\"", source))
    coroutines = document.get("coroutines") or {}
    _need(type(coroutines) is dict, source, "\"coroutines\" must be an object")
    routines = {name: _coroutine_entry(name, entry, source)
                for name, entry in coroutines.items()}
    packages = document.get("packages", [])
    external = document.get("external", [])
    return Snapshot(source=source, format=fmt, classes=parsed, assets=assets,
                    trusted=trusted, coroutines=routines,
                    packages=list(_str_list(packages, "\"packages\"", source)),
                    external=list(_str_list(external, "\"external\"", source)))


def _default(value, where, source) -> Default | None:
    if value is None:
        return None
    _need(type(value) is dict, source, f"{where}.default must be an object or null")
    if "factory" in value:
        _need(type(value["factory"]) is str, source, f"{where}.default.factory must be a "
              f"string")
        return Default(factory=value["factory"])
    return Default(value=value.get("value"))


def _field_entry(field, fw, source) -> FieldEntry:
    _need(type(field) is dict, source, f"{fw} must be an object")
    _need(type(field.get("name")) is str, source, f"{fw}.name must be a string")
    _need(_optional_str(field.get("type")), source, f"{fw}.type must be a string or null")
    _need(type(field.get("transient", False)) is bool, source,
          f"{fw}.transient must be true or false")
    _need(type(field.get("declared", True)) is bool, source,
          f"{fw}.declared must be true or false")
    _need(_optional_int(field.get("line")), source, f"{fw}.line must be an int or null")
    _need(_optional_str(field.get("origin")), source, f"{fw}.origin must be a string or null")
    return FieldEntry(
        name=field["name"], type=field.get("type"), where=str(field.get("in", "dict")),
        transient=field.get("transient", False),
        default=_default(field.get("default"), fw, source),
        declared=field.get("declared", True), line=field.get("line"),
        old_names=_str_list(field.get("old_names", []), f"{fw}.old_names", source),
        origin=field.get("origin"))


def _class_entry(name, entry, source) -> ClassEntry:
    where = f"classes[{name!r}]"
    _need(type(entry) is dict, source, f"{where} must be an object")
    _need(type(entry.get("class")) is str, source, f"{where}.class must be a string")
    _need(type(entry.get("version")) is int and entry["version"] >= 1, source,
          f"{where}.version must be an int >= 1")
    _need(type(entry.get("strategy")) is str, source, f"{where}.strategy must be a string")
    aliases = _str_list(entry.get("aliases", []), f"{where}.aliases", source)
    _need(type(entry.get("root", False)) is bool, source, f"{where}.root must be true or false")
    _need(_optional_int(entry.get("line")), source, f"{where}.line must be an int or null")
    for key in ("base", "layout", "generated", "fingerprint", "file"):
        _need(_optional_str(entry.get(key)), source, f"{where}.{key} must be a string or null")
    fields = entry.get("fields", [])
    _need(type(fields) is list, source, f"{where}.fields must be a list")
    parsed = tuple(_field_entry(f, f"{where}.fields[{i}]", source)
                   for i, f in enumerate(fields))
    members = None
    if "members" in entry:
        members = _str_list(entry["members"], f"{where}.members", source)
    member_lines = entry.get("member_lines", {})
    _need(type(member_lines) is dict, source, f"{where}.member_lines must be an object")
    upgrades = entry.get("upgrades", [])
    _need(type(upgrades) is list and all(type(u) is dict and type(u.get("from")) is int
                                         for u in upgrades), source,
          f"{where}.upgrades must be a list of {{\"from\": version, ...}}")
    return ClassEntry(
        path=entry["class"], version=entry["version"], strategy=entry["strategy"],
        base=entry.get("base"), layout=entry.get("layout"),
        generated=entry.get("generated"), aliases=aliases, root=entry.get("root", False),
        fields=parsed, fingerprint=entry.get("fingerprint"), file=entry.get("file"),
        line=entry.get("line"),
        upgrades=tuple(UpgradeEntry(u["from"], str(u.get("hook", "?")), u.get("file"),
                                    u.get("line")) for u in upgrades),
        members=members, member_lines=member_lines,
        reserved=_str_list(entry.get("reserved", []), f"{where}.reserved", source),
        covered_by=_str_list(entry.get("covered_by", []), f"{where}.covered_by", source),
        unjudged=entry.get("unjudged") if type(entry.get("unjudged")) is str else None,
        base_recorded="base" in entry)


def _label_entry(info, lw, source) -> LabelEntry:
    _need(type(info) is dict, source, f"{lw} must be an object")
    _need(_optional_int(info.get("source_line")), source,
          f"{lw}.source_line must be an int or null")
    live = None
    if "live" in info:
        value = info["live"]
        _need(type(value) is list and all(type(v) is dict and type(v.get("name")) is str
                                          and type(v.get("required")) is bool
                                          for v in value),
              source, f"{lw}.live must be a list of {{\"name\": str, \"required\": bool}}")
        live = tuple(LiveLocal(v["name"], v["required"], v["bound"]
                               if type(v.get("bound")) is bool else None) for v in value)
    context = info.get("context", [])
    _need(type(context) is list, source, f"{lw}.context must be a list")
    index = info.get("index", 0)
    _need(type(index) is int, source, f"{lw}.index must be an int")
    return LabelEntry(context=tuple(context), text=str(info.get("text", "")),
                      line=info.get("line"), index=index,
                      source_line=info.get("source_line"), live=live,
                      loops=_str_list(info.get("loops", []), f"{lw}.loops", source),
                      pinned=info.get("pinned") is True)


def _coroutine_entry(name, entry, source) -> CoroutineEntry:
    where = f"coroutines[{name!r}]"
    _need(type(entry) is dict, source, f"{where} must be an object")
    labels = entry.get("labels")
    _need(type(labels) is dict, source, f"{where}.labels must be an object")
    params = None
    if "params" in entry:
        params = _str_list(entry["params"], f"{where}.params", source)
    return CoroutineEntry(
        function=str(entry.get("function", name)),
        labels={label: _label_entry(info, f"{where}.labels[{label!r}]", source)
                for label, info in labels.items()},
        file=entry.get("file"), line=entry.get("line"), params=params,
        aliases=_str_list(entry.get("aliases", []), f"{where}.aliases", source),
        defaults=_str_list(entry.get("defaults", []), f"{where}.defaults", source),
        derived=_derived(entry.get("derived", {}), f"{where}.derived", source),
        reserved=_str_list(entry.get("reserved", []), f"{where}.reserved", source))


def _derived(value, where, source) -> dict:
    _need(type(value) is dict, source, f"{where} must be an object")
    return {k: _str_list(v, f"{where}[{k!r}]", source) for k, v in value.items()}


def loads(text: str, source: str) -> Snapshot:
    try:
        document = json.loads(text)
    except ValueError as e:
        raise BaselineError(f"{source}: not valid JSON: {e}") from None
    return parse(document, source)


def load(path) -> Snapshot:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BaselineError(f"{path}: cannot read the baseline: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: not UTF-8 text (is it a save, not a snapshot?)") from None
    return loads(text, str(path))
