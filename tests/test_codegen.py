"""autosave-codegen: generated code gives the reflective path's bytes, and the build
tool keeps it honest (staleness, fingerprints, errors with file:line)."""

import json
import os
import re
import pathlib
import subprocess
import sys
import textwrap
import types

import pytest
from hypothesis import given, settings

import autosave
import autosave_codegen as codegen
from autosave.saving.saver import Saver
from autosave.format.wire import encode
from autosave.model.generated import GENERATED

from autosave_codegen.collect import collect
from autosave_codegen.emit import generate

import test_graph_properties as graphs_under_test
from helpers import assert_isomorphic

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES, BENCHMARKS = ROOT / "examples", ROOT / "benchmarks"
for path in (EXAMPLES, BENCHMARKS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import game          # noqa: E402  (the demo's package, with committed generated code)
import worldsim      # noqa: E402  (the benchmark world, likewise)
import graphs as bench_graphs  # noqa: E402


def direct_bytes(root):
    return encode(*Saver().run(root))


def reflective_bytes(root):
    return encode(*Saver(generated=False).run(root))


# -- the committed generated code is current and in use -------------------------------------

@pytest.mark.parametrize("package, where", [("game", EXAMPLES), ("worldsim", BENCHMARKS)])
def test_committed_generated_code_is_current(package, where):
    for path, text in codegen.outputs([package], None).items():
        assert path.parent == where / package
        if text is None:                 # no coroutines: no state-machine module
            assert not path.exists()
            continue
        assert path.read_text(encoding="utf-8") == text, \
            f"{path} is stale: run autosave-codegen {package} in {where.name}/"


def test_output_is_deterministic_and_names_how_to_regenerate():
    first, second = codegen.outputs(["game"], None), codegen.outputs(["game"], None)
    assert first == second
    module = next(text for path, text in first.items() if path.name == "_autosave_generated.py")
    assert "autosave-codegen game" in module and "autosave-codegen --check game" in module
    assert "/work" not in module and str(ROOT) not in module      # no machine paths


def test_annotations_lead_to_every_class_the_level_saves():
    own, external = collect(["game"])
    names = {c.__qualname__ for c in own}
    # Level is the root; list[NPC], "Squad | None", dict[int, NPC] reach the rest.
    assert {"Level", "NPC", "Squad", "Brain", "Position", "Health", "Mode", "Sprite",
            "ItemTemplate"} <= names
    assert {f"{c.__module__}.{c.__qualname__}" for c in external} >= {
        "random.Random", "collections.deque"}


def test_manifest_describes_fields_types_defaults_and_fingerprints():
    files = codegen.outputs(["game"], None)
    manifest = json.loads(next(t for p, t in files.items() if p.suffix == ".json"))
    assert "coroutines" not in manifest      # the demo has none
    assert manifest["autosave_manifest"] == 4
    npc = manifest["classes"]["game.model.NPC"]
    fields = {f["name"]: f for f in npc["fields"]}
    assert fields["bag"]["type"] == "list[game.model.ItemTemplate]"
    assert fields["bag"]["default"] == {"factory": "list"}
    assert fields["squad"]["type"] == "game.model.Squad | None"
    assert fields["kills"]["default"] == {"value": 0}
    assert npc["generated"] is None      # hashed by identity: in batches, no code needed
    assert npc["fingerprint"] == autosave.model.schema.schema_of(game.NPC).fingerprint
    level = manifest["classes"]["game.model.Level"]
    assert level["root"] is True
    assert {f["name"]: f["transient"] for f in level["fields"]}["last_step_seconds"] is True
    assert manifest["classes"]["game.model.Mode"]["generated"] is None
    # One decision per class: the manifest says what the schema decided, and code is
    # generated exactly for the layouts that get it.
    for name, entry in manifest["classes"].items():
        schema = autosave.model.schema.schema_of(autosave.model.registry.REGISTRY.resolve(name, "class"))
        assert entry["layout"] == schema.layout, name
        assert entry["generated"] == (schema.layout if schema.why_not_generated is None
                                      else None), name


@pytest.mark.parametrize("make", [lambda: game.build_level(seed=3, n_npcs=40),
                                  lambda: bench_graphs.level_graph(2000),
                                  lambda: bench_graphs.world_graph(3000)])
def test_generated_and_reflective_paths_give_identical_bytes_and_graphs(make, monkeypatch):
    root = make()
    GENERATED.activate()
    # Plain classes hashed by identity are saved in batches, by columns the engine
    # reads itself: codegen writes nothing for them, and both paths are one.
    for cls in (game.NPC, game.Position, game.Squad, worldsim.Unit, worldsim.Item):
        assert GENERATED.save.get(cls) is None, f"generated code for {cls.__qualname__}"
    data = direct_bytes(root)
    assert data == reflective_bytes(root)
    generated_copy = autosave.loads(data)
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "0")
    reflective_copy = autosave.loads(data)
    bench_graphs.same_graph(root, generated_copy)
    bench_graphs.same_graph(root, reflective_copy)
    assert reflective_bytes(generated_copy) == data
    monkeypatch.delenv("AUTOSAVE_CODEGEN")
    assert direct_bytes(generated_copy) == data


