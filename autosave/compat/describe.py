"""Describe a package as it is now: the typed manifest (``autosave.compat.model``) that
`autosave-codegen` writes beside its generated code and `autosave compat snapshot`
commits at a release (docs/codegen.md, docs/compat.md).

Per class its stable name, aliases, version, upgrade hooks, how it is saved, its fields
(name, declared type, default, where it lives) and the fingerprint generated code is
checked against; every registered asset id; every coroutine resume label with the source
line of its yield and the locals live there; the root classes and the trusted namespaces.

Paths are relative to the directory the package is imported from, so the file is the
same on every machine (``autosave-codegen --check`` compares it byte for byte).
"""

import dataclasses
import inspect
import os
import re
import sys
import typing

import attrs

from ..model.registry import REGISTRY
from ..model.schema import FieldDefault, schema_of
from ..model.upgrades import hook_for
from .collect import field_hints, inside, saveable_subclasses
from .plain import init_attributes
from .sourcefacts import derived_attributes, loops_at, loops_by_line
from .model import (FORMAT, ClassEntry, CoroutineEntry, Default, FieldEntry, LabelEntry,
                    LiveLocal, Snapshot, UpgradeEntry, dumps)

__all__ = ["build", "snapshot", "dumps", "class_entry", "coroutine_entries", "type_text"]


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


def default_text(default) -> Default | None:
    if default is None or not default.exists:
        return None
    if default.factory is not None:
        factory = default.factory
        name = getattr(factory, "__qualname__", type(factory).__qualname__)
        return Default(factory=name if "<lambda>" not in name else "<lambda>")
    value = default.value
    if isinstance(value, (int, float, str, bool, type(None))):
        return Default(value=value)
    return Default(value=repr(value))


def relative_file(module_name):
    """The source file of a module, relative to the sys.path entry it was imported
    from ('game/model.py'), or None when it has no file."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    path = os.path.abspath(path)
    depth = module_name.count(".") + (1 if path.endswith("__init__.py") else 0)
    root = path
    for _ in range(depth + 1):
        root = os.path.dirname(root)
    return os.path.relpath(path, root).replace(os.sep, "/")


def source_lines(obj):
    """(lines, first line number) of a class or function, or ((), None)."""
    try:
        return inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return (), None


def member_lines(cls, names):
    """{name: line} of the statements assigning each name in a class body, found in its
    source: 'hp: int = 3', 'RED = 1'. Lines are for messages only."""
    lines, first = source_lines(cls)
    found = {}
    if first is None:
        return found
    wanted = set(names)
    for i, text in enumerate(lines):
        m = re.match(r"\s+([A-Za-z_]\w*)\s*(:|=(?!=))", text)
        if m and m.group(1) in wanted and m.group(1) not in found:
            found[m.group(1)] = first + i
    return found


def def_line(lines, first):
    for i, text in enumerate(lines):
        if re.match(r"\s*(async\s+)?def\s", text):
            return first + i
    return first


def upgrade_entries(schema):
    """The hooks a record of the class goes through (its own, else its nearest base's,
    per version: ``model.upgrades.hook_for``), and its own unreachable ones."""
    found = {v: hook_for(schema, v) for v in range(1, schema.version)}
    found.update({v: h for (name, v), h in REGISTRY.upgrades.items()
                  if name == schema.name and v >= schema.version})
    out = []
    for version, hook in sorted(found.items(), key=lambda vh: vh[0]):
        if hook is None:
            continue
        module = getattr(hook, "__module__", None) or "?"
        _, line = source_lines(hook)
        out.append(UpgradeEntry(version, f"{module}.{getattr(hook, '__qualname__', '?')}",
                                relative_file(module), line))
    return tuple(out)


def class_entry(cls):
    schema = schema_of(cls)
    hints = field_hints(cls)
    fields = []
    names = list(schema.slots) + [n for n in schema.declared if n not in schema.slots]
    lines = member_lines(cls, names)
    for name in names:
        fields.append(FieldEntry(
            name=name,
            type=type_text(hints[name]) if name in hints else None,
            where="slot" if name in schema.slots else "dict",
            transient=name in schema.transient,
            default=default_text(schema.defaults.get(name)),
            declared=name in schema.declared,
            line=lines.get(name),
            old_names=tuple(sorted(o for o, n in schema.renamed.items() if n == name))))
    unjudged = None
    if is_plain(cls, schema):
        found = init_attributes(cls)
        unjudged = None if found.judged else found.why
        for origin, found_names in (("init", found.names), ("method", found.elsewhere)):
            for name, attr_line in found_names.items():
                if name in names or name in schema.transient:
                    continue
                fields.append(FieldEntry(
                    name=name, type=type_text(hints[name]) if name in hints else None,
                    where="dict", transient=False, default=class_default(cls, name),
                    declared=False, line=attr_line, origin=origin))
    aliases = sorted(k for k, v in REGISTRY.by_name.items() if v is cls and k != schema.name)
    _, line = source_lines(cls)
    enum = schema.strategy == "enum"     # saved by member name: removing one breaks saves
    return ClassEntry(
        path=f"{cls.__module__}.{cls.__qualname__}",
        version=schema.version,
        strategy=schema.strategy,
        base=schema.base.__name__ if schema.base is not None else None,
        layout=schema.layout,
        generated=schema.layout if schema.why_not_generated is None else None,
        aliases=tuple(aliases),
        root=bool(cls.__dict__.get("__autosave_root__", False)),
        fields=tuple(fields),
        fingerprint=schema.fingerprint,
        file=relative_file(cls.__module__),
        line=line,
        upgrades=upgrade_entries(schema),
        members=tuple(cls.__members__) if enum else None,
        member_lines=member_lines(cls, cls.__members__) if enum else {},
        covered_by=tuple(sorted(schema_of(c).name for c in saveable_subclasses(cls))),
        reserved=tuple(sorted(schema.reserved)),
        unjudged=unjudged)


def is_plain(cls, schema) -> bool:
    """A class saved field by field whose fields nothing declares: its attributes are
    whatever ``__init__`` sets (``autosave.compat.plain``)."""
    return (schema.strategy == "instance" and schema.has_dict and not schema.declared
            and not attrs.has(cls) and not dataclasses.is_dataclass(cls))


def class_default(cls, name) -> Default | None:
    """The class-level value a loaded instance without the attribute reads through to."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            value = klass.__dict__[name]
            if callable(value) or hasattr(value, "__get__"):
                return None
            return default_text(FieldDefault(value=value))
    return None


