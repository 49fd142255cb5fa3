"""Upgrade hooks keep the data they are given, for every class style, through chains of
versions: a v1 save loaded by v3 code holds exactly what the hooks made of it."""

from textwrap import dedent

import pytest

import autosave
from modtools import fresh_name, load_module, unload

# Each style declares fields (name, stock, level) given as a format string's {fields};
# {deco} is where @saveable goes. ``make`` builds an instance from keyword values.
STYLES = {
    "attrs-slots": ("@attrs.define\nclass Shop:\n{fields}", "attrs"),
    "attrs-dict": ("@attrs.define(slots=False)\nclass Shop:\n{fields}", "attrs"),
    "attrs-frozen": ("@attrs.frozen\nclass Shop:\n{fields}", "attrs"),
    "dataclass": ("@dataclasses.dataclass\nclass Shop:\n{fields}", "attrs"),
    "slots": ("class Shop:\n    __slots__ = {slots}\n{init}", "plain"),
    "plain": ("class Shop:\n{init}", "plain"),
    "getstate": ("class Shop:\n{init}\n    def __getstate__(self):\n        return dict(vars(self))\n"
                 "    def __setstate__(self, state):\n        vars(self).update(state)\n", "plain"),
    "list-subclass": ("class Shop(list):\n{init}", "plain"),
}


def source(style, version, fields):
    """``fields``: [(name, annotation, default or None)]."""
    template, kind = STYLES[style]
    if kind == "attrs":
        body = "\n".join(f"    {n}: {a}" + (f" = {d}" if d is not None else "")
                         for n, a, d in fields)
    else:
        body = ""
    params = ", ".join(f"{n}" + (f"={d}" if d is not None else "") for n, _, d in fields)
    init = (f"    def __init__(self, {params}):\n" +
            "".join(f"        self.{n} = {n}\n" for n, _, _ in fields))
    slots = repr(tuple(n for n, _, _ in fields))
    cls = template.format(fields=body, init=init, slots=slots)
    return (f"@autosave.saveable(name=__name__ + '.Shop', version={version})\n"
            f"@autosave.save_root\n" + cls)


@pytest.fixture
def game():
    name = fresh_name("upg")
    yield lambda src: load_module(name, "import attrs, dataclasses, autosave\n" + dedent(src))
    unload(name)


def values(obj):
    return {n: getattr(obj, n) for n in ("name", "stock", "level", "owner") if hasattr(obj, n)}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_chain_of_hooks_keeps_every_value(game, style):
    v1 = game(source(style, 1, [("title", "str", None), ("items", "str", None)]))
    data = autosave.dumps(v1.Shop("Bob", "axe,rope"))
    v3 = game(source(style, 3, [("name", "str", None), ("stock", "list", None),
                                ("level", "int", "1"), ("owner", "str", "'nobody'")]) + f"""
@autosave.upgrade(__name__ + '.Shop', from_version=1)
def rename(fields):
    fields['name'] = fields.pop('title')
    return fields

@autosave.upgrade(__name__ + '.Shop', from_version=2)
def reshape(fields):
    fields['stock'] = fields.pop('items').split(',')
    fields['level'] = 5
    return fields
""")
    shop = autosave.loads(data)
    assert type(shop) is v3.Shop
    # hook values win over defaults; an untouched new field gets its default
    expected = {"name": "Bob", "stock": ["axe", "rope"], "level": 5}
    if style not in ("slots", "plain", "getstate", "list-subclass"):
        expected["owner"] = "nobody"
    got = values(shop)
    assert {k: got[k] for k in expected} == expected


@pytest.mark.parametrize("style", ["attrs-slots", "dataclass", "attrs-frozen"])
def test_a_field_without_a_value_or_default_names_class_version_and_field(game, style):
    v1 = game(source(style, 1, [("title", "str", None)]))
    data = autosave.dumps(v1.Shop("Bob"))
    game(source(style, 2, [("title", "str", None), ("rank", "int", None)]) + """
@autosave.upgrade(__name__ + '.Shop', from_version=1)
def forgot(fields):
    return fields
""")
    with pytest.raises(autosave.IncompatibleSaveError,
                       match=r"Shop field 'rank' .* version 1"):
        autosave.loads(data)