@pytest.mark.slow
@pytest.mark.parametrize("codegen", ["1", "0"])
@pytest.mark.parametrize("make", [lambda: game.build_level(seed=3, n_npcs=40),
                                  lambda: bench_graphs.world_graph(3000)])
def test_nothing_of_generated_or_reflective_save_and_load_outlives_the_call(
        make, codegen, monkeypatch):
    root = make()
    monkeypatch.setenv("AUTOSAVE_CODEGEN", codegen)
    left, data = graphs_under_test.garbage_left_by(lambda: autosave.dumps(root))
    assert left == 0, f"dumps left {left} objects in reference cycles"
    left, copy = graphs_under_test.garbage_left_by(lambda: autosave.loads(data))
    assert left == 0, f"loads left {left} objects in reference cycles"
    bench_graphs.same_graph(root, copy)


@pytest.mark.parametrize("codegen", ["1", "0"])
def test_copy_of_the_demo_and_the_world_is_what_a_save_and_a_load_give(codegen, monkeypatch):
    monkeypatch.setenv("AUTOSAVE_CODEGEN", codegen)
    for root in (game.build_level(seed=5, n_npcs=30), bench_graphs.world_graph(2000)):
        copied = autosave.copy(root)
        bench_graphs.same_graph(root, copied)
        assert autosave.dumps(copied) == autosave.dumps(root)


def test_an_unset_slot_takes_the_reflective_path_through_generated_code():
    level = game.build_level(seed=4, n_npcs=5)
    del level.npcs[2].pos                      # attrs slots may be unset
    data = direct_bytes(level)
    assert data == reflective_bytes(level)
    loaded = autosave.loads(data)
    assert not hasattr(loaded.npcs[2], "pos")
    assert loaded.npcs[3].pos == level.npcs[3].pos


# -- generated code for the property tests' classes -----------------------------------------

def _generate_in_memory(module, classes):
    """Generated code for ``classes`` of ``module``, imported as a module of its own."""
    name = f"{module.__name__}_autosave_generated"
    source = generate([module.__name__], classes, module.__name__)
    generated = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), generated.__dict__)
    return generated, source


PROPERTY_CLASSES = [graphs_under_test.SlotNode, graphs_under_test.DictNode,
                    graphs_under_test.FrozenKey, graphs_under_test.DataKey]
_, PROPERTY_SOURCE = _generate_in_memory(graphs_under_test, PROPERTY_CLASSES)


def test_property_classes_get_generated_code_when_hashed_by_value():
    # frozen classes set their slots through object.__setattr__
    assert "def save_FrozenKey" in PROPERTY_SOURCE and "set_slot(obj, 'x'" in PROPERTY_SOURCE
    for cls in (graphs_under_test.FrozenKey, graphs_under_test.DataKey):
        assert GENERATED.save.get(cls) is not None
    # hashed by identity: in batches, a column per field, with no code
    for cls in (graphs_under_test.SlotNode, graphs_under_test.DictNode):
        assert GENERATED.save.get(cls) is None
        assert "in batches" in autosave.model.schema.schema_of(cls).why_not_generated


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(
    graphs_under_test.SETTINGS["suppress_health_check"]))
