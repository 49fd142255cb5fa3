"""Weak references and weak containers keep exactly the entries whose targets were saved
through a strong reference, as the game would see them had it never been saved."""

import weakref

import pytest

import autosave

autosave.allow(__name__)


class Npc:
    def __init__(self, name):
        self.name = name


@pytest.fixture
def crowd():
    return {name: Npc(name) for name in "abc"}


def round_trip(root):
    data = autosave.dumps(root)
    loaded = autosave.loads(data)
    assert autosave.dumps(loaded) == data
    return loaded


def test_weakset_keeps_saved_members(crowd):
    a, b, c = crowd.values()
    observers = weakref.WeakSet([a, b, c])
    level = {"npcs": [a, b], "observers": observers}     # c is only weakly held
    back = round_trip(level)
    assert sorted(n.name for n in back["observers"]) == ["a", "b"]
    assert set(back["observers"]) == set(back["npcs"])


def test_weak_value_dictionary_drops_entries_of_unsaved_values(crowd):
    a, b, c = crowd.values()
    cache = weakref.WeakValueDictionary({"a": a, "c": c})
    back = round_trip({"npcs": [a, b], "cache": cache})
    assert list(back["cache"].keys()) == ["a"]
    assert back["cache"]["a"] is back["npcs"][0]


def test_weak_key_dictionary_drops_entries_of_unsaved_keys(crowd):
    a, b, c = crowd.values()
    notes = weakref.WeakKeyDictionary({a: "brave", c: "lost"})
    back = round_trip({"npcs": [a, b], "notes": notes})
    assert [(k.name, v) for k, v in back["notes"].items()] == [("a", "brave")]
    assert next(iter(back["notes"])) is back["npcs"][0]


def test_weakref_alive_iff_target_saved(crowd):
    a, _, c = crowd.values()
    back = round_trip({"npc": a, "to_a": weakref.ref(a), "to_c": weakref.ref(c)})
    assert back["to_a"]() is back["npc"]
    assert back["to_c"]() is None


def test_weak_entries_survive_only_while_loaded_objects_live(crowd):
    a, b, _ = crowd.values()
    back = round_trip({"npcs": [a, b], "observers": weakref.WeakSet([a, b])})
    del back["npcs"][1]
    assert [n.name for n in back["observers"]] == ["a"]


def test_weakset_order_does_not_depend_on_memory_addresses():
    npcs = [Npc(str(i)) for i in range(20)]
    data = autosave.dumps([npcs, weakref.WeakSet(npcs)])
    for _ in range(3):
        assert autosave.dumps(autosave.loads(data)) == data


def test_save_and_load_hold_no_references_afterwards():
    # Nothing of a save or a load may linger until the next garbage collection: a game
    # that drops a loaded world expects its memory back, and weak containers expect
    # their entries gone.
    import gc
    npc = Npc("a")
    cycle = ([],)
    cycle[0].append(cycle)                # a tuple cycle makes the loader defer records
    npc.loop = cycle
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        data = autosave.dumps([npc, cycle])
        saved = weakref.ref(npc)
        del npc, cycle
        assert saved() is None, "dumps kept the saved graph alive"
        loaded = autosave.loads(data)
        probe = weakref.ref(loaded[0])
        del loaded
        assert probe() is None, "loads kept the loaded graph alive"
    finally:
        if was_enabled:
            gc.enable()


def test_weak_dictionaries_with_objects_on_the_strong_side(crowd):
    a, b, c = crowd.values()
    token_a, token_c = Npc("token-a"), Npc("token-c")
    by_token = weakref.WeakValueDictionary({token_a: a, token_c: c})      # keys strong
    badges = weakref.WeakKeyDictionary({a: token_a, c: token_c})          # values strong
    level = {"tokens": [token_c, token_a], "npcs": [a, b], "by_token": by_token,
             "badges": badges}
    back = round_trip(level)
    loaded_token_a = back["tokens"][1]
    assert dict(back["by_token"]) == {loaded_token_a: back["npcs"][0]}
    assert dict(back["badges"]) == {back["npcs"][0]: loaded_token_a}
