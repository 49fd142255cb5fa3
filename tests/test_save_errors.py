"""Unsaveable things fail the save with the object path and what to do; a failed or
interrupted save never damages the previous file."""

import os
import socket
import threading

import attrs
import pytest

import autosave

autosave.allow(__name__)


@attrs.define(eq=False)
class Ai:
    plan: object = None


@attrs.define(eq=False)
class Npc:
    name: str
    ai: Ai = attrs.Factory(Ai)


@attrs.define(eq=False)
class Squad:
    leader: Npc
    members: list


@autosave.save_root
@attrs.define(eq=False)
class World:
    squads: list = attrs.Factory(list)


def patrol():
    yield "north"
    yield "south"


def make_world(plan):
    npcs = [Npc(f"n{i}") for i in range(3)]
    world = World([Squad(npcs[0], npcs) for _ in range(4)])
    bad = Npc("bad", Ai(plan))
    world.squads[3].leader = bad
    return world


def test_plain_generator_names_path_function_and_fix():
    gen = patrol()
    next(gen)
    with pytest.raises(autosave.SaveError) as e:
        autosave.dumps(make_world(gen))
    assert e.value.path == "root.squads[3].leader.ai.plan"
    message = str(e.value)
    assert "patrol()" in message and "test_save_errors.py" in message
    assert "@autosave.coroutine" in message and "autosave.transient" in message


def test_socket_is_refused_with_path():
    sock = socket.socket()
    try:
        with pytest.raises(autosave.SaveError, match=r"root.squads\[3\].leader.ai.plan:.*transient"):
            autosave.dumps(make_world(sock))
    finally:
        sock.close()


def test_open_file_is_refused(tmp_path):
    with open(tmp_path / "x.txt", "w") as f:
        with pytest.raises(autosave.SaveError, match=r"ai.plan.*TextIOWrapper"):
            autosave.dumps(make_world(f))


def test_lock_is_refused():
    with pytest.raises(autosave.SaveError, match=r"ai.plan.*lock"):
        autosave.dumps(make_world(threading.Lock()))


def test_class_defined_in_a_function_is_refused():
    class Local:
        pass
    with pytest.raises(autosave.SaveError, match=r"ai.plan.*defined inside a function.*saveable\(name="):
        autosave.dumps(make_world(Local()))



def test_refused_class_met_first_in_a_column_among_others_is_named_by_path():
    # A list's items are taken as one column; the classes met there for the first time
    # are decided together, and the one refused is named by its object's path.
    class Local:
        pass
    squad = Squad(Npc("a"), [Npc("b"), Ai(), Local(), Npc("c")])
    with pytest.raises(autosave.SaveError,
                       match=r"squads\[0\]\.members\[2\].*defined inside a function"):
        autosave.dumps(World([squad]))

@attrs.define
class Holder:
    sock: object = attrs.field(default=None, metadata=autosave.transient)


def test_transient_field_skips_unsaveable_value():
    sock = socket.socket()
    try:
        back = autosave.loads(autosave.dumps(Holder(sock)))
        assert back.sock is None
    finally:
        sock.close()


def test_failed_save_leaves_old_file(tmp_path):
    path = tmp_path / "slot1.sav"
    autosave.save(path, World())
    before = path.read_bytes()
    with pytest.raises(autosave.SaveError):
        autosave.save(path, make_world(patrol()))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["slot1.sav"]


def test_crash_during_replace_leaves_old_file(tmp_path, monkeypatch):
    path = tmp_path / "slot1.sav"
    autosave.save(path, World())
    before = path.read_bytes()

    def power_cut(src, dst):
        raise OSError("power cut")
    monkeypatch.setattr(os, "replace", power_cut)
    with pytest.raises(OSError, match="power cut"):
        autosave.save(path, make_world(None))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["slot1.sav"]


def test_save_then_load_file(tmp_path):
    world = make_world("charge")
    size = autosave.save(tmp_path / "w.sav", world)
    assert size == (tmp_path / "w.sav").stat().st_size
    back = autosave.load(tmp_path / "w.sav")
    assert back.squads[3].leader.ai.plan == "charge"
    assert back.squads[0].members is back.squads[1].members
    assert back.squads[0].leader is back.squads[0].members[0]


def test_load_error_names_the_file(tmp_path):
    path = tmp_path / "broken.sav"
    path.write_bytes(b"\x89ASV\x01\x93")
    with pytest.raises(autosave.FormatError) as e:
        autosave.load(path)
    assert str(path) in "".join(e.value.__notes__)


# -- a save that would not load is refused when it is made ------------------------------

def _deque_chain(n):
    import collections
    d = collections.deque()
    for _ in range(n - 1):
        d = collections.deque([d])
    return d


def _tuple_chain(n):
    t = ()
    for _ in range(n - 1):
        t = (t,)
    return t


def test_a_chain_the_loader_would_refuse_is_refused_at_save_time_with_its_path():
    from autosave.checks.limits import C_DEPTH
    ok = {"a": _deque_chain(C_DEPTH)}
    assert len(autosave.loads(autosave.dumps(ok))["a"]) == 1
    with pytest.raises(autosave.SaveError) as caught:
        autosave.dumps([1, {"a": _deque_chain(C_DEPTH + 150)}])
    error = caught.value
    assert "would save but not load" in str(error) and "collections.deque" in str(error)
    assert error.path.startswith("root[1]['a'][0]")
    assert len(str(error)) < 600          # a path thousands of steps long, elided


def test_a_key_the_loader_could_not_hash_is_refused_at_save_time():
    from autosave.checks.limits import C_DEPTH
    assert autosave.loads(autosave.dumps({_tuple_chain(C_DEPTH): 1}))
    with pytest.raises(autosave.SaveError) as caught:
        autosave.dumps({"k": {_tuple_chain(C_DEPTH + 2): 1}})
    assert "would save but not load" in str(caught.value)
    assert caught.value.path.startswith("root['k']<key 0>")


def test_a_chain_closed_into_a_cycle_is_refused_at_save_time_too(monkeypatch):
    """Records on a cycle carry a mark in their type index when they are checked: the
    chain through them is counted all the same, exactly as the loader counts it."""
    import collections
    from autosave.checks.limits import C_DEPTH
    from autosave.saving.saver import Saver
    bottom = collections.deque()
    top = bottom
    for _ in range(C_DEPTH):                 # C_DEPTH + 1 deques, the last one marked
        top = collections.deque([top])
    bottom.append(top)                       # the innermost deque holds the outermost
    with pytest.raises(autosave.SaveError, match="would save but not load"):
        autosave.dumps(top)
    monkeypatch.setattr(Saver, "check_loadable", lambda self, types, records: None)
    unchecked = autosave.dumps(top)
    with pytest.raises(autosave.FormatError, match="chain of"):
        autosave.loads(unchecked)
