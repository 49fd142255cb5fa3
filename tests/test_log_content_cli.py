"""``autosave inspect --content`` and ``autosave compat verify --content`` on profiles
recorded against older content."""

import json

from autosave import CheckpointLog
from autosave.cli import main

STORY = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]}


def profile(tmp_path):
    path = tmp_path / "p.log"
    with CheckpointLog.open(path, content=STORY) as log:
        log.enter("a", state={"i": 0})
        log.step({"i": 1})
        log.bookmark("a1")
        log.enter("b", state={"i": 0})
        log.bookmark("b0")
    return path


def content_file(tmp_path, content):
    path = tmp_path / "content.json"
    path.write_text(json.dumps(content))
    return str(path)


def test_inspect_content_reports_the_upgrade_and_writes_nothing(tmp_path, capsys):
    path = profile(tmp_path)
    before = path.read_bytes()
    new = content_file(tmp_path, {"a": ["a0", "zz", "a1", "a2"]})
    assert main(["inspect", "--content", new, str(path)]) == 0
    out = capsys.readouterr().out
    assert "node a: changed steps 0->0 1->2 2->3" in out
    assert "node b: removed" in out
    assert "bookmark a1: moved, a step 1 -> 2" in out
    assert "bookmark b0: lost, b step 0 (its node was removed)" in out
    assert path.read_bytes() == before
    assert main(["inspect", str(path)]) == 0
    assert "content: 2 nodes fingerprinted, 2 fingerprints recorded" in capsys.readouterr().out


def test_inspect_content_refuses_a_malformed_content_file(tmp_path, capsys):
    path = profile(tmp_path)
    assert main(["inspect", "--content", content_file(tmp_path, {"a": [1.5]}), str(path)]) == 2
    assert "not an object of node -> [step key, ...]" in capsys.readouterr().err


def test_compat_verify_names_the_bookmarks_a_content_would_lose(tmp_path, capsys):
    path = profile(tmp_path)
    lose = content_file(tmp_path, {"a": ["a0", "zz", "a1", "a2"]})
    assert main(["compat", "verify", "json", "--saves", str(path), "--content", lose]) == 1
    assert "the content removes the nodes of bookmarks 'b0'" in capsys.readouterr().out
    keep = content_file(tmp_path, {**STORY, "a": ["a0", "a2"]})
    assert main(["compat", "verify", "json", "--saves", str(path), "--content", keep]) == 0
    assert "2 bookmarks restore under the content" in capsys.readouterr().out
    assert main(["compat", "verify", "json", "--saves", str(path)]) == 0