def coroutine_entry(func, data):
    """The manifest entry of one coroutine function from its state-machine spec data
    (``transform.transform``'s second result, or ``CoroutineSpec.data``)."""
    func = getattr(func, "__wrapped__", func)
    lines, first = source_lines(func)
    start = def_line(lines, first) if first is not None else None
    live = {p["label"]: tuple(LiveLocal(n, needed and not guarded, not guarded)
                              for n, _, guarded, needed in p["live"])
            for p in data["points"]}
    labels = {}
    loops = loops_by_line(func)
    for label, info in data["labels"].items():
        source_line = start + info["line"] if start is not None else None
        labels[label] = LabelEntry(
            context=tuple(info["context"]), text=info["text"], line=info["line"],
            index=info["index"], source_line=source_line, live=live.get(label, ()),
            loops=loops_at(loops, source_line), pinned=info.get("pinned") is True)
    return CoroutineEntry(
        function=f"{func.__module__}.{func.__qualname__}",
        labels=labels,
        file=relative_file(func.__module__),
        line=start,
        params=tuple(sorted(set(data["params"]) | set(data["cells"]))),
        derived=derived_attributes(func),
        reserved=tuple(data.get("reserved", ())))


def coroutine_entries(packages, labels=None):
    """{qualified name: entry} of the coroutine functions of ``packages``. ``labels``:
    {qualified name: {"labels": ...}} as autosave-codegen assigned them; without it the
    labels are the ones the decorated functions use in this process."""
    from ..coroutines import SPECS, transform

    out = {}
    for spec in SPECS.values():
        if not inside(spec.function.__module__, packages):
            continue
        name = spec.qualified_name
        if labels is not None:
            if name not in labels:
                continue
            # The labels are given; transforming again with them as the previous build's
            # keeps every one of them and yields the locals live at each.
            _, data = transform.transform(spec.function, labels[name]["labels"])
        else:
            data = spec.data
        out[name] = attrs.evolve(coroutine_entry(spec.function, data),
                                 defaults=tuple(sorted(spec.param_defaults)),
                                 aliases=tuple(coroutine_aliases(spec)))
    return {name: out[name] for name in sorted(out)}


def coroutine_aliases(spec):
    """Other module-level names the decorated function is bound to: a save naming one
    of them resolves to it (a function renamed, its old name kept)."""
    from ..coroutines import SPECS
    module = sys.modules.get(spec.function.__module__)
    factory = next((f for f, s in SPECS.items() if s is spec), None)
    if module is None or factory is None:
        return []
    return sorted(f"{module.__name__}.{n}" for n, v in vars(module).items()
                  if v is factory and n != spec.qualname)


def package_assets(packages):
    """The registered asset ids that belong to ``packages``: the asset's class is
    defined there, or a module of the packages holds it (a module-level name, or an
    item of a module-level dict, list or tuple). The registry is process-wide, so this
    keeps a manifest made in a process that imported other code the same."""
    held = set()
    for name, module in list(sys.modules.items()):
        if not inside(name, packages):
            continue
        for value in list(vars(module).values()):
            held.add(id(value))
            if type(value) in (list, tuple):
                held.update(map(id, value))
            elif type(value) is dict:
                held.update(map(id, value.values()))
    return sorted(asset_id for asset_id, obj in REGISTRY.asset_by_id.items()
                  if id(obj) in held or inside(type(obj).__module__, packages))


def build(packages, classes, external, coroutines=None):
    """The manifest of ``packages``. ``coroutines``: the labels autosave-codegen
    assigned ({function: {"labels": ...}}), or None for the labels in use now."""
    return Snapshot(
        source="current", format=FORMAT, live=True,
        classes={schema_of(c).name: class_entry(c) for c in classes},
        assets=package_assets(packages),
        coroutines=coroutine_entries(packages, coroutines),
        packages=list(packages),
        external=sorted(f"{c.__module__}.{c.__qualname__}" for c in external))


def snapshot(packages):
    """Import ``packages`` and return their manifest as it is now: what `autosave compat
    snapshot` writes and `autosave compat check` compares."""
    from .collect import collect
    own, external = collect(packages)
    # Trust is process-wide: only a process that imported nothing but the packages (the
    # `autosave compat snapshot` command) can say which namespaces they trust.
    return attrs.evolve(build(packages, own, external), trusted=sorted(REGISTRY.allowed),
                        assets=sorted(REGISTRY.asset_by_id))
