"""`autosave dump`: a save as readable JSON, safe on any file."""

import json
import re
import subprocess
import sys

import attrs

import autosave
from autosave.cli import main

autosave.allow(__name__)


@attrs.define(eq=False)
class Npc:
    name: str
    friend: object = None


def test_dump_shows_types_fields_and_references(tmp_path, capsys):
    a, b = Npc("a"), Npc("b")
    a.friend, b.friend = b, a
    path = tmp_path / "w.sav"
    autosave.save(path, [a, b, b"\x00\xff"])
    assert main(["dump", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_id = {r["id"]: r for r in doc["records"]}
    root = by_id[doc["root"]["ref"]]
    assert root["type"] == "builtins.list"
    first = by_id[root["args"][0]["ref"]]
    second = by_id[root["args"][1]["ref"]]
    assert first["type"] == f"{__name__}.Npc" and first["fields"]["name"] == "a"
    assert by_id[first["fields"]["friend"]["ref"]] is second
    assert by_id[second["fields"]["friend"]["ref"]] is first
    assert root["args"][2] == {"bytes": "00ff"}


def test_dump_never_imports_what_it_shows(tmp_path, capsys):
    import msgpack
    path = tmp_path / "evil.sav"
    path.write_bytes(b"\x89ASV\x01" + msgpack.packb([[["antigravity.X", 1, []]], [[0]], [-1]]))
    assert main(["dump", str(path)]) == 0
    assert "antigravity.X" in capsys.readouterr().out
    assert "antigravity" not in sys.modules


def test_dump_of_corrupt_file_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "bad.sav"
    path.write_bytes(b"not a save")
    assert main(["dump", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.sav" in err and "not an autosave file" in err


def test_cli_runs_as_a_module(tmp_path):
    path = tmp_path / "n.sav"
    autosave.save(path, {"hp": 3})
    out = subprocess.run([sys.executable, "-m", "autosave.cli", "dump", str(path), "--indent", "0"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["types"][0]["name"] == "builtins.dict"


def make_log(path):
    with autosave.CheckpointLog.open(path, checkpoint_every=2) as log:
        log.enter("prologue")
        for hp in range(3):
            log.step({"hp": hp, "npcs": [Npc(f"n{hp}")]})
        log.bookmark("slot1", description="Gate", screenshot=b"P" * 40)
        log.restore(log.back(1), replay=lambda state, steps: state)
        log.step({"hp": 99, "npcs": []})


def test_inspect_log_shows_tree_checkpoints_bookmarks_and_sizes(tmp_path, capsys):
    path = tmp_path / "profile.log"
    make_log(path)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "#0 prologue  steps 0-2  checkpoints 0,2  bookmarks slot1@2" in out
    assert "#1 prologue (branch)  steps 2-2  checkpoints 2" in out
    assert "slot1: prologue step 2 (#0) 'Gate'" in out and "screenshot 40 B" in out
    assert "no torn tail" in out
    assert f"{__name__}.Npc" not in out                  # the newest checkpoint has none
    assert "bytes: checkpoints 3" in out


def test_inspect_reports_a_torn_tail_without_cutting_it(tmp_path, capsys):
    path = tmp_path / "profile.log"
    make_log(path)
    with open(path, "ab") as f:
        f.write(b"half a write")
    size = path.stat().st_size
    assert main(["inspect", str(path)]) == 0
    assert "torn tail: 12 bytes" in capsys.readouterr().out
    assert path.stat().st_size == size


def test_inspect_save_lists_bytes_by_class(tmp_path, capsys):
    path = tmp_path / "w.sav"
    autosave.save(path, [Npc("a"), Npc("b"), {"k": 1}])
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"2  {__name__}.Npc" in out and "4 records of 3 types" in out


def test_inspect_of_other_files_is_a_clean_error(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    assert main(["inspect", str(path)]) == 2
    assert "neither an autosave save nor a checkpoint log" in capsys.readouterr().err


def _error_of(capsys, *argv):
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_errors_name_the_file_once(tmp_path, capsys):
    log = tmp_path / "profile.log"
    make_log(log)
    short = tmp_path / "short.log"
    short.write_bytes(log.read_bytes()[:100])
    cases = {tmp_path / "missing.sav": "No such file or directory",
             tmp_path: "Is a directory",
             short: "less than its header block"}
    for path, words in cases.items():
        # dump on a log names the file again, in the inspect command it suggests
        for command in ("inspect", "dump") if words[:2] in ("No", "Is") else ("inspect",):
            err = _error_of(capsys, command, str(path))
            assert err.startswith(f"autosave {command}: {path}: ") and words in err, err
            assert err.count(str(path)) == 1, err


def test_dump_of_a_checkpoint_log_points_to_inspect(tmp_path, capsys):
    path = tmp_path / "profile.log"
    make_log(path)
    err = _error_of(capsys, "dump", str(path))
    assert "a checkpoint log, not a save" in err
    assert f"`autosave inspect {path}`" in err and "CheckpointLog.open(path)" in err
    assert main(["inspect", str(path)]) == 0           # the advice, followed
    assert "prologue" in capsys.readouterr().out


def test_docs_lists_and_prints_the_shipped_documents(capsys):
    assert main(["docs"]) == 0
    listing = capsys.readouterr().out
    assert re.search(r"^security +Loading files from strangers$", listing, re.M)
    assert main(["docs", "security"]) == 0
    assert capsys.readouterr().out.startswith("# Loading files from strangers")
    assert main(["docs", "docs/format.md"]) == 0            # as the docstrings cite it
    assert "# The autosave file format" in capsys.readouterr().out
    assert main(["docs", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "no topic 'nonsense'" in err and "security" in err
