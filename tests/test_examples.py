"""The examples a newcomer runs keep working."""

import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_history_example_runs():
    out = subprocess.run([sys.executable, str(EXAMPLES / "history.py")], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    assert "loaded slot at line 6 courage 0" in out
    assert "after choosing differently: [('chapter1', 0, 6), ('chapter1', 7, 7)]" in out
    assert "reopened: slots ['before-the-gate'] reached ['ending/brave']" in out
