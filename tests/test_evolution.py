"""Old saves keep loading after the game is patched: added, removed and renamed fields
and classes, versions with upgrade hooks. Each test saves with one version of a game
module and loads with the next."""

import os
from textwrap import dedent

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosave
from modtools import fresh_name, load_module, unload

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)


@pytest.fixture
def game():
    name = fresh_name()

    def version(source):
        return load_module(name, "import attrs, dataclasses, enum, autosave\n" + dedent(source))

    version.name = name
    yield version
    unload(name)


def test_added_field_gets_its_default(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
    """)
    data = autosave.dumps(v1.Guard(7))
    v2 = game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
            alert: bool = False
            route: list = attrs.Factory(lambda: ["gate"])
    """)
    guard = autosave.loads(data)
    assert type(guard) is v2.Guard
    assert (guard.hp, guard.alert, guard.route) == (7, False, ["gate"])


def test_added_dataclass_field_with_default_factory(game):
    v1 = game("""
        @autosave.save_root
        @dataclasses.dataclass
        class Chest:
            gold: int
    """)
    data = autosave.dumps(v1.Chest(3))
    game("""
        @autosave.save_root
        @dataclasses.dataclass
        class Chest:
            gold: int
            items: list = dataclasses.field(default_factory=list)
    """)
    chest = autosave.loads(data)
    assert chest.gold == 3 and chest.items == []


def test_added_field_without_default_names_class_and_field(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
    """)
    data = autosave.dumps(v1.Guard(7))
    game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
            rank: str
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match=r"Guard.*'rank'.*no default"):
        autosave.loads(data)


def test_removed_field_is_dropped(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
            mood: str
    """)
    data = autosave.dumps(v1.Guard(7, "grumpy"))
    game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
    """)
    guard = autosave.loads(data)
    assert guard.hp == 7 and not hasattr(guard, "mood")


def test_field_order_change_is_harmless(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Pos:
            x: int
            y: int
    """)
    data = autosave.dumps(v1.Pos(1, 2))
    game("""
        @autosave.save_root
        @attrs.define
        class Pos:
            y: int
            x: int
    """)
    pos = autosave.loads(data)
    assert (pos.x, pos.y) == (1, 2)


def test_renamed_class_loads_through_alias(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Guard:
            hp: int
    """)
    data = autosave.dumps([v1.Guard(5), v1.Guard(6)])
    v2 = game(f"""
        @autosave.save_root
        @autosave.saveable(aliases=("{game.name}.Guard",))
        @attrs.define
        class Sentry:
            hp: int
    """)
    sentries = autosave.loads(data)
    assert [type(s) for s in sentries] == [v2.Sentry, v2.Sentry]
    assert [s.hp for s in sentries] == [5, 6]


def test_stable_name_survives_module_move(game):
    v1 = game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Guard")
        @attrs.define
        class Guard:
            hp: int
    """)
    data = autosave.dumps(v1.Guard(4))
    assert b"rpg.Guard" in data and game.name.encode() not in data
    other = fresh_name()
    unload(game.name)
    try:
        moved = load_module(other, """
            import attrs, autosave
            @autosave.save_root
            @autosave.saveable(name="rpg.Guard")
            @attrs.define
            class Watchman:
                hp: int
        """)
        assert type(autosave.loads(data)) is moved.Watchman
    finally:
        unload(other)


def test_version_upgrade_chain_runs_in_order(game):
    v1 = game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Hero")
        @attrs.define
        class Hero:
            hp: int
            x: int
            y: int
    """)
    data = autosave.dumps(v1.Hero(10, 3, 4))
    game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Hero", version=3)
        @attrs.define
        class Hero:
            health: int
            pos: tuple
            level: int = 1

        @autosave.upgrade("rpg.Hero", from_version=1)
        def hp_to_health(fields):
            fields["health"] = fields.pop("hp")
            return fields

        @autosave.upgrade("rpg.Hero", from_version=2)
        def xy_to_pos(fields):
            fields["pos"] = (fields.pop("x"), fields.pop("y"))
            return fields
    """)
    hero = autosave.loads(data)
    assert (hero.health, hero.pos, hero.level) == (10, (3, 4), 1)
    # The upgraded save is written as the current version and loads without hooks.
    assert autosave.loads(autosave.dumps(hero)) == hero


def test_missing_upgrade_hook_is_named(game):
    v1 = game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Mage")
        @attrs.define
        class Mage:
            mana: int
    """)
    data = autosave.dumps(v1.Mage(5))
    game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Mage", version=2)
        @attrs.define
        class Mage:
            mana: int
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match=r"upgrade\('rpg.Mage', from_version=1\)"):
        autosave.loads(data)


def test_failing_upgrade_hook_is_reported(game):
    v1 = game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Rogue")
        @attrs.define
        class Rogue:
            gold: int
    """)
    data = autosave.dumps(v1.Rogue(5))
    game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Rogue", version=2)
        @attrs.define
        class Rogue:
            coins: int

        @autosave.upgrade("rpg.Rogue", from_version=1)
        def broken(fields):
            return fields["silver"]
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match=r"broken.*rpg.Rogue.*KeyError"):
        autosave.loads(data)


def test_save_from_newer_game_is_refused(game):
    v2 = game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Elf", version=2)
        @attrs.define
        class Elf:
            age: int
    """)
    data = autosave.dumps(v2.Elf(900))
    game("""
        @autosave.save_root
        @autosave.saveable(name="rpg.Elf")
        @attrs.define
        class Elf:
            age: int
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match="version 2, newer"):
        autosave.loads(data)


