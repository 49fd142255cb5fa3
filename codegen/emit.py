"""Classes -> the source of a generated module: one save/load factory pair per class.

What each class gets depends on its schema's layout (``ClassSchema.layout``):

* ``slots`` (attrs ``define``, ``__slots__``): straight-line code. Save reads every
  slot once, writes a value of its declared type as is, finds a written object's cell
  without a call, and emits the record through the save context. Load unpacks the
  record straight into the slots, without ``__init__``.
* ``__dict__`` classes: a handler keyed by the instance's field order, as reflection
  does, without its per-object dispatch.
* enums, ``__getstate__``/``__reduce__`` classes, classes extending builtins, classes
  with a custom ``__getattribute__``: reflection, which is what they need anyway; the
  module says so per class.

Generated code calls nothing of the engine but the operations of
``autosave.saving.saver.SaveContext`` (save) and its three arguments (load), under the
interface version the module is stamped with (``codegen.source``).

The output is deterministic: classes in name order, no paths, no timestamps.
"""

import keyword

from autosave.model.generated import SAVE_OPERATIONS
from autosave.model.schema import schema_of

from .collect import field_hints
from .source import ModuleSource

ABOUT = """\
Each class's code carries the fingerprint of the layout it was made from; a class that
changed since is saved by reflection, with a warning (AUTOSAVE_STRICT=1: an error).
It uses the engine only through the save context (autosave.saving.saver.SaveContext)."""

IMPORTS = ["from autosave.model.generated import INLINE as _INLINE",
           "from autosave.model.generated import register as _register",
           "from autosave.model.generated import require_abi as _require_abi"]

SCALARS = {int: "int", float: "float", str: "str", bool: "bool", bytes: "bytes"}


def kind_of(cls):
    """The layout code is generated for ('slots', 'dict'), or why the class is saved by
    reflection: the schema's one decision (``ClassSchema.layout``)."""
    schema = schema_of(cls)
    return schema.why_not_generated or schema.layout


def attr(obj, name):
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{obj}.{name}"
    return f"getattr({obj}, {name!r})"


def local(i, name):
    safe = "".join(ch if ch.isalnum() else "_" for ch in name)
    return f"f{i}_{safe}"


def declared_scalar(annotation):
    """The one builtin scalar type an annotation guarantees in practice, if any."""
    if annotation in SCALARS:
        return annotation
    return None


