"""`autosave compat check`: inputs, configuration, baselines from git, report formats.

These run in-process on snapshot documents (the current build given as a snapshot file),
so each kind of bad input is tried cheaply; tests/test_compat_agreement.py judges real
packages against real saves.
"""

import copy
import json
import re
import subprocess
from pathlib import Path

import pytest

from autosave.cli import main
from autosave.compat import model
from autosave.compat.check import compare, widened
from autosave.compat.rules import BREAKING, RULES
from autosave.errors import BaselineError

ROOT = Path(__file__).resolve().parent.parent


def field(name, type_="int", default=None, transient=False, line=None):
    return {"name": name, "type": type_, "in": "slot", "transient": transient,
            "default": default, "declared": True, "line": line}


def release(**changes):
    doc = {
        "autosave_manifest": 2, "packages": ["shop"], "external": [],
        "classes": {
            "shop.Item": {"class": "shop.Item", "version": 1, "strategy": "instance",
                          "aliases": ["shop.OldItem"], "root": False, "file": "shop/items.py",
                          "line": 10, "upgrades": [],
                          "fields": [field("name", "str", line=11), field("price", line=12)]},
            "shop.Shop": {"class": "shop.Shop", "version": 1, "strategy": "instance",
                          "aliases": [], "root": True, "file": "shop/__init__.py", "line": 3,
                          "upgrades": [], "fields": [field("stock", "list[shop.Item]")]},
        },
        "assets": ["items/potion"], "trusted": ["shop"], "coroutines": {},
    }
    for key, value in changes.items():
        doc[key] = value
    return doc


def write(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)


def run(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def check(tmp_path, capsys, base, current, *extra):
    b = write(tmp_path / "base.json", base)
    c = write(tmp_path / "current.json", current)
    status, out, err = run(["compat", "check", c, "--baseline", b, "--format", "json",
                            "--config", str(tmp_path / "none.toml"), *extra], capsys)
    return status, (json.loads(out) if out else None), err


# -- the rules table -------------------------------------------------------------------

def test_docs_list_every_rule_with_its_severity():
    text = (ROOT / "docs" / "compat.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (breaking|warning|info) \|", text, re.M))
    assert rows == {r.id: r.severity for r in RULES.values()}


def test_no_change_is_compatible_and_silent(tmp_path, capsys):
    status, report, _ = check(tmp_path, capsys, release(), release())
    assert status == 0 and report["compatible"] and report["findings"] == []


