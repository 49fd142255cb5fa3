"""The examples a newcomer runs keep working."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_history_example_runs():
    out = subprocess.run([sys.executable, str(EXAMPLES / "history.py")], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert "loaded slot at line 6 courage 0" in out
    assert "after choosing differently: [('chapter1', 0, 6), ('chapter1', 7, 7)]" in out
    assert "reopened: slots ['before-the-gate'] reached ['ending/brave']" in out


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_the_distributed_run_resumes_identical_to_an_uninterrupted_one(engine, tmp_path):
    """examples/distributed_run.py: shards killed after a commit and resumed on a new
    cluster equal the run that was never interrupted (skipped without the extra)."""
    pytest.importorskip({"dask": "distributed", "ray": "ray"}[engine])
    out = subprocess.run([sys.executable, str(EXAMPLES / "distributed_run.py"),
                          "--engine", engine], capture_output=True, text=True,
                         check=True, timeout=600, cwd=tmp_path).stdout
    assert "committed steps on disk: [20, 30] (ticks 31..37 are lost)" in out
    assert out.count("identical to the uninterrupted run") == 3
    assert out.rstrip().splitlines()[-1].startswith("OK: killed at tick 37")
