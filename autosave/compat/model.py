"""A release snapshot (a schema manifest, codegen/manifest.py): read, checked, kept.

A baseline comes from a file a release committed or from a git ref, so every part of
it is checked before the checker reads it: a malformed one is a ``BaselineError``
naming the place in the document, never a KeyError half-way through a judgement.
"""

import json

import attrs

from ..errors import BaselineError

FORMATS = (1, 2, 3)    # manifest formats this reader understands (codegen/manifest.py)


@attrs.frozen
class Snapshot:
    source: str           # where it was read from: a path, "REF:path", or "current"
    format: int
    classes: dict         # stable name -> class entry (dicts as in the manifest)
    assets: list | None   # None: not recorded (format 1)
    trusted: list | None
    coroutines: dict      # function -> entry
    detailed_coroutines: bool   # labels carry their live locals (format 2)


def _need(cond, where, what):
    if not cond:
        raise BaselineError(f"{where}: {what}")


def _str_list(value, where, source):
    _need(type(value) is list and all(type(v) is str for v in value), source,
          f"{where} must be a list of strings")
    return value


def _optional_int(value):
    return value is None or (type(value) is int and value >= 0)


def parse(document, source):
    """A Snapshot from a decoded JSON document, or BaselineError."""
    _need(type(document) is dict, source, "a snapshot is a JSON object")
    fmt = document.get("autosave_manifest")
    _need(type(fmt) is int, source, "not an autosave manifest (no \"autosave_manifest\" "
          "format number)")
    _need(fmt in FORMATS, source, f"manifest format {fmt} is not one this autosave reads "
          f"({', '.join(map(str, FORMATS))}); upgrade autosave")
    classes = document.get("classes", {})
    _need(type(classes) is dict, source, "\"classes\" must be an object")
    for name, entry in classes.items():
        _class_entry(name, entry, source)
    assets = document.get("assets")
    if assets is not None:
        _str_list(assets, "\"assets\"", source)
    trusted = document.get("trusted")
    if trusted is not None:
        _str_list(trusted, "\"trusted\"", source)
    coroutines = document.get("coroutines") or {}
    _need(type(coroutines) is dict, source, "\"coroutines\" must be an object")
    detailed = True
    for name, entry in coroutines.items():
        detailed &= _coroutine_entry(name, entry, source)
    return Snapshot(source=source, format=fmt, classes=classes, assets=assets,
                    trusted=trusted, coroutines=coroutines,
                    detailed_coroutines=detailed and fmt >= 2)


def _class_entry(name, entry, source):
    where = f"classes[{name!r}]"
    _need(type(entry) is dict, source, f"{where} must be an object")
    _need(type(entry.get("class")) is str, source, f"{where}.class must be a string")
    _need(type(entry.get("version")) is int and entry["version"] >= 1, source,
          f"{where}.version must be an int >= 1")
    _need(type(entry.get("strategy")) is str, source, f"{where}.strategy must be a string")
    _str_list(entry.get("aliases", []), f"{where}.aliases", source)
    _need(type(entry.get("root", False)) is bool, source, f"{where}.root must be true or false")
    _need(_optional_int(entry.get("line")), source, f"{where}.line must be an int or null")
    fields = entry.get("fields", [])
    _need(type(fields) is list, source, f"{where}.fields must be a list")
    for i, field in enumerate(fields):
        fw = f"{where}.fields[{i}]"
        _need(type(field) is dict, source, f"{fw} must be an object")
        _need(type(field.get("name")) is str, source, f"{fw}.name must be a string")
        _need(field.get("type") is None or type(field["type"]) is str, source,
              f"{fw}.type must be a string or null")
        _need(type(field.get("transient", False)) is bool, source,
              f"{fw}.transient must be true or false")
        _need(field.get("default") is None or type(field["default"]) is dict, source,
              f"{fw}.default must be an object or null")
    if "members" in entry:
        _str_list(entry["members"], f"{where}.members", source)
    # Optional keys get their meaning in a format 1 document, so the checker reads
    # every entry the same way.
    entry.setdefault("aliases", [])
    entry.setdefault("root", False)
    entry.setdefault("fields", [])
    entry.setdefault("upgrades", [])
    for field in fields:
        field.setdefault("type", None)
        field.setdefault("transient", False)
        field.setdefault("default", None)
        field.setdefault("declared", True)
    upgrades = entry.get("upgrades", [])
    _need(type(upgrades) is list and all(type(u) is dict and type(u.get("from")) is int
                                         for u in upgrades), source,
          f"{where}.upgrades must be a list of {{\"from\": version, ...}}")


def _coroutine_entry(name, entry, source):
    where = f"coroutines[{name!r}]"
    _need(type(entry) is dict, source, f"{where} must be an object")
    labels = entry.get("labels")
    _need(type(labels) is dict, source, f"{where}.labels must be an object")
    detailed = "params" in entry
    if detailed:
        _str_list(entry["params"], f"{where}.params", source)
    for label, info in labels.items():
        lw = f"{where}.labels[{label!r}]"
        _need(type(info) is dict, source, f"{lw} must be an object")
        _need(_optional_int(info.get("source_line")), source,
              f"{lw}.source_line must be an int or null")
        if "live" not in info:
            detailed = False
            continue
        live = info["live"]
        _need(type(live) is list and all(type(v) is dict and type(v.get("name")) is str
                                         and type(v.get("required")) is bool for v in live),
              source, f"{lw}.live must be a list of {{\"name\": str, \"required\": bool}}")
    return detailed


def loads(text, source):
    try:
        document = json.loads(text)
    except ValueError as e:
        raise BaselineError(f"{source}: not valid JSON: {e}") from None
    return parse(document, source)


def load(path):
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
