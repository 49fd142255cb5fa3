"""`autosave compat verify` and `autosave diff` on good, hostile and odd files; the example."""

import json
import subprocess
import sys
from pathlib import Path

import attrs
import msgpack
import pytest

import autosave
from autosave.cli import main
from autosave.compat.diff import diff
from autosave.errors import FormatError
from autosave.format.wire import frame

autosave.allow(__name__)
ROOT = Path(__file__).resolve().parent.parent


@attrs.define(eq=False)
class Npc:
    name: str
    hp: int
    friend: object = None
    tags: dict = attrs.Factory(dict)


@attrs.define(eq=False)
class Node:
    value: int
    next: object = None


def run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def raw(types, records, root):
    return frame(msgpack.packb([types, records, root, []], use_bin_type=True))


# -- verify ------------------------------------------------------------------------------

def test_verify_reports_each_file_and_refuses_untrusted_saves(tmp_path, capsys):
    corpus = tmp_path / "saves"
    (corpus / "1.0").mkdir(parents=True)
    autosave.save(corpus / "1.0" / "good.sav", Npc("a", 3))
    # names os.system: outside the allowed namespaces, so nothing may be imported
    evil = raw([["os.system", 1, []], ["autosave.global", 1, []]],
               [[1, "os.system"]], [-1])
    (corpus / "1.0" / "evil.sav").write_bytes(evil)
    (corpus / "README").write_text("saves of release 1.0")
    status, out, err = run(["compat", "verify", __name__, "--saves", str(corpus)], capsys)
    assert status == 1, err
    lines = {line.split()[-1] if line.startswith("skipped") else line.split()[1]: line
             for line in out.splitlines()[:-1]}
    assert lines[str(corpus / "1.0" / "good.sav")].startswith("ok")
    evil_line = next(line for line in out.splitlines() if "evil.sav" in line)
    assert evil_line.startswith("incompatible") and "UntrustedTypeError" in evil_line
    assert any(line.startswith("skipped") and "README" in line for line in out.splitlines())


def test_verify_a_corrupt_save_is_exit_2_and_named(tmp_path, capsys):
    autosave.save(tmp_path / "good.sav", Npc("a", 3))
    data = (tmp_path / "good.sav").read_bytes()
    (tmp_path / "cut.sav").write_bytes(data[:-3])
    status, out, _ = run(["compat", "verify", __name__, "--saves", str(tmp_path),
                          "--format", "json"], capsys)
    files = {Path(f["path"]).name: f for f in json.loads(out)["files"]}
    assert status == 2
    assert files["cut.sav"]["status"] == "corrupt" and files["cut.sav"]["error"] in ("FormatError", "TruncatedSaveError")
    assert files["good.sav"]["status"] == "ok"


def test_verify_holds_records_to_the_declared_types(tmp_path, capsys):
    """A save whose Npc.hp holds a str loads, but does not match `hp: int`."""
    autosave.save(tmp_path / "good.sav", Npc("a", 3))
    autosave.save(tmp_path / "bad.sav", Npc("a", "three"))
    status, out, _ = run(["compat", "verify", __name__, "--saves", str(tmp_path),
                          "--format", "github"], capsys)
    assert status == 1
    (line,) = out.splitlines()
    assert "bad.sav" in line and "Npc.hp holds a str where int is declared" in line


@pytest.mark.parametrize("saves, message", [
    ("nowhere", "no such save file or directory"), ("empty", "holds no autosave save")])
def test_verify_without_a_corpus_is_exit_2(tmp_path, capsys, saves, message):
    (tmp_path / "empty").mkdir()
    status, _, err = run(["compat", "verify", __name__, "--saves", str(tmp_path / saves)],
                         capsys)
    assert status == 2 and message in err


def test_verify_a_package_that_does_not_import_is_exit_2(tmp_path, capsys):
    autosave.save(tmp_path / "good.sav", Npc("a", 3))
    status, _, err = run(["compat", "verify", "no_such_game_pkg", "--saves", str(tmp_path)],
                         capsys)
    assert status == 2 and "cannot import no_such_game_pkg" in err


# -- diff --------------------------------------------------------------------------------

def save(tmp_path, name, root):
    path = tmp_path / name
    autosave.save(path, root)
    return str(path)


def world(hp_b=7, extra=False):
    a, b = Npc("a", 10), Npc("b", hp_b)
    a.friend, b.friend = b, a                    # a cycle: compared once
    a.tags = {"role": "guard", "level": 2}
    npcs = [a, b] + ([Npc("c", 1)] if extra else [])
    return {"npcs": npcs, "turn": 3}


def test_diff_same_structure_is_exit_0(tmp_path, capsys):
    a, b = save(tmp_path, "a.sav", world()), save(tmp_path, "b.sav", world())
    status, out, _ = run(["diff", a, b], capsys)
    assert status == 0 and "0 changes" in out


def test_diff_names_changes_along_object_paths(tmp_path, capsys):
    before = world()
    after = world(hp_b=4, extra=True)
    after["npcs"][0].tags["level"] = 3
    del after["npcs"][0].tags["role"]
    after["turn"] = 4
    a, b = save(tmp_path, "a.sav", before), save(tmp_path, "b.sav", after)
    status, out, _ = run(["diff", a, b, "--format", "json"], capsys)
    doc = json.loads(out)
    assert status == 1
    changes = {(c["path"], c["kind"]): (c["a"], c["b"]) for c in doc["changes"]}
    assert changes[("root['turn']", "value")] == (3, 4)
    assert changes[("root['npcs'][1].hp", "value")] == (7, 4)
    assert changes[("root['npcs'][0].tags['level']", "value")] == (2, 3)
    assert changes[("root['npcs'][0].tags['role']", "item removed")] == ("guard", None)
    assert ("root['npcs'][2]", "item added") in changes
    counts = {c["name"]: (c["a"], c["b"]) for c in doc["classes"]}
    assert counts[f"{__name__}.Npc"] == (2, 3)
    assert doc["total_changes"] == len(doc["changes"]) and not doc["truncated"]
    status, out, _ = run(["diff", a, b, "--limit", "1"], capsys)
    assert "(first 1)" in out and "records by class" in out