def test_a_finding_names_rule_class_field_place_and_fix(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["fields"].append(field("discount", line=13))
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 1 and not report["compatible"]
    (f,) = report["findings"]
    assert (f["rule"], f["severity"], f["name"], f["member"]) == (
        "FIELD_ADDED_NO_DEFAULT", BREAKING, "shop.Item", "discount")
    assert (f["file"], f["line"]) == ("shop/items.py", 13)
    assert "give discount a default" in f["fix"] and "from_version=1" in f["fix"]


def test_removing_an_alias_only_warns_and_a_removed_class_points_at_the_baseline(
        tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["aliases"] = []
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0 and [f["rule"] for f in report["findings"]] == ["ALIAS_REMOVED"]
    del current["classes"]["shop.Item"]
    current["classes"]["shop.Shop"]["fields"] = []
    status, report, _ = check(tmp_path, capsys, release(), current)
    gone = [f for f in report["findings"] if f["rule"] == "CLASS_REMOVED"]
    assert status == 1 and gone[0]["in_baseline"] and gone[0]["line"] == 10
    assert "aliases=('shop.Item',)" in gone[0]["fix"]


def test_every_shipped_release_is_a_baseline_a_skipped_patch_included(tmp_path, capsys):
    """Item went 1 -> 2 (with a hook) -> 3 (hook from 2 only): saves of 1.0 break."""
    v1, v2, v3 = release(), release(), release()
    v2["classes"]["shop.Item"].update(version=2, upgrades=[{"from": 1}])
    v3["classes"]["shop.Item"].update(version=3, upgrades=[{"from": 2}])
    (tmp_path / "compat").mkdir()
    write(tmp_path / "compat" / "1.0.json", v1)
    write(tmp_path / "compat" / "1.1.json", v2)
    c = write(tmp_path / "current.json", v3)
    status, out, _ = run(["compat", "check", c, "--baseline", str(tmp_path / "compat"),
                          "--format", "json", "--config", str(tmp_path / "x.toml")], capsys)
    report = json.loads(out)
    assert status == 1
    (f,) = [f for f in report["findings"] if f["breaking"]]
    assert f["rule"] == "UPGRADE_MISSING" and f["baseline"].endswith("1.0.json")
    assert "from_version=1" in f["fix"]


@pytest.mark.parametrize("old, new, wide", [
    ("int", "int | None", True), ("int", "float", True), ("int", "object", True),
    ("int | None", "int", False), ("list[int]", "list[str]", False),
    ("list[int | None]", "list[int] | None", False), ("str", "typing.Any", True)])
def test_widening_is_judged_on_top_level_union_members(old, new, wide):
    assert widened(old, new) is wide


def test_types_compare_by_stable_name_so_a_moved_class_is_the_same_type(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["class"] = "shop.catalog.Item"
    current["classes"]["shop.Shop"]["fields"] = [field("stock", "list[shop.catalog.Item]")]
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0 and [f["rule"] for f in report["findings"]] == ["CLASS_MOVED"]


# -- baselines: malformed, old formats, git ------------------------------------------------

@pytest.mark.parametrize("content, message", [
    (b"\x89ASV\x01\x93", "not UTF-8"),
    (b"{not json", "not valid JSON"),
    (b"[]", "a snapshot is a JSON object"),
    (b"{}", "not an autosave manifest"),
    (b'{"autosave_manifest": 5}', "manifest format 5 is not one this autosave reads"),
    (b'{"autosave_manifest": 2, "classes": []}', '"classes" must be an object'),
    (b'{"autosave_manifest": 2, "classes": {"a.B": {"class": "a.B", "version": 0, '
     b'"strategy": "instance"}}}', "classes['a.B'].version must be an int >= 1"),
    (b'{"autosave_manifest": 2, "classes": {"a.B": {"class": "a.B", "version": 1, '
     b'"strategy": "instance", "fields": [{"name": 3}]}}}',
     "classes['a.B'].fields[0].name must be a string"),
    (b'{"autosave_manifest": 2, "assets": ["a", 1]}', '"assets" must be a list of strings'),
    (b'{"autosave_manifest": 2, "coroutines": {"f": {"labels": {"x@1": {"live": [1]}}}}}',
     "coroutines['f'].labels['x@1'].live must be a list"),
])
def test_a_malformed_baseline_is_an_input_error_saying_where(tmp_path, capsys, content,
                                                             message):
    (tmp_path / "base.json").write_bytes(content)
    c = write(tmp_path / "current.json", release())
    with pytest.raises(BaselineError, match=re.escape(message)):
        model.load(tmp_path / "base.json")
    status, out, err = run(["compat", "check", c, "--baseline", str(tmp_path / "base.json"),
                            "--config", str(tmp_path / "x.toml")], capsys)
    assert status == 2 and message in err and out == ""


def test_a_missing_baseline_or_none_at_all_is_exit_2(tmp_path, capsys, monkeypatch):
    c = write(tmp_path / "current.json", release())
    status, _, err = run(["compat", "check", c, "--baseline", str(tmp_path / "nope.json")],
                         capsys)
    assert status == 2 and "no such baseline" in err
    monkeypatch.chdir(tmp_path)
    status, _, err = run(["compat", "check", c], capsys)
    assert status == 2 and "no baseline" in err
    (tmp_path / "compat").mkdir()
    status, _, err = run(["compat", "check", c], capsys)
    assert status == 2 and "holds no baseline" in err


def test_a_format_1_manifest_still_works_as_a_baseline(tmp_path, capsys):
    old = json.loads(subprocess.run(
        ["git", "show", "7c10d95:examples/game/autosave_manifest.json"], cwd=ROOT,
        capture_output=True, check=True).stdout) if _has_commit("7c10d95") else None
    if old is None:
        old = {"autosave_manifest": 1, "packages": ["shop"], "external": [],
               "classes": copy.deepcopy(release()["classes"])}
    assert old["autosave_manifest"] == 1
    current = copy.deepcopy(old)
    current.update(autosave_manifest=2, assets=[], trusted=[])
    status, report, _ = check(tmp_path, capsys, old, current)
    assert status == 0
    assert {f["rule"] for f in report["findings"]} == {"BASELINE_INCOMPLETE"}


def _has_commit(ref):
    return subprocess.run(["git", "cat-file", "-e", ref], cwd=ROOT,
                          capture_output=True).returncode == 0


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def test_against_reads_the_baselines_of_a_git_ref(tmp_path, capsys, monkeypatch):
    git(tmp_path, "init", "-q")
    (tmp_path / "compat").mkdir()
    write(tmp_path / "compat" / "1.0.json", release())
    (tmp_path / "compat" / "notes.txt").write_text("not a baseline")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "1.0")
    git(tmp_path, "tag", "v1.0")
    (tmp_path / "compat" / "1.0.json").write_text("{broken since the tag")
    current = release(assets=[])
    c = write(tmp_path / "current.json", current)
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(["compat", "check", c, "--against", "v1.0", "--format", "json"],
                         capsys)
    report = json.loads(out)
    assert status == 1 and report["baselines"] == ["v1.0:compat/1.0.json"]
    assert [f["rule"] for f in report["findings"]] == ["ASSET_REMOVED"]
    status, out, _ = run(["compat", "check", c, "--against", "v1.0", "--baseline-path",
                          "compat/1.0.json", "--format", "json"], capsys)
    assert status == 1
    status, _, err = run(["compat", "check", c, "--against", "v9.9"], capsys)
    assert status == 2 and "v9.9" in err
    status, _, err = run(["compat", "check", c, "--against", "v1.0", "--baseline-path",
                          "elsewhere"], capsys)
    assert status == 2 and "elsewhere" in err
    status, _, err = run(["compat", "check", c, "--against", "v1.0", "--baseline-path",
                          str(tmp_path / "compat")], capsys)
    assert status == 2 and "inside the repository" in err
    status, _, err = run(["compat", "check", c, "--against=--output=x"], capsys)
    assert status == 2 and "is not a git ref" in err


# -- accepted breaks -------------------------------------------------------------------------

def test_allow_accepts_one_break_and_records_it(tmp_path, capsys):
    current = release(assets=[])
    current["classes"]["shop.Item"]["fields"].append(field("discount"))
    status, report, _ = check(tmp_path, capsys, release(), current,
                              "--allow", "ASSET_REMOVED:items/potion")
    assert status == 1                                  # the field is still breaking
    status, report, _ = check(tmp_path, capsys, release(), current,
                              "--allow", "ASSET_REMOVED:items/potion",
                              "--allow", "FIELD_ADDED_NO_DEFAULT:shop.Item.discount")
    assert status == 0 and report["compatible"]
    assert all("--allow" in f["allowed"] for f in report["findings"])


def test_the_config_section_accepts_breaks_and_unused_entries_are_reported(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.autosave.compat]\nallow = ["ASSET_REMOVED:items/potion", '
        '"CLASS_REMOVED:shop.Gone"]\n')
    b = write(tmp_path / "base.json", release())
    c = write(tmp_path / "current.json", release(assets=[]))
    status, out, _ = run(["compat", "check", c, "--baseline", b, "--config",
                          str(tmp_path / "pyproject.toml"), "--format", "json"], capsys)
    report = json.loads(out)
    assert status == 0 and "tool.autosave.compat" in report["findings"][0]["allowed"]
    assert report["unused_allows"] == ["CLASS_REMOVED:shop.Gone"]
    status, out, _ = run(["compat", "check", c, "--baseline", b, "--config",
                          str(tmp_path / "pyproject.toml")], capsys)
    assert "allowed ASSET_REMOVED" in out and "CLASS_REMOVED:shop.Gone" in out


@pytest.mark.parametrize("toml, allow, message", [
    ("", "FIELD_GONE:x", "unknown rule 'FIELD_GONE'"),
    ("", "ASSET_REMOVED", "is not RULE_ID:name"),
    ("", "ASSET_REMOVED:", "names no class"),
    ("[tool.autosave.compat]\nallow = 'ASSET_REMOVED:x'\n", None, "allow must be a list"),
    ("[tool.autosave.compat]\nalow = []\n", None, "unknown key(s) alow"),
    ("[tool.autosave.compat\n", None, "not valid TOML"),
    ("[tool.autosave.compat]\nallow = [3]\n", None, "3 is not RULE_ID:name"),
])
def test_a_bad_allow_or_config_is_exit_2(tmp_path, capsys, toml, allow, message):
    (tmp_path / "pyproject.toml").write_text(toml)
    b = write(tmp_path / "base.json", release())
    c = write(tmp_path / "current.json", release())
    argv = ["compat", "check", c, "--baseline", b, "--config", str(tmp_path / "pyproject.toml")]
    status, out, err = run(argv + (["--allow", allow] if allow else []), capsys)
    assert status == 2 and message in err


# -- report formats ------------------------------------------------------------------------

def test_github_format_annotates_the_current_source(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["fields"][1]["type"] = "str"
    current["classes"]["shop.Item"]["fields"][1]["line"] = 12
    b = write(tmp_path / "base.json", release())
    c = write(tmp_path / "current.json", current)
    status, out, _ = run(["compat", "check", c, "--baseline", b, "--format", "github",
                          "--config", str(tmp_path / "x.toml")], capsys)
    assert status == 1
    (line,) = out.splitlines()
    assert line.startswith("::error file=shop/items.py,line=12,title=FIELD_TYPE_CHANGED::")
    assert "\n" not in line and "Fix: bump the version of shop.Item" in line


def test_human_format_says_where_and_how_to_fix(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["fields"][1]["type"] = "str"
    b = write(tmp_path / "base.json", release())
    c = write(tmp_path / "current.json", current)
    status, out, _ = run(["compat", "check", c, "--baseline", b,
                          "--config", str(tmp_path / "x.toml")], capsys)
    assert status == 1
    assert out.startswith("shop/items.py:12: breaking FIELD_TYPE_CHANGED")
    assert "    fix: bump the version of shop.Item" in out
    assert out.rstrip().endswith("BREAKING: 1 breaking, 0 allowed, 0 warnings, "
                                 "0 compatible changes")


def test_current_snapshot_must_be_of_the_current_format(tmp_path, capsys):
    old = release(autosave_manifest=1)
    status, _, err = check(tmp_path, capsys, release(), old)
    assert status == 2 and "format 2" in err


def test_compare_is_pure_on_documents():
    base, cur = model.parse(release(), "b"), model.parse(release(assets=[]), "c")
    first = compare(base, cur)
    assert first == compare(base, cur) and [f.rule for f in first] == ["ASSET_REMOVED"]


def test_a_minimal_baseline_entry_reads_with_the_documented_defaults(tmp_path, capsys):
    base = {"autosave_manifest": 1, "classes": {"shop.Item": {
        "class": "shop.Item", "version": 1, "strategy": "instance",
        "fields": [{"name": "name"}, {"name": "price"}]}}}
    status, report, err = check(tmp_path, capsys, base, release())
    assert status == 0, err
    assert {f["rule"] for f in report["findings"]} == {"CLASS_ADDED", "BASELINE_INCOMPLETE"}
    base["classes"]["shop.Item"]["fields"].append({"name": "weight", "transient": True})
    current = release()
    current["classes"]["shop.Item"]["fields"].append(field("weight"))
    status, report, _ = check(tmp_path, capsys, base, current)
    assert status == 1
    assert [f["rule"] for f in report["findings"] if f["breaking"]] == [
        "FIELD_NOW_SAVED_NO_DEFAULT"]


@pytest.mark.parametrize("old_base, new_base, breaking", [
    (None, "str", True), ("list", None, True), ("tuple", "list", True),
    (None, "list", False), (None, None, False)])
def test_a_changed_builtin_base_is_a_changed_kind(tmp_path, capsys, old_base, new_base,
                                                  breaking):
    base, current = release(), release()
    base["classes"]["shop.Item"]["base"] = old_base
    current["classes"]["shop.Item"]["base"] = new_base
    status, report, _ = check(tmp_path, capsys, base, current)
    assert status == (1 if breaking else 0)
    assert [f["rule"] for f in report["findings"]] == (["CLASS_KIND_CHANGED"] if breaking
                                                        else [])


def test_a_config_severity_overrides_a_rule(tmp_path, capsys):
    current = release()
    del current["classes"]["shop.Item"]["fields"][1]          # price removed: info
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0
    (tmp_path / "pyproject.toml").write_text(
        '[tool.autosave.compat]\nseverity = {FIELD_REMOVED = "breaking"}\n')
    status, out, _ = run(["compat", "check", write(tmp_path / "c.json", current),
                          "--baseline", write(tmp_path / "b.json", release()),
                          "--config", str(tmp_path / "pyproject.toml"), "--format", "json"],
                         capsys)
    found = json.loads(out)["findings"]
    assert status == 1 and [(f["rule"], f["severity"]) for f in found] == [
        ("FIELD_REMOVED", "breaking")]


@pytest.mark.parametrize("toml, message", [
    ('severity = {NOPE = "breaking"}', "unknown rule 'NOPE'"),
    ('severity = {FIELD_REMOVED = "fatal"}', "must be one of breaking, warning, info"),
    ('forward = "yes"', "forward must be true or false"),
])
def test_a_bad_severity_or_forward_setting_is_exit_2(tmp_path, capsys, toml, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.autosave.compat]\n{toml}\n")
    status, _, err = run(["compat", "check", write(tmp_path / "c.json", release()),
                          "--baseline", write(tmp_path / "b.json", release()),
                          "--config", str(tmp_path / "pyproject.toml")], capsys)
    assert status == 2 and message in err


def test_forward_mode_judges_the_older_build_reading_newer_saves(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["fields"].append(field("weight", default={"value": 1}))
    current["assets"] = ["items/potion", "items/elixir"]
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0                     # backward: a field with a default, an asset
    status, report, _ = check(tmp_path, capsys, release(), current, "--forward")
    forward = [f for f in report["findings"] if f["forward"]]
    assert status == 1
    # release 1 reading a newer save: it lacks the asset; the extra field is dropped
    assert {(f["rule"], f["breaking"]) for f in forward} >= {("ASSET_REMOVED", True),
                                                            ("FIELD_REMOVED", False)}
    assert all(not f["forward"] for f in report["findings"] if f["rule"] == "ASSET_ADDED")


def test_a_field_gone_and_one_new_of_its_type_is_a_probable_rename(tmp_path, capsys):
    current = release()
    current["classes"]["shop.Item"]["fields"][1] = field("cost", default={"value": 0})
    status, report, _ = check(tmp_path, capsys, release(), current)
    (found,) = [f for f in report["findings"] if f["breaking"]]
    assert status == 1 and found["rule"] == "FIELD_PROBABLY_RENAMED"
    assert found["fix"].startswith("declare the old name: cost = attrs.field(..., "
                                   "metadata=autosave.renamed_from('price'))")
    # declared: a rename; reserved: two unrelated fields
    current["classes"]["shop.Item"]["fields"][1]["old_names"] = ["price"]
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0 and [f["rule"] for f in report["findings"]] == ["FIELD_RENAMED"]
    del current["classes"]["shop.Item"]["fields"][1]["old_names"]
    current["classes"]["shop.Item"]["reserved"] = ["price"]
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert status == 0
    assert sorted(f["rule"] for f in report["findings"]) == ["FIELD_ADDED", "FIELD_REMOVED"]
    current["classes"]["shop.Item"]["fields"].append(field("price"))
    status, report, _ = check(tmp_path, capsys, release(), current)
    assert "RESERVED_NAME_REUSED" in {f["rule"] for f in report["findings"] if f["breaking"]}
