"""Field renames without code: a field declares its old names and saves holding them
fill it, for attrs, dataclasses, slotted and plain classes; and the verify type check
on loaded objects (autosave.compat.conform)."""

import attrs
import pytest

import autosave
from autosave.compat.conform import conforms, problems
from autosave.model import schema as schema_mod
from modtools import fresh_name, load_module


def reload_as(source, name):
    return load_module(name, source)


V1 = '''
import dataclasses, attrs, autosave

@autosave.save_root
@attrs.define
class A:
    coins: int = 0

@autosave.saveable
@dataclasses.dataclass
class D:
    coins: int = 0

@autosave.saveable
class S:
    __slots__ = ("coins",)
    def __init__(self):
        self.coins = 0

@autosave.saveable
class P:
    def __init__(self):
        self.coins = 0
'''

V2 = '''
import dataclasses, attrs, autosave

@autosave.save_root
@attrs.define
class A:
    gold: int = attrs.field(default=0, metadata=autosave.renamed_from("coins"))

@autosave.saveable
@dataclasses.dataclass
class D:
    gold: int = dataclasses.field(default=0, metadata=autosave.renamed_from("money", "coins"))

@autosave.saveable
class S:
    __slots__ = ("gold",)
    __autosave_renamed__ = {"gold": "coins"}
    def __init__(self):
        self.gold = 0

@autosave.saveable
class P:
    __autosave_renamed__ = {"gold": ("coins",)}
    def __init__(self):
        self.gold = 0
'''


def test_a_renamed_field_is_filled_from_its_old_name_in_every_class_style():
    name = fresh_name("renamegame")
    m = reload_as(V1, name)
    objs = [m.A(5), m.D(6), m.S(), m.P()]
    objs[2].coins, objs[3].coins = 7, 8
    data = autosave.dumps(objs)
    m = reload_as(V2, name)
    loaded = autosave.loads(data)
    assert [type(o).__name__ for o in loaded] == ["A", "D", "S", "P"]
    assert [o.gold for o in loaded] == [5, 6, 7, 8]
    assert not any(hasattr(o, "coins") for o in loaded)
    # and the new name saves and loads as itself
    assert [o.gold for o in autosave.loads(autosave.dumps(loaded))] == [5, 6, 7, 8]


def test_an_old_name_that_is_still_a_field_is_refused():
    @attrs.define
    class Both:
        coins: int = 0
        gold: int = attrs.field(default=0, metadata=autosave.renamed_from("coins"))
    with pytest.raises(TypeError, match="which is a field of"):
        schema_mod.schema_of(Both)


def test_renamed_from_takes_names():
    with pytest.raises(ValueError):
        autosave.renamed_from()
    with pytest.raises(ValueError):
        autosave.renamed_from("not a name")
    assert dict(autosave.renamed_from("a", "b")) == {"autosave.old_names": ("a", "b")}


@pytest.mark.parametrize("value, hint, ok", [
    ({"a": 1}, dict[str, int], True),
    ({"a": 1}, dict[str, str], False),
    ([1, "x"], list[int], False),
    ([1, 2], list[int | str], True),
    ((1, "a"), tuple[int, str], True),
    ((1, 2), tuple[int, ...], True),
    ((1, "a"), tuple[int, ...], False),
    (None, int | None, True),
    (3, float, True),
    ("3", float, False),
    (object(), "Forward", True),
])
def test_conforms_reads_into_containers(value, hint, ok):
    assert conforms(value, hint) is ok


def test_problems_name_a_mistyped_field_and_a_missing_init_attribute(tmp_path, monkeypatch):
    name = fresh_name("conformgame")
    (tmp_path / f"{name}.py").write_text('''
import attrs, autosave

@autosave.save_root
@attrs.define
class Shop:
    stock: dict[str, str]

@autosave.saveable
class Stats:
    def __init__(self):
        self.kills = 0
        self.streak = 0
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    m = __import__(name)
    shop = m.Shop({"a": 1})
    stats = m.Stats.__new__(m.Stats)
    stats.kills = 1
    found = problems([shop, stats])
    assert any("Shop.stock holds dict" in p for p in found), found
    assert any("Stats.streak is set by __init__" in p for p in found), found
    m.Stats.streak = 0          # a class-level default: loaded instances read it
    assert not any("streak" in p for p in problems([stats]))
