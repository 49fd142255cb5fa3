"""The wheel holds what an installed autosave needs: the autosave_codegen package (not
a top-level ``codegen``), py.typed, the engine's loops in C where a compiler is, and the
docs the README and the docstrings cite.

The fast test builds the wheel from this checkout with the installed setuptools; with
AUTOSAVE_SLOW_TESTS=1 another builds it as pip does for users (isolated) and runs the
installed commands from it."""

import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"\bdocs/([a-z-]+)\.md\b")
UNSHIPPED = re.compile(r"\b(?:tests|examples|benchmarks)/[\w/]+\.py\b")


def build(tmp_path, *flags):
    out = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *flags,
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, timeout=600)
    [wheel] = out.glob("autosave-*.whl")
    return wheel


def check_contents(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        sources = {n: z.read(n).decode("utf-8") for n in names if n.endswith(".py")}
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"autosave", "autosave_codegen"}, tops
    assert "autosave/py.typed" in names
    if shutil.which(sysconfig.get_config_var("CC").split()[0] or "cc"):  # docs/speedups.md
        assert any(n.startswith("autosave/_speedups.") and n.endswith(
            tuple(importlib.machinery.EXTENSION_SUFFIXES)) for n in names), sorted(names)
    for module in ("__init__", "__main__", "cli", "collect", "emit", "manifest", "report"):
        assert f"autosave_codegen/{module}.py" in names
    shipped = {n[len("autosave/docs/"):-3] for n in names
               if n.startswith("autosave/docs/") and n.endswith(".md")}
    assert shipped == {p.stem for p in (ROOT / "docs").glob("*.md")}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    cited = {("README.md", m) for m in CITED.findall(readme)}
    for name, text in sources.items():
        cited |= {(name, m) for m in CITED.findall(text)}
        assert not UNSHIPPED.search(text), f"{name} cites {UNSHIPPED.search(text)[0]}, " \
                                           f"which the wheel does not hold"
    assert len(cited) > 20
    missing = sorted(c for c in cited if c[1] not in shipped)
    assert not missing, f"cited, not shipped: {missing}"


@pytest.mark.slow
def test_the_wheel_holds_codegen_docs_and_py_typed(tmp_path):
    check_contents(build(tmp_path, "--no-build-isolation"))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("AUTOSAVE_SLOW_TESTS"),
                    reason="builds in an isolated environment; AUTOSAVE_SLOW_TESTS=1 runs it")
def test_an_installed_wheel_prints_its_docs_and_runs_codegen(tmp_path):
    wheel = build(tmp_path)
    check_contents(wheel)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": str(target)}

    def run(*args):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=120)
    where = run("-c", "import autosave, autosave_codegen; print(autosave.__file__); "
                      "print(autosave_codegen.__file__)")
    assert where.stdout.count(str(target)) == 2, where.stdout + where.stderr
    security = run("-m", "autosave", "docs", "security")
    assert security.returncode == 0 and security.stdout.startswith("# Loading files"), \
        security.stderr
    assert run("-m", "autosave_codegen", "--help").returncode == 0
