"""Hypothesis strategies for whole game packages: classes of every style autosave
supports, enums, assets, and a ``build()`` that makes a graph of them.

A drawn ``PackageSpec`` is plain data; ``write_package`` renders it as a package in a
directory (``model.py`` with the classes and assets, ``world.py`` with ``build()``).
The graph has shared references, cycles, sets and dicts of instances, unset slots, big
ints, enum members and assets held through annotated fields: the shapes generated code
must write exactly as reflection does.
"""

import itertools
import os
import textwrap
from dataclasses import dataclass, field

from hypothesis import strategies as st

STYLES = ("attrs", "attrs_dict", "attrs_frozen", "attrs_noeq", "dataclass",
          "dataclass_slots", "slots", "plain")
# Instances hashed by identity: safe as set members and dict keys whatever they hold.
BY_IDENTITY = ("attrs_noeq", "slots", "plain", "dataclass_slots")
SCALARS = ("int", "str", "float", "bool", "bytes")

_names = itertools.count()


def unique_name(label=""):
    return f"fuzzpkg_{os.getpid()}_{next(_names)}{label}"


@dataclass
class ClassSpec:
    name: str
    style: str
    fields: list            # [(name, annotation text)]
    saveable: bool = True   # registered with @saveable, else reached by annotations only


@dataclass
class PackageSpec:
    name: str
    classes: list
    enum_members: list                  # names of the members of an enum ``Mood``
    asset_class: ClassSpec | None       # its instances are registered as assets
    assets: int                         # how many
    nodes: list = field(default_factory=list)   # [(class index, {field: value spec})]
    root: object = None                 # a value spec


def _annotation(draw, classes, i, asset_class):
    others = [c.name for c in classes[:i + 1]]
    choices = list(SCALARS) + ["object", "list", "dict"]
    if others:
        choices += ["class", "optional", "list_of", "dict_of", "set_of"]
    if asset_class is not None:
        choices += ["asset"]
    kind = draw(st.sampled_from(choices))
    if kind in SCALARS or kind in ("object", "list", "dict"):
        return kind
    if kind == "asset":
        return asset_class.name
    target = draw(st.sampled_from(others))
    return {"class": f'"{target}"', "optional": f'"{target} | None"',
            "list_of": f'"list[{target}]"', "dict_of": f'"dict[str, {target}]"',
            "set_of": f'"set[{target}]"'}[kind]


@st.composite
def package_specs(draw, max_classes=5, max_nodes=14):
    n = draw(st.integers(1, max_classes))
    asset_class = None
    if draw(st.booleans()):
        style = draw(st.sampled_from(["attrs_frozen", "attrs", "slots", "dataclass"]))
        asset_class = ClassSpec("Sprite", style, [("frames", "int"), ("label", "str")],
                                saveable=draw(st.booleans()))
    classes = []
    for i in range(n):
        style = draw(st.sampled_from(STYLES))
        count = draw(st.integers(0, 4))
        fields = [(f"f{j}", _annotation(draw, classes + [None], i - 1, asset_class))
                  for j in range(count)]
        fields = [(name, ann.replace('"None"', "None")) for name, ann in fields]
        classes.append(ClassSpec(f"C{i}", style, fields, saveable=i == 0 or draw(st.booleans())))
    spec = PackageSpec(unique_name(), classes,
                       draw(st.sampled_from([[], ["CALM", "ANGRY"], ["A", "B", "C"]])),
                       asset_class, draw(st.integers(1, 3)) if asset_class else 0)
    draw_graph(draw, spec, max_nodes)
    return spec


BY_VALUE = ("attrs_frozen", "dataclass")


def draw_graph(draw, spec, max_nodes):
    """Nodes (instances) with field values. A value spec is ("atom", v), ("node", i),
    ("enum", name), ("asset", i), ("list", [...]), ("set", [node indices]) or
    ("dict", [(str, value)]). Instances hashed by value hold only hashable values and
    refer only to earlier ones of their kind (their hash must not recurse forever);
    sets hold only hashable nodes."""
    count = draw(st.integers(1, max_nodes))
    kinds = [0] + [draw(st.integers(0, len(spec.classes) - 1)) for _ in range(count - 1)]
    by_value = [spec.classes[c].style in BY_VALUE for c in kinds]
    asset_hashable = spec.asset_class is not None and spec.asset_class.style != "attrs"
    hashable = [spec.classes[c].style in BY_IDENTITY for c in kinds]
    nodes = []

    def value(i, frozen, depth=0):
        options = ["atom", "atom", "node", "node"]
        if not frozen and depth < 2:
            options += ["list", "set", "dict"]
        if spec.enum_members:
            options.append("enum")
        if spec.assets and (asset_hashable or not frozen):
            options += ["asset", "asset"]
        targets = [j for j in range(count) if not frozen or
                   (hashable[j] and (not by_value[j] or j < i))]
        if not targets:
            options = [o for o in options if o != "node"]
        kind = draw(st.sampled_from(options))
        if kind == "atom":
            return ("atom", draw(st.one_of(
                st.none(), st.booleans(), st.integers(-(2 ** 63), 2 ** 64 - 1),
                st.integers(-(2 ** 63), 2 ** 64 - 1),
                st.sampled_from([2 ** 64, -(2 ** 63) - 1, 2 ** 200]),
                st.floats(allow_nan=False), st.text(max_size=3), st.binary(max_size=3))))
        if kind == "node":
            return ("node", draw(st.sampled_from(targets)))
        if kind == "enum":
            return ("enum", draw(st.sampled_from(spec.enum_members)))
        if kind == "asset":
            return ("asset", draw(st.integers(0, spec.assets - 1)))
        if kind == "list":
            return ("list", [value(i, frozen, depth + 1) for _ in range(draw(st.integers(0, 3)))])
        if kind == "set":
            members = [j for j in range(count) if hashable[j] and (not by_value[j] or j < i)]
            return ("set", draw(st.lists(st.sampled_from(members), max_size=4))
                    if members else [])
        return ("dict", [(draw(st.text(max_size=2)), value(i, frozen, depth + 1))
                         for _ in range(draw(st.integers(0, 3)))])

    for i, c in enumerate(kinds):
        cls = spec.classes[c]
        values = {}
        for name, _ in cls.fields:
            if cls.style in ("attrs", "attrs_noeq", "slots") and not draw(st.integers(0, 5)):
                continue                 # an unset slot
            values[name] = value(i, by_value[i])
        if by_value[i]:
            hashable[i] = all(_hashable(v, hashable, asset_hashable) for v in values.values())
        nodes.append((c, values))
    spec.nodes = nodes
    spec.root = ("node", 0)


