"""A typed game checks clean under ``mypy --strict`` with its generated modules in place
(``_autosave_generated.py``, ``_autosave_coroutines.py``), and mypy finds autosave
through the install the README gives (``pip install -e .``: setuptools' strict editable
mode, which type checkers can follow; an import hook they cannot)."""

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

GAME = Path(__file__).parent / "typing"


def _installed_through_an_import_hook():
    dist = importlib.metadata.distribution("autosave")
    return any(str(f).startswith("__editable___autosave") and str(f).endswith("_finder.py")
               for f in dist.files or ())


def test_mypy_strict_accepts_a_game_with_its_generated_modules(tmp_path):
    pytest.importorskip("mypy")
    if _installed_through_an_import_hook():
        pytest.skip("autosave was installed editable through an import hook (before "
                    "pyproject.toml chose setuptools' strict mode): pip install -e . again")
    shutil.copytree(GAME / "mygame", tmp_path / "mygame")
    shutil.copy(GAME / "mygame_play.py", tmp_path / "play.py")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AUTOSAVE_", "MYPY", "PYTHONPATH"))}
    made = subprocess.run([sys.executable, "-m", "autosave_codegen", "mygame"], cwd=tmp_path,
                          capture_output=True, text=True, env={**env, "PYTHONPATH": "."},
                          timeout=300)
    assert made.returncode == 0, made.stderr
    generated = {p.name for p in (tmp_path / "mygame").glob("_autosave_*.py")}
    assert generated == {"_autosave_generated.py", "_autosave_coroutines.py"}
    played = subprocess.run([sys.executable, "play.py"], cwd=tmp_path, capture_output=True,
                            text=True, env=env, timeout=300)
    assert played.returncode == 0 and played.stdout == "ok\n", played.stderr
    # No MYPYPATH: mypy finds autosave where the install put it, as a user's mypy would.
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy"),
         "mygame", "play.py"], cwd=tmp_path, capture_output=True, text=True, env=env,
        timeout=600)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues found in 5 source files" in checked.stdout
