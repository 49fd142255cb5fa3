"""Forward mode judged by the older build's own loader (autosave/compat/forward.py):
release 1 of the ground-truth game (tests/groundtruth.py) is the older build, a patch
of it the current one. The older code is imported only in a subprocess, from its own
directory; when it cannot be, the gate fails closed (FORWARD_NOT_JUDGED)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import groundtruth as gt

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def release1(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fwrelease1")
    gt.release(directory)
    return directory


def patched(release1, directory, patch):
    pairs = next(p[2] for p in gt.PATCHES if p[0] == patch)
    (directory / "compat").mkdir(parents=True)
    shutil.copy(release1 / "compat" / "1.0.json", directory / "compat" / "1.0.json")
    gt.write_game(directory, gt.apply(pairs))
    return directory


def check(directory, *extra):
    done = subprocess.run([sys.executable, "-m", "autosave", "compat", "check", "gtgame",
                           "--format", "json", "--config", "none.toml", "--forward", *extra],
                          cwd=directory, env=gt.env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["findings"]


def forward(findings, breaking=True):
    return sorted((f["rule"], f["member"]) for f in findings
                  if f["forward"] and (f["breaking"] or not breaking))


def test_the_older_loader_judges_a_newer_enum_member(release1, tmp_path):
    here = patched(release1, tmp_path / "new", "enum-member-added")
    status, findings = check(here, "--baseline", "compat/1.0.json",
                             "--older-code", str(release1))
    assert status == 1 and forward(findings) == [("ENUM_MEMBER_REMOVED", "BORED")]
    assert all(f["baseline"] == "compat/1.0.json" for f in findings if f["forward"])
    # the manifest rules alone say the same here
    status, rules_only = check(here, "--baseline", "compat/1.0.json")
    assert forward(rules_only) == forward(findings)


def test_no_change_is_forward_compatible(release1, tmp_path):
    here = patched(release1, tmp_path / "new", "no-change")
    status, findings = check(here, "--baseline", "compat/1.0.json",
                             "--older-code", str(release1))
    assert status == 0 and forward(findings) == []


def test_an_older_build_that_does_not_import_fails_closed(release1, tmp_path):
    here = patched(release1, tmp_path / "new", "no-change")
    broken = tmp_path / "old"
    gt.write_game(broken, "raise ImportError('the old build needs a missing package')\n")
    status, findings = check(here, "--baseline", "compat/1.0.json",
                             "--older-code", str(broken))
    (f,) = [f for f in findings if f["forward"]]
    assert status == 1 and f["rule"] == "FORWARD_NOT_JUDGED" and f["breaking"]
    assert "missing package" in f["message"]
    assert f["fix"].startswith("make the older release's gtgame importable from")
    # the fix as written: the directory that holds the older release
    status, findings = check(here, "--baseline", "compat/1.0.json",
                             "--older-code", str(release1))
    assert status == 0 and forward(findings) == []


def test_against_a_git_ref_uses_that_refs_tree(release1, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    gt.write_game(repo, gt.RELEASE_1)
    (repo / "compat").mkdir()
    shutil.copy(release1 / "compat" / "1.0.json", repo / "compat" / "1.0.json")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "1.0"],
                 ["tag", "v1.0"]):
        subprocess.run(git + args, cwd=repo, check=True, capture_output=True)
    pairs = next(p[2] for p in gt.PATCHES if p[0] == "enum-member-added")
    gt.write_game(repo, gt.apply(pairs))
    status, findings = check(repo, "--against", "v1.0")
    assert status == 1 and forward(findings) == [("ENUM_MEMBER_REMOVED", "BORED")]
    # the tree at the ref is what the subprocess imported: a ref whose code does not
    # import fails closed
    gt.write_game(repo, "raise ImportError('broken at this commit')\n")
    subprocess.run(git + ["commit", "-q", "-am", "broken"], cwd=repo, check=True)
    subprocess.run(git + ["tag", "broken"], cwd=repo, check=True)
    gt.write_game(repo, gt.apply(pairs))
    status, findings = check(repo, "--against", "broken")
    assert [f["rule"] for f in findings if f["forward"]] == ["FORWARD_NOT_JUDGED"]


# Every patch with AUTOSAVE_FORWARD_STUDY=1 (about 4 minutes); the CI-short ones else.
STUDY = [p for p in gt.PATCHES if p[4] or os.environ.get("AUTOSAVE_FORWARD_STUDY")]


@pytest.mark.parametrize("name, pairs", [pytest.param(p[0], p[2], id=p[0]) for p in STUDY])
def test_forward_mode_never_passes_a_break(release1, tmp_path, name, pairs):
    """The older build (release 1) loads every save the patched build makes and plays it
    to the end. When that fails, forward mode must have said breaking; a forward break
    the truth does not show is a false alarm, allowed (the gate fails closed)."""
    result = gt.judge_forward(release1, tmp_path, pairs)
    if result["truth"] is None:
        pytest.skip(f"the patched build makes no saves: {result['why']}")
    breaking = [(f["rule"], f["name"], f["member"]) for f in result["check"] if f["breaking"]]
    if result["truth"]:
        assert breaking, result["truth"][:3]