@given(graphs_under_test.graph_specs(max_nodes=14))
def test_random_graphs_give_identical_bytes_through_generated_code(spec):
    graph = graphs_under_test.build(spec)
    expected = reflective_bytes(graph)
    assert direct_bytes(graph) == expected
    assert autosave.dumps(graph) == expected
    loaded = autosave.loads(expected)          # through the generated create functions
    assert_isomorphic(graph, loaded)
    assert direct_bytes(loaded) == expected


# -- staleness, strictness, the switch, errors: a package on disk, in fresh processes ---------

# Hashed by value, so saved as records, by its generated handler (a plain Hero, hashed
# by identity, would be saved in a batch, by columns the engine reads itself).
V1 = '''
import attrs
import autosave

@autosave.save_root
@attrs.define(eq=False)
class Hero:
    name: str
    hp: int
    friends: "list[Hero]" = attrs.Factory(list)

    def __hash__(self):
        return hash(self.name)
'''
V2 = V1 + "    gold: int = 0\n"   # a field added after generation

PROBE = '''
import sys, warnings, autosave
warnings.simplefilter("always")
import {pkg}.model as m
a = m.Hero("a", 3); b = m.Hero("b", 4, [a]); a.friends.append(b)
data = autosave.dumps(a)
again = autosave.loads(data)
assert again.friends[0].friends[0] is again and again.friends[0].hp == 4
print("generated module imported:", "{pkg}._autosave_generated" in sys.modules)
print("len", len(data))
'''


def make_package(tmp_path, source):
    pkg = f"heroes_{os.getpid()}_{abs(hash(str(tmp_path))) % 10 ** 8}"
    root = tmp_path / pkg
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    (root / "model.py").write_text(textwrap.dedent(source))
    return pkg


def run(tmp_path, args, env=None, code=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOSAVE_")}
    full_env.update(PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]), **(env or {}))
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "autosave_codegen", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=full_env,
                          timeout=120)


@pytest.mark.slow
def test_generate_check_and_stale_fallback(tmp_path):
    pkg = make_package(tmp_path, V1)
    made = run(tmp_path, [pkg])
    assert made.returncode == 0, made.stderr
    generated = tmp_path / pkg / "_autosave_generated.py"
    assert generated.exists() and (tmp_path / pkg / "autosave_manifest.json").exists()
    assert run(tmp_path, ["--check", pkg]).returncode == 0

    fresh = run(tmp_path, [], code=PROBE.format(pkg=pkg))
    assert fresh.returncode == 0, fresh.stderr
    assert "generated module imported: True" in fresh.stdout
    assert "Stale" not in fresh.stderr

    (tmp_path / pkg / "model.py").write_text(textwrap.dedent(V2))
    checked = run(tmp_path, ["--check", pkg])
    assert checked.returncode == 1
    assert "_autosave_generated.py is stale" in checked.stderr and f"autosave-codegen {pkg}" in checked.stderr

    stale = run(tmp_path, [], code=PROBE.format(pkg=pkg))
    assert stale.returncode == 0, stale.stderr
    assert stale.stderr.count("StaleGeneratedCodeWarning") == 1
    assert f"{pkg}.model.Hero" in stale.stderr and "saving it by reflection" in stale.stderr
    # attributed to the game's line that saved (here the -c program), not to importlib
    assert re.search(r"^<string>:\d+: StaleGeneratedCodeWarning", stale.stderr, re.M), stale.stderr

    strict = run(tmp_path, [], env={"AUTOSAVE_STRICT": "1"}, code=PROBE.format(pkg=pkg))
    assert strict.returncode != 0
    assert "StaleGeneratedCodeError" in strict.stderr and f"autosave-codegen {pkg}" in strict.stderr
    twice = run(tmp_path, [], env={"AUTOSAVE_STRICT": "1"}, code=textwrap.dedent(f"""
        import autosave
        import {pkg}.model as m
        for attempt in range(2):
            try:
                autosave.dumps(m.Hero("a", 1))
            except autosave.StaleGeneratedCodeError:
                print("refused", attempt)
        """))
    assert "refused 0" in twice.stdout and "refused 1" in twice.stdout, twice.stderr

    off = run(tmp_path, [], env={"AUTOSAVE_CODEGEN": "0", "AUTOSAVE_STRICT": "1"},
              code=PROBE.format(pkg=pkg))
    assert off.returncode == 0, off.stderr
    assert "generated module imported: False" in off.stdout

    assert run(tmp_path, [pkg]).returncode == 0          # regenerated: current again
    assert run(tmp_path, ["--check", pkg]).returncode == 0
    current = run(tmp_path, [], env={"AUTOSAVE_STRICT": "1"}, code=PROBE.format(pkg=pkg))
    assert current.returncode == 0, current.stderr