class ModuleWriter:
    def __init__(self, packages, args):
        self.module = ModuleSource(packages, args, ABOUT,
                                   f"Generated save/load code for {', '.join(packages)}.",
                                   IMPORTS, uses=SAVE_OPERATIONS)
        self.aliases = set()

    def alias(self, cls):
        """A unique module-level name for cls, and the lines that bind it."""
        base = "_" + cls.__qualname__.replace(".", "_")
        alias, n = base, 1
        while alias in self.aliases:
            n += 1
            alias = f"{base}_{n}"
        self.aliases.add(alias)
        top, _, rest = cls.__qualname__.partition(".")
        line = f"from {cls.__module__} import {top} as {alias}"
        if rest:
            line = f"from {cls.__module__} import {top} as {alias}_owner\n{alias} = {alias}_owner.{rest}"
        return alias, line

    def add(self, cls):
        schema = schema_of(cls)
        kind = kind_of(cls)
        full = f"{cls.__module__}.{cls.__qualname__}"
        if kind not in ("slots", "dict"):
            self.module.section(full, f"# {kind}; nothing generated.")
            return
        alias, line = self.alias(cls)
        self.module.imports.append(line)
        body = (self.slotted if kind == "slots" else self.dict_shaped)(cls, alias, schema)
        self.module.section(full, body, f"_register({alias}, {schema.fingerprint!r}, "
                                        f"save=save_{alias[1:]}, load=load_{alias[1:]}, "
                                        f"module=__name__)")

    def slotted(self, cls, alias, schema):
        slots = schema.saved_slots
        hints = field_hints(cls)
        name = alias[1:]
        names = [local(i, s) for i, s in enumerate(slots)]
        comma = "," if len(slots) == 1 else ""
        out = [
            f"_SLOTS_{name} = {tuple(slots)!r}",
            "",
            "",
            f"def save_{name}(ctx):",
            f'    """{schema.name}, version {schema.version}: {len(slots)} slots."""',
            f"    t = ctx.type_index(({alias}, _SLOTS_{name}), {schema.name!r}, "
            f"{schema.version}, _SLOTS_{name})",
            "    lookup, mention = ctx.lookup, ctx.mention",
            f"    unset_slot = ctx.fallback({alias})",
            "",
            "    def save(obj):",
            "        try:",
        ]
        out += [f"            {n} = {attr('obj', s)}" for n, s in zip(names, slots)]
        out += [
            "        except AttributeError:      # an unset slot: reflection writes its marker",
            "            return unset_slot(obj)",
        ]
        for n, s in zip(names, slots):
            scalar = declared_scalar(hints.get(s))
            if scalar is not None:      # the declared type first: one identity test
                out.append(f"        if {n}.__class__ is not {SCALARS[scalar]} and {n}.__class__ not in _INLINE:")
            else:
                out.append(f"        if {n}.__class__ not in _INLINE:")
            out += [
                f"            c = lookup(id({n}))",
                f"            {n} = c if c.__class__ is list and c[0] is not None else mention({n})",
            ]
        out += [
            f"        return [t, {', '.join(names)}]",
            "    return save",
            "",
            "",
            f"def load_{name}(fields, plain, objs):",
            f'    """(create, fill, create_from_record) for records of {schema.name} saved with this very\n'
            f'    layout; else None: reflection maps the record."""',
            f"    if fields != _SLOTS_{name} or not plain:",
            "        return None",
            f"    cls, new = {alias}, object.__new__",
        ]
        if cls.__setattr__ is object.__setattr__:
            targets = ", ".join(attr("obj", s) for s in slots)
            unpack = f"        _, {targets}{comma} = vals"
            out += [
                "    if cls.__setattr__ is not object.__setattr__:",
                "        return None",
                "",
                "    def create(rec, vals):",
                "        obj = new(cls)",
                unpack,
                "        return obj",
                "",
                "    def fill(obj, vals):",
                unpack,
                "",
                "    def create_from_record(rec):     # references resolved here: no vals list",
                "        obj = new(cls)",
                f"        _, {', '.join(names)}{comma} = rec",
            ]
            out += [f"        {attr('obj', s_)} = {n} if {n}.__class__ is not list else objs[{n}[0]]"
                    for n, s_ in zip(names, slots)]
            out += ["        return obj", "    return create, fill, create_from_record"]
        else:
            out += [
                "    set_slot = object.__setattr__",
                "",
                "    def create(rec, vals):",
                "        obj = new(cls)",
                "        fill(obj, vals)",
                "        return obj",
                "",
                "    def fill(obj, vals):",
                f"        _, {', '.join(names)}{comma} = vals",
            ]
            out += [f"        set_slot(obj, {s!r}, {n})" for n, s in zip(names, slots)]
            out += ["    return create, fill, None"]
        return "\n".join(out)

    def dict_shaped(self, cls, alias, schema):
        name = alias[1:]
        return "\n".join([
            "",
            f"def save_{name}(ctx):",
            f'    """{schema.name}, version {schema.version}: fields in __dict__ order."""',
            "    lookup, mention, type_index, shapes = ctx.lookup, ctx.mention, ctx.type_index, {}",
            "",
            "    def save(obj):",
            "        d = obj.__dict__",
            "        shape = tuple(d)",
            "        t = shapes.get(shape)",
            "        if t is None:",
            f"            t = shapes[shape] = type_index(({alias}, shape), {schema.name!r}, "
            f"{schema.version}, shape)",
            "        rec = [v if v.__class__ in _INLINE else",
            "               c if (c := lookup(id(v))).__class__ is list and c[0] is not None else",
            "               mention(v) for v in d.values()]",
            "        rec.insert(0, t)",
            "        return rec",
            "    return save",
            "",
            "",
            f"def load_{name}(fields, plain, objs):",
            f'    """(create, fill, None) for records of {schema.name}: fields straight into\n'
            f'    __dict__."""',
            "    if not plain:",
            "        return None",
            f"    cls, new = {alias}, object.__new__",
            "    n = len(fields) + 1",
            "",
            "    def create(rec, vals):",
            "        if len(vals) != n:",
            f"            raise ValueError(f'a {schema.name} record holds {{n - 1}} fields, found {{len(vals) - 1}}')",
            "        obj = new(cls)",
            "        obj.__dict__.update(zip(fields, vals[1:]))",
            "        return obj",
            "",
            "    def fill(obj, vals):      # allocate() checked the record's length",
            "        obj.__dict__.update(zip(fields, vals[1:]))",
            "    return create, fill, None",
        ])

    def source(self):
        return self.module.text()


def generate(packages, classes, args):
    writer = ModuleWriter(packages, args)
    for cls in classes:
        writer.add(cls)
    return writer.source()
