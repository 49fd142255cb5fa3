"""What a type entry decides is kept across loads and saves (``loading.plans.plan_for``),
and never used once anything it was decided from changed: the allow list, the
registry's names, versions and upgrade hooks, the class itself, what its name resolves
to, and the generated-code switch. Each test loads the same bytes twice, with a change
in between, and checks that the second load sees the change."""

import pytest

import autosave
from autosave.errors import IncompatibleSaveError, UntrustedTypeError
from autosave.loading import plans
from autosave.model.generated import GENERATED
from autosave.model.registry import REGISTRY
from modtools import fresh_name, load_module, unload


@pytest.fixture
def game():
    names = []

    def make(source, name=None):
        name = name or fresh_name("cache")
        names.append(name)
        return load_module(name, "import autosave\n" + source)

    yield make
    for name in names:
        REGISTRY.allowed.discard(name)
        unload(name)


PLAIN = """
class Crate:
    def __init__(self, n):
        self.n = n
"""


def test_a_namespace_disallowed_after_a_load_is_refused_on_the_next(game):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps([mod.Crate(1), mod.Crate(2)])
    assert [c.n for c in autosave.loads(data)] == [1, 2]
    REGISTRY.allowed.discard(mod.__name__)          # directly, as a test or a tool may
    with pytest.raises(UntrustedTypeError):
        autosave.loads(data)
    autosave.allow(mod.__name__)
    assert [c.n for c in autosave.loads(data)] == [1, 2]


def test_an_allow_list_replaced_whole_is_seen(game, monkeypatch):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps(mod.Crate(3))
    assert autosave.loads(data).n == 3
    monkeypatch.setattr(REGISTRY, "allowed", {"something_else"})
    with pytest.raises(UntrustedTypeError):
        autosave.loads(data)


def test_a_class_registered_again_with_a_new_version_and_hook_is_used(game):
    name = fresh_name("cache")
    v1 = game("""
@autosave.saveable(name=__name__ + ".Shop", version=1)
@autosave.save_root
class Shop:
    def __init__(self, stock):
        self.stock = stock
""", name)
    data = autosave.dumps(v1.Shop(5))
    assert autosave.loads(data).stock == 5
    v2 = game("""
@autosave.saveable(name=__name__ + ".Shop", version=2)
@autosave.save_root
class Shop:
    def __init__(self, goods):
        self.goods = goods

@autosave.upgrade(__name__ + ".Shop", from_version=1)
def _(fields):
    return {"goods": fields.pop("stock") * 10}
""", name)
    loaded = autosave.loads(data)
    assert type(loaded) is v2.Shop and loaded.goods == 50


def test_the_same_class_given_a_new_version_and_a_hook_later(game):
    mod = game("""
@autosave.saveable(name=__name__ + ".Inn", version=1)
class Inn:
    def __init__(self, beds):
        self.beds = beds
""")
    data = autosave.dumps(mod.Inn(4))
    assert autosave.loads(data).beds == 4
    inn = f"{mod.__name__}.Inn"
    autosave.saveable(mod.Inn, name=inn, version=2)   # the class itself
    with pytest.raises(IncompatibleSaveError, match="from_version=1"):
        autosave.loads(data)                  # version 2 now: needs a hook
    autosave.upgrade(inn, from_version=1)(
        lambda fields: {"beds": fields["beds"] + 1})
    assert autosave.loads(data).beds == 5


def test_a_loaded_hook_added_to_the_class_after_a_load_runs(game):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps([mod.Crate(1)])
    autosave.loads(data)
    seen = []
    mod.Crate.__autosave_loaded__ = lambda self: seen.append(self.n)
    autosave.loads(data)
    assert seen == [1]


def test_a_name_bound_to_another_class_after_a_load_resolves_to_it(game):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps(mod.Crate(7))
    assert type(autosave.loads(data)) is mod.Crate
    old = mod.Crate
    exec(PLAIN, mod.__dict__)                 # the module's code run again: a new class
    assert mod.Crate is not old
    assert type(autosave.loads(data)) is mod.Crate
    del mod.Crate                             # gone: refused, as without the cache
    with pytest.raises(IncompatibleSaveError):
        autosave.loads(data)


def test_a_slot_replaced_after_a_load_is_set_through_its_replacement(game):
    mod = game("""
class Gem:
    __slots__ = ("cut",)
    def __init__(self, cut):
        self.cut = cut
""")
    autosave.allow(mod.__name__)
    data = autosave.dumps([mod.Gem(3), mod.Gem(4)])
    assert [g.cut for g in autosave.loads(data)] == [3, 4]
    member = mod.Gem.cut
    written = []
    mod.Gem.cut = property(member.__get__,
                           lambda self, v: (written.append(v), member.__set__(self, v)))
    assert [g.cut for g in autosave.loads(data)] == [3, 4]
    assert written == [3, 4]