def test_a_generated_module_that_no_longer_imports_is_stale(tmp_path):
    pkg = make_package(tmp_path, V1)
    assert run(tmp_path, [pkg]).returncode == 0
    renamed = V1.replace("class Hero:", "class Champion:").replace('"list[Hero]"', '"list[Champion]"')
    (tmp_path / pkg / "model.py").write_text(textwrap.dedent(renamed))
    probe = PROBE.format(pkg=pkg).replace("m.Hero(", "m.Champion(")
    warned = run(tmp_path, [], code=probe)
    assert warned.returncode == 0, warned.stderr
    assert "StaleGeneratedCodeWarning" in warned.stderr and "cannot be imported" in warned.stderr
    assert re.search(r"^<string>:\d+: StaleGeneratedCodeWarning", warned.stderr, re.M), warned.stderr
    strict = run(tmp_path, [], env={"AUTOSAVE_STRICT": "1"}, code=probe)
    assert strict.returncode != 0 and "StaleGeneratedCodeError" in strict.stderr


@pytest.mark.slow
@pytest.mark.parametrize("body, expect", [
    ('''
     @autosave.save_root
     @attrs.define
     class Link:
         buffer: "Buffer"
     import io
     class Buffer(io.BytesIO):      # bytearray subclasses are saved through __reduce_ex__
         pass
     ''', "wraps a C object"),
    ('''
     @autosave.save_root
     @attrs.define
     class Link:
         other: "Missing"
     ''', "cannot be resolved"),
])
def test_a_class_it_cannot_handle_is_reported_with_file_and_line(tmp_path, body, expect):
    pkg = make_package(tmp_path, "import attrs\nimport autosave\n" + textwrap.dedent(body))
    made = run(tmp_path, [pkg])
    assert made.returncode == 1
    assert expect in made.stderr
    assert f"{pkg}/model.py:" in made.stderr          # file:line of the class
    assert not (tmp_path / pkg / "_autosave_generated.py").exists()   # nothing half-written
    assert not (tmp_path / pkg / "autosave_manifest.json").exists()


@pytest.mark.slow
def test_a_plain_module_needs_out(tmp_path):
    (tmp_path / "single_module_game.py").write_text("import autosave\n")
    made = run(tmp_path, ["single_module_game"])
    assert made.returncode == 1 and "--out" in made.stderr
    out = run(tmp_path, ["single_module_game", "--out", str(tmp_path / "gen")])
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "gen" / "_autosave_generated.py").exists()


@pytest.mark.slow
def test_compiled_generated_module_gives_the_same_bytes(tmp_path):
    pytest.importorskip("Cython")
    pkg = make_package(tmp_path, V1)
    made = run(tmp_path, ["--compile", pkg])
    assert made.returncode == 0, made.stderr
    assert "compiled" in made.stdout
    code = PROBE.format(pkg=pkg) + textwrap.dedent(f'''
        import {pkg}._autosave_generated as g
        print("compiled:", not g.__file__.endswith(".py"))
        from autosave.saving.saver import Saver
        from autosave.format.wire import encode
        assert data == encode(*Saver(generated=False).run(a))
        ''')
    probe = run(tmp_path, [], code=code)
    assert probe.returncode == 0, probe.stderr
    assert "compiled: True" in probe.stdout
    # regenerating without --compile removes the build, which would shadow the source
    assert run(tmp_path, [pkg]).returncode == 0
    probe = run(tmp_path, [], code=code)
    assert "compiled: False" in probe.stdout, probe.stderr


