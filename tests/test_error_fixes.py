"""A load error's first suggested fix works: each test reads the fix out of the message,
applies it as written (the code the message shows goes into the game's source) and shows
that the load then succeeds."""

import re
import subprocess
import sys
import textwrap
import warnings

import pytest

import autosave
from autosave.errors import UnreachableUpgradeWarning
from modtools import fresh_name, load_module, unload


@pytest.fixture
def game():
    name = fresh_name()

    def version(source):
        return load_module(name, "import attrs, enum, autosave\n" + textwrap.dedent(source))

    version.name = name
    yield version
    unload(name)


GUARD_V1 = """
    @autosave.saveable(name="{name}.Guard")
    @attrs.define
    class Guard:
        hp: int
"""


def missing_mood(game):
    data = autosave.dumps(game(GUARD_V1.format(name=game.name)).Guard(30))
    game(f"""
        @autosave.saveable(name="{game.name}.Guard")
        @attrs.define
        class Guard:
            hp: int
            mood: str
    """)
    with pytest.raises(autosave.IncompatibleSaveError) as e:
        autosave.loads(data)
    return data, str(e.value)


def test_a_missing_field_first_fix_a_default(game):
    data, message = missing_mood(game)
    assert "has a field 'mood'" in message and "give it a default" in message
    game(f"""
        @autosave.saveable(name="{game.name}.Guard")
        @attrs.define
        class Guard:
            hp: int
            mood: str = "calm"
    """)
    assert (autosave.loads(data).hp, autosave.loads(data).mood) == (30, "calm")


def test_a_missing_field_second_fix_as_the_message_writes_it(game):
    data, message = missing_mood(game)
    bump = re.search(r"\((@autosave\.saveable\(version=\d+\))\)", message).group(1)
    hook = re.search(r"(@autosave\.upgrade\('[^']+', from_version=\d+\))", message).group(1)
    key = re.search(r"setting fields\['(\w+)'\]", message).group(1)
    v2 = game(f"""
        {bump.replace("saveable(", f"saveable(name='{game.name}.Guard', ")}
        @attrs.define
        class Guard:
            hp: int
            mood: str

        {hook}
        def add_mood(fields):
            fields[{key!r}] = "calm"
            return fields
    """)
    assert autosave.loads(data) == v2.Guard(30, "calm")


def test_a_hook_without_a_version_bump_is_named_and_warned_about(game):
    data, _ = missing_mood(game)
    game(f"""
        @autosave.saveable(name="{game.name}.Guard")
        @attrs.define
        class Guard:
            hp: int
            mood: str

        @autosave.upgrade("{game.name}.Guard", from_version=1)
        def add_mood(fields):
            fields["mood"] = "calm"
            return fields
    """)
    with pytest.warns(UnreachableUpgradeWarning, match="add_mood .* can never run") as w, \
            pytest.raises(autosave.IncompatibleSaveError,
                          match="the hook add_mood registered from_version=1 never runs"):
        autosave.loads(data)
    assert w[0].filename == __file__            # the game's line, not autosave's
    # The fix the warning names: the version bump; the hook then runs.
    v3 = game(f"""
        @autosave.saveable(name="{game.name}.Guard", version=2)
        @attrs.define
        class Guard:
            hp: int
            mood: str
    """)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autosave.loads(data) == v3.Guard(30, "calm")


def test_a_removed_enum_member_first_fix_an_alias(game):
    v1 = game("""
        @autosave.save_root
        class Terrain(enum.Enum):
            GRASS = 1
            WATER = 2
    """)
    data = autosave.dumps([v1.Terrain.WATER, v1.Terrain.GRASS])
    game("""
        @autosave.save_root
        class Terrain(enum.Enum):
            GRASS = 1
            SEA = 2
    """)
    with pytest.raises(autosave.IncompatibleSaveError) as e:
        autosave.loads(data)
    message = str(e.value)
    assert f"in module {game.name}" in message
    alias = re.search(r"alias, (WATER = <[^>]+>)", message).group(1)
    v3 = game(f"""
        @autosave.save_root
        class Terrain(enum.Enum):
            GRASS = 1
            SEA = 2
            {alias.split(" = ")[0]} = 2
    """)
    assert autosave.loads(data) == [v3.Terrain.SEA, v3.Terrain.GRASS]


def test_a_removed_enum_value_first_fix_a_member_with_it(game):
    v1 = game("""
        @autosave.save_root
        class Door(enum.Flag):
            OPEN = 1
            LOCKED = 2
            TRAPPED = 4
    """)
    data = autosave.dumps(v1.Door.OPEN | v1.Door.TRAPPED)
    game("""
        @autosave.save_root
        class Door(enum.Flag):
            OPEN = 1
            LOCKED = 2
    """)
    with pytest.raises(autosave.IncompatibleSaveError, match="no value 5 any more") as e:
        autosave.loads(data)
    assert f"in module {game.name}" in str(e.value)
    member = re.search(r"\((OLD_NAME = 5)\)", str(e.value)).group(1)
    v3 = game(f"""
        @autosave.save_root
        class Door(enum.Flag):
            OPEN = 1
            LOCKED = 2
            {member}
    """)
    assert autosave.loads(data).value == 5 and type(autosave.loads(data)) is v3.Door