@pytest.mark.parametrize("bad", ["None", "[('a', 1)]", "{1: 2}", "'text'"])
@pytest.mark.parametrize("style", ["attrs-slots", "getstate"])
def test_a_hook_that_returns_no_field_dict_is_incompatible(game, style, bad):
    v1 = game(source(style, 1, [("title", "str", None)]))
    data = autosave.dumps(v1.Shop("Bob"))
    game(source(style, 2, [("title", "str", None)]) + f"""
@autosave.upgrade(__name__ + '.Shop', from_version=1)
def broken(fields):
    return {bad}
""")
    with pytest.raises(autosave.IncompatibleSaveError, match=r"broken .*Shop version 1"):
        autosave.loads(data)


def test_a_missing_link_in_the_chain_is_named(game):
    v1 = game(source("attrs-slots", 1, [("title", "str", None)]))
    data = autosave.dumps(v1.Shop("Bob"))
    game(source("attrs-slots", 3, [("title", "str", None)]) + """
@autosave.upgrade(__name__ + '.Shop', from_version=1)
def one(fields):
    return fields
""")
    with pytest.raises(autosave.IncompatibleSaveError, match="from_version=2"):
        autosave.loads(data)


def test_hooks_run_on_the_generated_load_path_too(game, monkeypatch):
    """Records of an old version never take generated code: the hooks always run."""
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "1")
    v1 = game(source("attrs-slots", 1, [("title", "str", None)]))
    data = autosave.dumps([v1.Shop("Bob"), v1.Shop("Ann")])
    game(source("attrs-slots", 2, [("name", "str", None)]) + """
@autosave.upgrade(__name__ + '.Shop', from_version=1)
def rename(fields):
    fields['name'] = fields.pop('title')
    return fields
""")
    assert [s.name for s in autosave.loads(data)] == ["Bob", "Ann"]


READING_V1 = """
class Stats:
    __slots__ = ("max_hp", "bonus")
    def __init__(self, max_hp, bonus):
        self.max_hp, self.bonus = max_hp, bonus

class Made:
    '''Built by its constructor: the load builds it as a record, after the batches.'''
    def __init__(self, n):
        self.n = n
    def __reduce__(self):
        return (Made, (self.n,))

@autosave.saveable(name=__name__ + '.Squad', version=1)
class Squad:
    __slots__ = ("size",)
    def __init__(self, size):
        self.size = size

@autosave.saveable(name=__name__ + '.Unit', version=1)
class Unit:
    __slots__ = ("stats", "squad", "made")
    def __init__(self, stats, squad, made):
        self.stats, self.squad, self.made = stats, squad, made
"""

READING_V2 = """
class Stats:
    __slots__ = ("max_hp", "bonus")

class Made:
    def __init__(self, n):
        self.n = n
    def __reduce__(self):
        return (Made, (self.n,))

@autosave.saveable(name=__name__ + '.Squad', version=2)
class Squad:
    __slots__ = ("size", "weight")

@autosave.upgrade(__name__ + '.Squad', from_version=1)
def weigh(fields):
    fields['weight'] = 10 * fields['size']
    return fields

@autosave.saveable(name=__name__ + '.Unit', version=2)
class Unit:
    __slots__ = ("stats", "squad", "made", "hp")

@autosave.upgrade(__name__ + '.Unit', from_version=1)
def add_hp(fields):
    # reads a plain object, an upgraded one (its new field) and one built by a constructor
    stats, squad, made = fields['stats'], fields['squad'], fields['made']
    fields['hp'] = stats.max_hp + sum(stats.bonus) + squad.weight + made.n
    return fields
"""


@pytest.mark.parametrize("made", [True, False])
def test_hooks_read_what_the_fields_refer_to_finished(game, made):
    # An upgrade hook may read the objects its fields refer to: they are loaded whole
    # first, upgraded ones included, as an old save's records came in post-order.
    # (Units are met before their stats, and with ``made`` their fill also waits for
    # a constructor's product.)
    v1 = game(READING_V1)
    squad = v1.Squad(3)
    units = [v1.Unit(v1.Stats(10 * i, [i, 1]), squad, v1.Made(i) if made else None)
             for i in range(4)]
    data = autosave.dumps({"units": units, "squad": squad})
    game(READING_V2.replace("made.n", "(made.n if made else 0)"))
    back = autosave.loads(data)
    assert [u.hp for u in back["units"]] == [11 * i + 1 + 30 + (i if made else 0)
                                             for i in range(4)]
    assert back["squad"].weight == 30 and back["units"][0].squad is back["squad"]