def test_the_generated_code_switch_is_read_at_each_load(game, monkeypatch):
    mod = game("""
class Slot:
    def __init__(self, v):
        self.v = v
    def __hash__(self):
        return 0
""")
    autosave.allow(mod.__name__)
    data = autosave.dumps(mod.Slot([1]))      # a record (hashed by value, refers to a list)
    used = []

    def factory(fields, plain, objs):
        def create(rec, vals):
            used.append(vals[1])
            obj = object.__new__(mod.Slot)
            obj.v = vals[1]
            return obj
        return create, None, None

    monkeypatch.setitem(GENERATED.load, mod.Slot, factory)
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "1")
    assert autosave.loads(data).v == [1]
    assert used == [[1]]
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "0")
    assert autosave.loads(data).v == [1]
    assert used == [[1]]                      # off: reflection
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "1")
    autosave.loads(data)
    assert used == [[1], [1]]


def test_unset_slots_are_counted_per_load(game):
    mod = game("""
class Lamp:
    __slots__ = ("lit", "oil")
    def __init__(self):
        self.lit = True
""")
    autosave.allow(mod.__name__)
    data = autosave.dumps([mod.Lamp(), mod.Lamp()])
    for _ in range(3):                        # each load consumes the file's markers
        lamps = autosave.loads(data)
        assert all(lamp.lit and not hasattr(lamp, "oil") for lamp in lamps)


def test_plans_are_each_load_s_own(game):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    entry = [f"{mod.__name__}.Crate", 1, ["n"]]
    first, second = plans.plan_for(0, entry), plans.plan_for(0, list(entry))
    assert first is not second and first.cls is second.cls is mod.Crate
    plans.release_plans([first])              # one load's release leaves the other whole
    assert second.fill.__self__ is second
    assert plans.plan_for(0, entry).fields == ["n"]


def test_the_cache_stays_bounded(game, monkeypatch):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    monkeypatch.setattr(plans, "_CACHE_MAX", 8)
    for i in range(50):                       # a stream of files with odd field lists
        plans.plan_for(0, [f"{mod.__name__}.Crate", 1, [f"f{i}"]])
    assert len(plans._CACHE) <= 8


def test_a_save_s_check_sees_a_disallowed_namespace(game):
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    autosave.dumps(mod.Crate(1))              # its check that it would load: cached
    REGISTRY.allowed.discard(mod.__name__)
    with pytest.raises(autosave.SaveError):
        autosave.dumps(mod.Crate(1))


def test_a_plan_decided_while_the_registry_changed_is_not_kept(game, monkeypatch):
    """As when another thread allows a namespace and loads while this one decides: the
    plan decided meanwhile was decided under the old registry, and is decided again."""
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    entry = [f"{mod.__name__}.Crate", 1, ["n"]]
    decide, decided = plans.decide_plan, []

    def changing(*args):
        decided.append(args[1])
        if len(decided) == 1:
            autosave.allow(fresh_name("elsewhere"))
            plans.plan_for(0, ["builtins.list", 1, []])   # another load, in between
        return decide(*args)

    monkeypatch.setattr(plans, "decide_plan", changing)
    plans.plan_for(0, entry)
    plans.plan_for(0, entry)
    assert decided.count(entry[0]) == 2
    plans.plan_for(0, entry)                  # and kept from then on
    assert decided.count(entry[0]) == 2


def test_a_module_replaced_in_sys_modules_after_a_load_is_seen(game):
    """A kept plan asks sys.modules for the module its name was found in again: the
    same module object, holding the same class, or the name is resolved in full."""
    import sys
    import types
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps(mod.Crate(7))
    assert type(autosave.loads(data)) is mod.Crate
    stand_in = types.ModuleType(mod.__name__)
    sys.modules[mod.__name__] = stand_in            # no Crate in it
    try:
        with pytest.raises(IncompatibleSaveError):
            autosave.loads(data)
        stand_in.Crate = mod.Crate                  # the same class, by another module
        assert type(autosave.loads(data)) is mod.Crate
    finally:
        sys.modules[mod.__name__] = mod


def test_a_class_moved_out_of_the_allowed_namespaces_after_a_load_is_refused(game):
    """The class's home module is read again: a class whose ``__module__`` now names a
    namespace that is not allowed is refused, as without the cache."""
    mod = game(PLAIN)
    autosave.allow(mod.__name__)
    data = autosave.dumps(mod.Crate(7))
    assert type(autosave.loads(data)) is mod.Crate
    mod.Crate.__module__ = "os"
    try:
        with pytest.raises(UntrustedTypeError):
            autosave.loads(data)
    finally:
        mod.Crate.__module__ = mod.__name__
    assert type(autosave.loads(data)) is mod.Crate