# -- coroutine state machines ahead of time ------------------------------------------------

PATROL_V1 = '''
import autosave

@autosave.save_root
class Guard:
    def __init__(self):
        self.steps = 0
        self.brain = None

@autosave.coroutine
def patrol(guard, points):
    for p in points:
        guard.steps += 1
        got = yield p
        if got == "rest":
            yield "resting"
    return guard.steps
'''
# An edit that touches the resume points a little: a statement added, one yield's text
# changed. The manifest of the last build keeps their labels.
PATROL_V2 = PATROL_V1.replace('        guard.steps += 1\n',
                              '        guard.steps += 1\n        guard.steps += 0\n').replace(
    'yield "resting"', 'yield "resting!"')

SAVE_PATROL = '''
import sys, autosave
import {pkg}.model as m
g = m.Guard(); g.brain = m.patrol(g, ["a", "b", "c"])
print(next(g.brain), g.brain.send("rest"))
data = autosave.dumps(g)
assert autosave.dumps(g) == data
open(sys.argv[1] if len(sys.argv) > 1 else "save.bin", "wb").write(data)
print("precompiled:", "{pkg}._autosave_coroutines" in sys.modules)
print(data.hex())
'''
LOAD_PATROL = '''
import autosave
import {pkg}.model
g = autosave.loads(open("save.bin", "rb").read())
print([next(g.brain), next(g.brain)])
try:
    next(g.brain)
except StopIteration as e:
    print("returned", e.value)
'''


@pytest.mark.slow
def test_coroutines_are_generated_ahead_of_time_and_run_without_source(tmp_path):
    pkg = make_package(tmp_path, PATROL_V1)
    made = run(tmp_path, [pkg])
    assert made.returncode == 0, made.stderr
    machines = tmp_path / pkg / "_autosave_coroutines.py"
    assert machines.exists() and f"# -- {pkg}.model.patrol" in machines.read_text()
    manifest = json.loads((tmp_path / pkg / "autosave_manifest.json").read_text())
    assert f"{pkg}.model.patrol" in manifest["coroutines"]
    assert run(tmp_path, ["--check", pkg]).returncode == 0

    transformed = run(tmp_path, [], env={"AUTOSAVE_CODEGEN": "0"}, code=SAVE_PATROL.format(pkg=pkg))
    assert transformed.returncode == 0, transformed.stderr
    assert "precompiled: False" in transformed.stdout

    # A shipped build: bytecode only, so the decorator cannot read the source.
    import py_compile
    source = tmp_path / pkg / "model.py"
    py_compile.compile(str(source), cfile=str(tmp_path / pkg / "model.pyc"), doraise=True)
    source.unlink()
    shipped = run(tmp_path, [], code=SAVE_PATROL.format(pkg=pkg))
    assert shipped.returncode == 0, shipped.stderr
    assert "precompiled: True" in shipped.stdout
    # same saved bytes either way
    assert shipped.stdout.split()[-1] == transformed.stdout.split()[-1]
    loaded = run(tmp_path, [], code=LOAD_PATROL.format(pkg=pkg))
    assert loaded.returncode == 0, loaded.stderr
    assert "['b', 'c']" in loaded.stdout and "returned 3" in loaded.stdout