def test_deleted_class_suggests_an_alias(game):
    v1 = game("""
        @autosave.save_root
        class World: pass
        class Ghost: pass
    """)
    world = v1.World()
    world.ghost = v1.Ghost()
    data = autosave.dumps(world)
    game("""
        @autosave.save_root
        class World: pass
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match=r"Ghost.*no longer exists.*aliases"):
        autosave.loads(data)


def test_removed_enum_member_is_named(game):
    v1 = game("""
        @autosave.save_root
        class Mood(enum.Enum):
            CALM = 1
            ANGRY = 2
    """)
    data = autosave.dumps([v1.Mood.CALM, v1.Mood.ANGRY])
    v2 = game("""
        @autosave.save_root
        class Mood(enum.Enum):
            CALM = 10
            FURIOUS = 2
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match="Mood has no member 'ANGRY'"):
        autosave.loads(data)
    # Members are saved by name, so a changed value does not matter.
    assert autosave.loads(autosave.dumps(v1.Mood.CALM)) is v2.Mood.CALM


def test_slotted_class_gains_a_slot(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define(slots=True)
        class Door:
            open: bool
    """)
    data = autosave.dumps(v1.Door(True))
    game("""
        @autosave.save_root
        @attrs.define(slots=True)
        class Door:
            open: bool
            locked: bool = True
    """)
    door = autosave.loads(data)
    assert door.open is True and door.locked is True


def test_plain_class_keeps_attributes_it_saved(game):
    v1 = game("""
        @autosave.save_root
        class Npc:
            def __init__(self):
                self.name = "Ann"
    """)
    data = autosave.dumps(v1.Npc())
    game("""
        @autosave.save_root
        class Npc:
            speed = 2.5        # a new class-level default
            def __init__(self):
                self.name = "Ann"
                self.speed = 1.0
    """)
    npc = autosave.loads(data)
    assert npc.name == "Ann" and npc.speed == 2.5 and "speed" not in vars(npc)


def test_field_made_transient_comes_back_as_default(game):
    v1 = game("""
        @autosave.save_root
        @attrs.define
        class Camera:
            zoom: float
            cache: dict
    """)
    data = autosave.dumps(v1.Camera(2.0, {"big": "data"}))
    game("""
        @autosave.save_root
        @attrs.define
        class Camera:
            zoom: float
            cache: dict = attrs.field(factory=dict, metadata=autosave.transient)
    """)
    camera = autosave.loads(data)
    assert camera.zoom == 2.0 and camera.cache == {}


# -- generated patches of one class, its instances saved in batches and as records -----------

POOL = ["f0", "f1", "f2", "f3", "f4", "f5"]


@st.composite
def patches(draw):
    """(v1 fields, v2 fields as (name, kind), slots): v2 keeps some of v1's fields in any
    order, drops the rest, adds fields with defaults and makes some kept ones transient."""
    v1 = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=5, unique=True))
    kept = draw(st.lists(st.sampled_from(v1), unique=True, max_size=len(v1)))
    added = draw(st.lists(st.sampled_from([f for f in POOL if f not in v1]), unique=True,
                          max_size=2))
    v2 = [(f, draw(st.sampled_from(["kept", "transient"]))) for f in kept] + \
        [(f, "added") for f in added]
    v2 = draw(st.permutations(v2))
    return v1, v2, draw(st.booleans())


def class_source(fields, slots):
    lines = ["@autosave.save_root", f"@attrs.define(slots={slots})", "class Unit:", "    pass"]
    for name, kind in fields:
        if kind == "kept":
            lines.append(f"    {name}: object = None")
        elif kind == "transient":
            lines.append(f"    {name}: object = attrs.field(default='T', "
                         f"metadata=autosave.transient)")
        else:
            lines.append(f"    {name}: object = 'A'")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=FUZZ or 150, deadline=None, derandomize=not FUZZ,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(patches())
def test_generated_patches_load_each_field_from_its_own_column(game, patch):
    """Every instance, whether its batch is filled in bulk or it is a record, gets each
    kept field's own saved value and each added or transient one its default; a field
    the class dropped is gone from a slotted one and kept in a __dict__ (a dropped field
    in the middle once shifted a slotted batch's later fields by a column)."""
    v1_fields, v2_fields, slots = patch
    v1 = game(class_source([(f, "kept") for f in v1_fields], slots))
    units = [v1.Unit(**{f: f"{f}-{i}" for f in v1_fields}) for i in range(4)]
    lone = v1.Unit(**{f: f"{f}-lone" for f in v1_fields})
    data = autosave.dumps({"many": units, "lone": (lone, [lone])})
    v2 = game(class_source(v2_fields, slots))
    back = autosave.loads(data)
    for unit, i in [*zip(back["many"], map(str, range(4))), (back["lone"][0], "lone")]:
        assert type(unit) is v2.Unit
        for name, kind in v2_fields:
            expected = {"kept": f"{name}-{i}", "transient": "T", "added": "A"}[kind]
            assert getattr(unit, name) == expected, (name, kind, i)
        for name in set(v1_fields) - {f for f, _ in v2_fields}:
            if slots:
                assert not hasattr(unit, name), name
            else:
                assert vars(unit)[name] == f"{name}-{i}", name