def _hashable(v, hashable, asset_hashable):
    kind, x = v
    if kind == "node":
        return hashable[x]
    if kind == "asset":
        return asset_hashable
    return kind in ("atom", "enum")


# -- rendering ---------------------------------------------------------------------------

def _class_source(cls, root=False):
    deco = "@autosave.save_root\n" if root else "@autosave.saveable\n" if cls.saveable else ""
    names = [f for f, _ in cls.fields]
    body = "".join(f"    {f}: {a} = None\n" for f, a in cls.fields) or "    pass\n"
    if cls.style.startswith("attrs"):
        args = {"attrs": "", "attrs_dict": "slots=False", "attrs_frozen": "frozen=True",
                "attrs_noeq": "eq=False"}[cls.style]
        return f"{deco}@attrs.define({args})\nclass {cls.name}:\n{body}"
    if cls.style.startswith("dataclass"):
        # dataclass: frozen, hashed by value; dataclass_slots: slotted, by identity
        args = "frozen=True" if cls.style == "dataclass" else "slots=True, eq=False"
        return f"{deco}@dataclasses.dataclass({args})\nclass {cls.name}:\n{body}"
    annotations = "".join(f"    {f}: {a}\n" for f, a in cls.fields)
    slots = f"    __slots__ = {tuple(names)!r}\n" if cls.style == "slots" else ""
    return f"{deco}class {cls.name}:\n{slots}{annotations or '    pass'}\n"


def _value_source(v):
    kind, x = v
    if kind == "atom":
        if isinstance(x, float):
            return f"float.fromhex({x.hex()!r})"
        return repr(x)
    if kind == "node":
        return f"n[{x}]"
    if kind == "enum":
        return f"model.Mood.{x}"
    if kind == "asset":
        return f"model.SPRITES[{x}]"
    if kind == "list":
        return "[" + ", ".join(_value_source(i) for i in x) + "]"
    if kind == "set":
        return "{" + ", ".join(f"n[{i}]" for i in x) + "}" if x else "set()"
    return "{" + ", ".join(f"{k!r}: {_value_source(i)}" for k, i in x) + "}"


def model_source(spec):
    parts = ["import dataclasses\nimport enum\n\nimport attrs\n\nimport autosave\n"]
    if spec.enum_members:
        members = "".join(f"    {m} = {i + 1}\n" for i, m in enumerate(spec.enum_members))
        parts.append(f"@autosave.saveable\nclass Mood(enum.Enum):\n{members}")
    if spec.asset_class:
        parts.append(_class_source(spec.asset_class))
    for i, cls in enumerate(spec.classes):
        parts.append(_class_source(cls, root=i == 0))
    if spec.asset_class:
        a = spec.asset_class.name
        make = (f"object.__new__({a})" if spec.asset_class.style != "plain" else f"{a}()")
        parts.append(textwrap.dedent(f"""\
            def _sprite(i):
                s = {make}
                object.__setattr__(s, "frames", i)
                object.__setattr__(s, "label", f"sprite{{i}}")
                return autosave.asset(s, f"{spec.name}/sprites/{{i}}")


            SPRITES = [_sprite(i) for i in range({spec.assets})]
            """))
    return "\n\n".join(parts)


def world_source(spec):
    """``build()``: allocate every node, set fields in node order (a set holds only
    value-hashed nodes made before it, so they hash by their final fields), return
    the root."""
    lines = ["from . import model\n\n", "def build():",
             "    new, put = object.__new__, object.__setattr__"]
    lines.append("    n = [" + ", ".join(f"new(model.{spec.classes[c].name})"
                                       for c, _ in spec.nodes) + "]")
    for i in range(len(spec.nodes)):   # sets hold only earlier value-hashed nodes
        _, values = spec.nodes[i]
        for name, v in values.items():
            lines.append(f"    put(n[{i}], {name!r}, {_value_source(v)})")
    lines.append(f"    return {_value_source(spec.root)}")
    return "\n".join(lines) + "\n"


def write_package(spec, directory):
    """The package of spec under directory; its name."""
    root = directory / spec.name
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "model.py").write_text(model_source(spec))
    (root / "world.py").write_text(world_source(spec))
    return spec.name
