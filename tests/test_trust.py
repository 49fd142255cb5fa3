"""Loading a stranger's save is harmless: names resolve only inside allowed namespaces,
nothing outside them is imported, nothing is called."""

import os
import sys

import msgpack
import pytest

import autosave
from autosave.model.registry import REGISTRY
from modtools import fresh_name, load_module, unload

HEADER = b"\x89ASV\x01"


def forged(types, records, root):
    return HEADER + msgpack.packb([types, records, root], use_bin_type=True)


@pytest.fixture
def module():
    made = []

    def make(source, prefix="game"):
        name = fresh_name(prefix)
        made.append(name)
        return load_module(name, "import attrs, autosave\n" + source)

    yield make
    for name in made:
        unload(name)
        REGISTRY.allowed.discard(name)


def test_classes_outside_allowed_namespaces_are_refused_at_save(module):
    lib = module("class Particle:\n    pass\n", prefix="thirdparty")
    with pytest.raises(autosave.SaveError, match=rf"outside the allowed namespaces.*allow\('{lib.__name__}'\)") as e:
        autosave.dumps({"p": lib.Particle()})
    assert e.value.path == "root['p']"


def test_allow_trusts_a_package(module):
    lib = module("class Particle:\n    pass\n", prefix="thirdparty")
    autosave.allow(lib.__name__)
    p = autosave.loads(autosave.dumps(lib.Particle()))
    assert type(p) is lib.Particle


def test_untrusted_type_name_is_refused_without_import():
    assert "antigravity" not in sys.modules
    data = forged([["antigravity.Fly", 1, []]], [[0]], [-1])
    with pytest.raises(autosave.UntrustedTypeError, match="antigravity.Fly.*nothing was imported"):
        autosave.loads(data)
    assert "antigravity" not in sys.modules


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "builtins.exec", "builtins.open",
                                  "builtins.__import__", "subprocess.Popen", "posix.system",
                                  "builtins.getattr", "importlib.import_module"])
def test_dangerous_callables_cannot_be_named(name):
    data = forged([["autosave.global", 1, []]], [[0, name]], [-1])
    with pytest.raises(autosave.UntrustedTypeError, match=name.replace(".", r"\.")):
        autosave.loads(data)


def test_reduce_record_cannot_call_outside_allowed_namespaces():
    # A forged "call os.system('echo hacked')" in the reduce form.
    types = [["autosave.global", 1, []], ["builtins.tuple", 1, []], ["autosave.reduce", 1, []]]
    records = [[0, "os.system"], [1, "echo hacked"], [2, [-2], False, [-1], None, [], []]]
    with pytest.raises(autosave.UntrustedTypeError):
        autosave.loads(forged(types, records, [-1]))


def test_safe_stdlib_functions_round_trip():
    import math
    import operator
    value = {"key": operator.itemgetter, "f": math.floor, "sorted": sorted, "max": max}
    back = autosave.loads(autosave.dumps(value))
    assert back == value


def test_dangerous_stdlib_function_is_refused_at_save():
    with pytest.raises(autosave.SaveError, match=r"(os|posix).system.*outside the allowed namespaces"):
        autosave.dumps({"callback": os.system})


def test_trust_is_decided_at_load_not_by_the_file(module):
    game = module("@autosave.save_root\nclass World:\n    pass\n")
    data = autosave.dumps(game.World())
    # A fresh process that never heard of this game refuses the class.
    REGISTRY.allowed.discard(game.__name__)
    REGISTRY.by_name.pop(f"{game.__name__}.World")
    with pytest.raises(autosave.UntrustedTypeError, match=rf"{game.__name__}\.World"):
        autosave.loads(data)


def test_a_load_imports_nothing_even_from_allowed_packages(tmp_path, monkeypatch):
    pkg = fresh_name("lazy")
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "units.py").write_text(
        "import attrs\n@attrs.define\nclass Unit:\n    hp: int\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    autosave.allow(pkg)
    try:
        import importlib
        units = importlib.import_module(f"{pkg}.units")
        data = autosave.dumps(units.Unit(3))
        for name in [f"{pkg}.units", pkg]:
            del sys.modules[name]
        with pytest.raises(autosave.IncompatibleSaveError, match="not imported"):
            autosave.loads(data)
        assert f"{pkg}.units" not in sys.modules and pkg not in sys.modules
        importlib.import_module(f"{pkg}.units")     # the game imports its own modules
        assert autosave.loads(data).hp == 3
    finally:
        REGISTRY.allowed.discard(pkg)
        for name in [f"{pkg}.units", pkg]:
            sys.modules.pop(name, None)


def test_similar_prefix_is_not_allowed(module):
    game = module("@autosave.save_root\nclass World:\n    pass\n")
    data = forged([[f"{game.__name__}x.World", 1, []]], [[0]], [-1])
    with pytest.raises(autosave.UntrustedTypeError):
        autosave.loads(data)


def test_missing_asset_is_named():
    class Sprite:
        pass
    sprite = autosave.asset(Sprite(), "sprites/test-missing")
    data = autosave.dumps([sprite])
    del REGISTRY.asset_by_id["sprites/test-missing"]
    del REGISTRY.asset_id_of[id(sprite)]
    with pytest.raises(autosave.IncompatibleSaveError, match="asset 'sprites/test-missing'"):
        autosave.loads(data)