@pytest.mark.slow
def test_diff_walks_a_deep_graph_without_recursion():
    head_a = head_b = None
    for i in range(30000):
        head_a, head_b = Node(i, head_a), Node(i if i else -1, head_b)
    result = diff(autosave.dumps(head_a), autosave.dumps(head_b))
    (change,) = result.changes
    assert change.path.startswith("root.next.next") and "more)…" in change.path
    assert change.path.endswith(".next.value") and (change.a, change.b) == (0, -1)


@pytest.mark.parametrize("body, message", [
    (b"not a save", "not an autosave file"),
    (raw([["x.Y", 1, []]], [[0, [99]]], [-1]), "refers to record 99"),
    (raw([["x.Y", 1, []]], [[0, ["r"]]], [-1]), "malformed reference"),
    (raw([3], [[0]], [-1]), "type entry 0 is malformed"),
    (raw([["x.Y", 1, []]], [[0]], [5]), "refers to record"),
])
def test_diff_refuses_a_malformed_file_naming_it(tmp_path, capsys, body, message):
    good = save(tmp_path, "good.sav", world())
    (tmp_path / "bad.sav").write_bytes(body)
    with pytest.raises(FormatError, match=message):
        diff(Path(good).read_bytes(), body, names=("good.sav", "bad.sav"))
    status, out, err = run(["diff", good, str(tmp_path / "bad.sav")], capsys)
    assert status == 2 and "bad.sav" in err and message in err and out == ""


def test_diff_never_imports_what_a_file_names(tmp_path):
    body = raw([["evil_diff_module_xyz.Thing", 1, ["x"]], ["autosave.global", 1, []]],
               [[1, "evil_diff_module_xyz.boom"], [0, [-1]]], [-1])
    (tmp_path / "a.sav").write_bytes(body)
    (tmp_path / "evil_diff_module_xyz.py").write_text("raise SystemExit('imported!')\n")
    code = ("import sys; from autosave.cli import main; "
            f"s = main(['diff', {str(tmp_path / 'a.sav')!r}, {str(tmp_path / 'a.sav')!r}]); "
            "assert 'evil_diff_module_xyz' not in sys.modules; print('status', s)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "status 0" in done.stdout


# -- the example ---------------------------------------------------------------------------

@pytest.mark.slow
def test_compat_example_judges_release_2_compatible():
    example = ROOT / "examples" / "compat"
    done = subprocess.run([sys.executable, str(example / "run.py")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CLASS_RENAMED" in done.stdout and "compatible: 0 breaking" in done.stdout
    assert "2 ok" in done.stdout and "root.gold: 100 -> 130" in done.stdout
    assert "root.stock[0].rarity: 'shop.Rarity.COMMON' -> 'shop.Rarity.RARE'" in done.stdout
    assert "root.stock[1]: item removed (was \"<asset 'items/potion'>\")" in done.stdout


@pytest.mark.slow
def test_compat_example_baseline_is_release_1_as_committed():
    example = ROOT / "examples" / "compat"
    code = ("import sys; from autosave.cli import main; "
            "sys.exit(main(['compat', 'snapshot', 'shop']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=example / "release1",
                          capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads((example / "compat" / "1.0.json").read_text())


def test_verify_loads_every_checkpoint_of_a_log(tmp_path, capsys):
    import autosave.model.registry
    from modtools import fresh_name, load_module, unload
    name = fresh_name("logged")
    game = load_module(name, """
        import attrs, autosave
        @autosave.save_root
        @attrs.define
        class Hero:
            hp: int
        """)
    path = tmp_path / "profile.log"
    try:
        with autosave.CheckpointLog.open(path, checkpoint_every=2) as log:
            log.enter("chapter1")
            for hp in range(5):
                log.step(game.Hero(hp))
            log.globals["ngplus"] = 1
        status, out, _ = run(["compat", "verify", name, "--saves", str(path)], capsys)
        assert status == 0 and out.startswith("ok") and "3 checkpoints load" in out
        # the next build renamed Hero without an alias: every checkpoint names it
        load_module(name, """
            import attrs, autosave
            @autosave.save_root
            @attrs.define
            class Champion:
                hp: int
            """)
        # a new build's process would not know the old class at all
        autosave.model.registry.REGISTRY.by_name.pop(f"{name}.Hero")
        status, out, _ = run(["compat", "verify", name, "--saves", str(path)], capsys)
    finally:
        unload(name)
    assert status == 1 and out.startswith("incompatible")
    assert "IncompatibleSaveError: the checkpoint of 'chapter1' at step 0" in out


def test_verify_a_forged_log_is_corrupt(tmp_path, capsys):
    from autosave.log.file import MAGIC as LOG_MAGIC
    (tmp_path / "forged.log").write_bytes(LOG_MAGIC + bytes(range(256)) * 40)
    status, out, _ = run(["compat", "verify", __name__, "--saves", str(tmp_path)], capsys)
    assert status == 2 and out.startswith("corrupt") and "forged.log" in out
