"""What a run covered: the classes saved in batches (which need no code), the ones that
got generated code, the ones left to reflection and why, and the annotations that
stopped the search for more (docs/codegen.md).

Generated code reaches only the classes the annotations name, so the report points at
the fields whose type says too little (``object``, ``Any``, a bare ``dict``) and at the
package's classes no annotation reaches: a save holding them still works, by
reflection, and annotating the field that holds them gives them generated code.
"""

import enum
import inspect
import typing

import attrs

from autosave.model.schema import schema_of

from .collect import field_hints, import_package, inside, named_classes, where
from .emit import kind_of

_CONTAINERS = (list, dict, set, frozenset, tuple)
_COLLECTIONS = {"deque", "defaultdict", "OrderedDict", "Counter"}


@attrs.define
class Coverage:
    package: str
    generated: list = attrs.Factory(list)     # (class, "slots" | "dict")
    batched: list = attrs.Factory(list)       # (class, "slots" | "dict"): no code needed
    reflective: list = attrs.Factory(list)    # (class, why)
    loose: list = attrs.Factory(list)         # (class, field, why its type stops the search)
    unreached: list = attrs.Factory(list)     # classes of the package no annotation names


def coverage(package, own):
    """The Coverage of ``package`` whose collected classes are ``own``."""
    report = Coverage(package)
    mine = [c for c in own if inside(c.__module__, [package])]
    for cls in mine:
        kind = kind_of(cls)
        if kind in ("slots", "dict"):
            report.generated.append((cls, kind))
        elif schema_of(cls).batched:
            report.batched.append((cls, schema_of(cls).layout))
        else:
            report.reflective.append((cls, kind))
        report.loose.extend((cls, field, why) for field, why in _loose_fields(cls))
    seen = set(own)
    report.unreached = [c for c in _package_classes(package)
                        if c not in seen and _could_be_saved(c)]
    return report


def _loose_fields(cls):
    """(field, why) for each saved field whose annotation names no class to follow."""
    schema = schema_of(cls)
    if schema.strategy != "instance":
        return []
    hints = field_hints(cls)
    names = [n for n in (*schema.saved_slots, *schema.declared) if n not in schema.transient]
    if schema.has_dict and not schema.declared and not hints:
        return [("*", "its attributes are set at run time and none is annotated in the "
                      "class body")]
    out = []
    for name in dict.fromkeys(names):
        if name not in hints:
            out.append((name, "has no annotation"))
            continue
        why = loose(hints[name])
        if why:
            out.append((name, f"is typed {_show(hints[name])}: {why}"))
    return out


def loose(annotation):
    """Why an annotation stops the search for classes, or None when it does not."""
    if annotation is typing.Any or annotation is object:
        return "anything may be there"
    if annotation in _CONTAINERS or (getattr(annotation, "__name__", None) in _COLLECTIONS
                                     and not typing.get_args(annotation)):
        return "its items' type is not said"
    args = typing.get_args(annotation)
    for arg in args:
        if arg is Ellipsis or arg is type(None) or isinstance(arg, (str, int, bytes)):
            continue
        why = loose(arg)
        if why:
            return why
    if not args and not list(named_classes(annotation)):
        return "it names no class"
    return None


def _show(annotation):
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__qualname__
    return str(annotation).replace("typing.", "")


def _package_classes(package):
    found = {}
    for module in import_package(package):
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == module.__name__:
                found[(value.__module__, value.__qualname__)] = value
    return [found[k] for k in sorted(found)]


def _could_be_saved(cls):
    """Classes whose instances a game's state might hold: not errors, enums (saved by
    name), metaclasses, protocols or abstract bases."""
    return not (issubclass(cls, (BaseException, type, enum.Enum))
                or getattr(cls, "_is_protocol", False) or inspect.isabstract(cls))


def lines(report, verbose=False):
    """The report as text lines, for the terminal."""
    out = [f"{report.package}: {len(report.batched)} "
           f"class{'es' if len(report.batched) != 1 else ''} saved in batches (no code "
           f"needed), generated code for {len(report.generated)}, "
           f"{len(report.reflective) + len(report.unreached)} left to reflection"]
    if verbose:
        out += [f"  batches    {_name(c)} ({kind}: {where(c)})" for c, kind in report.batched]
        out += [f"  generated  {_name(c)} ({kind}: {where(c)})" for c, kind in report.generated]
    out += [f"  reflection {_name(c)}: {why}" for c, why in report.reflective]
    out += [f"  reflection {_name(c)}: no field annotation reaches it from a root "
            f"({where(c)})" for c in report.unreached]
    if report.loose:
        out.append("  fields the search for classes stops at (what they hold is saved by "
                   "reflection unless another annotation names its class):")
        out += [f"    {_name(c)}.{field}: {why}" if field != "*" else f"    {_name(c)}: {why}"
                for c, field, why in report.loose]
    if report.unreached or report.loose:
        out.append('  hint: where a field holds instances of the game\'s classes, annotate '
                   'it, e.g. members: "list[Npc]" or target: "Npc | None" (autosave docs '
                   'codegen)')
    if report.loose:
        # A field holding a coroutine, a callable or plain data is saved as it is: a
        # class annotation would be wrong there, and nothing is missing.
        out.append('  a field holding a coroutine or other generator, a callable or plain '
                   'data needs no change (saved by reflection); typed as what it holds, '
                   'e.g. brain: "Generator[str, str | None, None] | None", it leaves this '
                   'list')
    return out


def _name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"
