"""The schema manifest: what a package saves, as JSON (docs/codegen.md).

The same file the compatibility checker diffs between releases: per class its stable
name, version, how it is saved, its fields (name, declared type, default, where it
lives) and the fingerprint generated code is checked against.
"""

import json
import typing

from autosave.registry import REGISTRY
from autosave.schema import schema_of

from .collect import field_hints
from .emit import kind_of

FORMAT = 1


def type_text(annotation):
    """A stable spelling of an annotation: 'list[game.model.NPC]', 'int | None'."""
    if annotation is type(None) or annotation is None:
        return "None"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return " | ".join(type_text(a) for a in args)
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else type_text(a) for a in args)
        return f"{type_text(origin)}[{inner}]"
    if isinstance(annotation, type):
        if annotation.__module__ == "builtins":
            return annotation.__qualname__
        return f"{annotation.__module__}.{annotation.__qualname__}"
    return repr(annotation)


def default_text(default):
    if default is None or not default.exists:
        return None
    if default.factory is not None:
        factory = default.factory
        name = getattr(factory, "__qualname__", type(factory).__qualname__)
        return {"factory": name if "<lambda>" not in name else "<lambda>"}
    value = default.value
    if isinstance(value, (int, float, str, bool, type(None))):
        return {"value": value}
    return {"value": repr(value)}


def class_entry(cls):
    schema = schema_of(cls)
    hints = field_hints(cls)
    fields = []
    names = list(schema.slots) + [n for n in schema.declared if n not in schema.slots]
    for name in names:
        fields.append({
            "name": name,
            "type": type_text(hints[name]) if name in hints else None,
            "in": "slot" if name in schema.slots else "dict",
            "transient": name in schema.transient,
            "default": default_text(schema.defaults.get(name)),
        })
    aliases = sorted(k for k, v in REGISTRY.by_name.items() if v is cls and k != schema.name)
    kind = kind_of(cls)
    entry = {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "version": schema.version,
        "strategy": schema.strategy,
        "generated": kind if kind in ("slots", "dict") else None,
        "aliases": aliases,
        "root": bool(cls.__dict__.get("__autosave_root__", False)),
        "fields": fields,
        "fingerprint": schema.fingerprint,
    }
    if schema.strategy == "enum":     # saved by member name: removing one breaks saves
        entry["members"] = list(cls.__members__)
    return entry


def build(packages, classes, external):
    return {
        "autosave_manifest": FORMAT,
        "packages": list(packages),
        "classes": {schema_of(c).name: class_entry(c) for c in classes},
        "external": sorted(f"{c.__module__}.{c.__qualname__}" for c in external),
    }


def dumps(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