@pytest.mark.slow
def test_manifest_labels_keep_an_old_save_loading_after_an_edit(tmp_path):
    pkg = make_package(tmp_path, PATROL_V1)
    assert run(tmp_path, [pkg]).returncode == 0
    saved = run(tmp_path, [], code=SAVE_PATROL.format(pkg=pkg))    # parked at "resting"
    assert saved.returncode == 0, saved.stderr
    (tmp_path / pkg / "model.py").write_text(textwrap.dedent(PATROL_V2))

    kept = run(tmp_path, [], code=LOAD_PATROL.format(pkg=pkg))
    assert kept.returncode == 0, kept.stderr
    assert "['b', 'c']" in kept.stdout

    (tmp_path / pkg / "autosave_manifest.json").unlink()             # labels forgotten
    (tmp_path / pkg / "_autosave_coroutines.py").unlink()
    lost = run(tmp_path, [], code=LOAD_PATROL.format(pkg=pkg))
    assert lost.returncode != 0
    assert "IncompatibleSaveError" in lost.stderr and "patrol" in lost.stderr

    # regenerating after the edit keeps the old labels in the new manifest
    (tmp_path / pkg / "model.py").write_text(textwrap.dedent(PATROL_V1))
    assert run(tmp_path, [pkg]).returncode == 0
    v1_labels = json.loads((tmp_path / pkg / "autosave_manifest.json").read_text())["coroutines"]
    (tmp_path / pkg / "model.py").write_text(textwrap.dedent(PATROL_V2))
    assert run(tmp_path, [pkg]).returncode == 0
    v2_labels = json.loads((tmp_path / pkg / "autosave_manifest.json").read_text())["coroutines"]
    assert set(v1_labels[f"{pkg}.model.patrol"]["labels"]) == set(v2_labels[f"{pkg}.model.patrol"]["labels"])


@pytest.mark.slow
@pytest.mark.parametrize("change, why", [
    (("_require_abi(4,", "_require_abi(3,"), "for interface version 3"),   # the last one
    (("uses=('type_index',", "uses=('memo', 'type_index',"), "does not offer (memo)"),
])
def test_generated_code_of_another_interface_is_refused_loudly(tmp_path, change, why):
    """A module written for another interface never runs: a warning and reflection, or
    under AUTOSAVE_STRICT=1 an error; the save is right either way."""
    pkg = make_package(tmp_path, V1)
    assert run(tmp_path, [pkg]).returncode == 0
    generated = tmp_path / pkg / "_autosave_generated.py"
    text = generated.read_text()
    assert change[0] in text
    generated.write_text(text.replace(*change))
    done = run(tmp_path, [], code=PROBE.format(pkg=pkg))
    assert done.returncode == 0, done.stderr
    assert "StaleGeneratedCodeWarning" in done.stderr and why in done.stderr
    assert "generated module imported: False" in done.stdout
    strict = run(tmp_path, [], env={"AUTOSAVE_STRICT": "1"}, code=PROBE.format(pkg=pkg))
    assert strict.returncode != 0
    assert "StaleGeneratedCodeError" in strict.stderr and why in strict.stderr


@pytest.mark.slow
def test_generated_code_reaching_past_the_context_fails_the_save_loudly(tmp_path):
    """The context offers its operations and nothing else: code reaching for the
    engine's state (as generated code once did) is a SaveError with the object path,
    never a silently skipped call, whatever AUTOSAVE_STRICT says."""
    pkg = make_package(tmp_path, V1)
    assert run(tmp_path, [pkg]).returncode == 0
    generated = tmp_path / pkg / "_autosave_generated.py"
    text = generated.read_text()
    assert "lookup, mention = ctx.lookup, ctx.mention" in text
    generated.write_text(text.replace("lookup, mention = ctx.lookup, ctx.mention",
                                      "lookup, mention = ctx.memo.get, ctx.mention"))
    done = run(tmp_path, [], code=PROBE.format(pkg=pkg))
    assert done.returncode != 0
    assert "SaveError" in done.stderr and "'SaveContext' object has no attribute 'memo'" in done.stderr
    assert "root" in done.stderr


def test_the_save_context_offers_exactly_the_documented_operations():
    from autosave.model.generated import SAVE_OPERATIONS
    from autosave.saving.saver import Saver, SaveContext
    context = SaveContext(Saver())
    assert SaveContext.__slots__ == SAVE_OPERATIONS
    assert all(callable(getattr(context, op)) for op in SAVE_OPERATIONS)
    assert not hasattr(context, "__dict__")
    docs = (ROOT / "docs" / "codegen.md").read_text()
    for op in SAVE_OPERATIONS:
        assert f"`{op}" in docs, f"docs/codegen.md does not describe {op}"
