"""The release gate against ground truth (tests/groundtruth.py): for every patch, the
verdict of `compat check --baseline` and `compat verify` is the verdict of loading every
save of the corpus under the patch and playing it to the end.

The short form (the patches marked for CI) runs in the fast tier; every patch runs
with --full (or AUTOSAVE_SLOW_TESTS=1).
"""

import json
import re

import pytest

import groundtruth as gt


@pytest.fixture(scope="module")
def release1(tmp_path_factory):
    directory = tmp_path_factory.mktemp("gtrelease1")
    gt.release(directory)
    return directory


def params():
    out = []
    for name, breaks, pairs, steps, short in gt.PATCHES:
        marks = () if short else (pytest.mark.slow,)
        out.append(pytest.param(name, breaks, pairs, steps, id=name, marks=marks))
    return out


@pytest.mark.parametrize("name, breaks, pairs, steps", params())
def test_the_gate_matches_ground_truth(release1, tmp_path, name, breaks, pairs, steps):
    result = gt.judge(release1, tmp_path, pairs, steps)
    (check_status, check_out), (verify_status, verify_out) = result["check"], result["verify"]
    assert check_status in (0, 1), check_out
    assert verify_status in (0, 1), verify_out
    truth = [t if len(t) < 300 else t[:300] + "..." for t in result["truth"][:3]]
    # the harness itself: what the patch does is what its author knows it does
    assert bool(truth) == breaks, truth
    findings = json.loads(check_out)["findings"]
    breaking = [f for f in findings if f["breaking"]]
    files = {f["path"]: f for f in json.loads(verify_out)["files"] if f["status"] != "ok"}
    gate = check_status == 1 or verify_status == 1
    assert gate == bool(truth), (
        f"gate says {'breaking' if gate else 'compatible'}: check {breaking}, verify "
        f"{files}; truth: {truth or 'every save loads and plays right'}")
    if name in gt.ALSO_REPORTS:
        assert gt.ALSO_REPORTS[name] in {f["rule"] for f in findings}, findings
    for broken, rule, says, _ in gt.FIXES:
        if broken == name:
            first = next((f for f in breaking if f["rule"] == rule), None)
            assert first is not None, breaking
            assert first["fix"].startswith(says), first["fix"]


def test_every_fix_patch_is_a_compatible_patch_of_the_catalogue():
    patches = {p[0]: p for p in gt.PATCHES}
    for broken, _, _, fixed in gt.FIXES:
        assert patches[broken][1] is True and patches[fixed][1] is False


@pytest.mark.slow
@pytest.mark.parametrize("name, rule, pairs, steps", gt.WARNED, ids=[w[0] for w in gt.WARNED])
def test_an_in_flight_difference_is_never_silent(release1, tmp_path, name, rule, pairs, steps):
    result = gt.judge(release1, tmp_path, pairs, steps)
    assert result["truth"], "the patch was meant to change how a parked save plays on"
    findings = json.loads(result["check"][1])["findings"]
    assert any(f["rule"] == rule and f["severity"] in ("warning", "breaking")
               for f in findings), findings


def pinned_statements(fix):
    """The statements a COROUTINE_TWINS_CHANGED fix says to write, in order."""
    _, _, rest = fix.partition(", in their order, as ")
    return re.findall(r"`([^`]*autosave\.label\([^`]*)`", rest.partition(" (")[0])


def twins_fix(release1, tmp_path, patch):
    pairs, steps = next((p[2], p[3]) for p in gt.PATCHES if p[0] == patch)
    result = gt.judge(release1, tmp_path / "broken", pairs, steps)
    findings = json.loads(result["check"][1])["findings"]
    first = next(f for f in findings if f["breaking"])
    assert first["fix"].startswith("pin the labels saves may be parked at"), findings
    statements = pinned_statements(first["fix"])
    assert len(statements) == 3, first["fix"]
    return ["    " + s + "\n" for s in statements]


def test_the_twins_fix_applied_as_written_makes_an_insertion_compatible(release1, tmp_path):
    # The developer inserted the new wait before the three: those keep their labels.
    old = twins_fix(release1, tmp_path, "yield-inserted-before-twins")
    pairs = [(gt.WAITS, '    yield "title"\n    yield "wait"\n' + "".join(old))]
    result = gt.judge(release1, tmp_path / "fixed", pairs, gt.SHIFT_AFTER_TITLE)
    assert result["truth"] == []
    assert result["check"][0] == 0 and result["verify"][0] == 0, result["check"][1]


def test_the_twins_fix_applied_to_a_removal_names_the_removed_yield(release1, tmp_path):
    # The middle wait was removed: the first and the third keep their labels; a save
    # parked at the removed one is refused (truth), and the gate names that yield only.
    first, _, third = twins_fix(release1, tmp_path, "yield-twin-removed")
    pairs = [(gt.WAITS, '    yield "title"\n' + first + third)]
    steps = {1: {3: None, 4: 3, 5: 4, 6: 5, 7: 6}}
    result = gt.judge(release1, tmp_path / "fixed", pairs, steps)
    assert [t.split(":")[0] for t in result["truth"]] == ["save 3"], result["truth"]
    findings = json.loads(result["check"][1])["findings"]
    breaking = {(f["rule"], f["member"]) for f in findings if f["breaking"]}
    assert breaking == {("COROUTINE_LABEL_REMOVED", gt.wait_label(2))}, findings
    assert result["check"][0] == 1
