"""The public API is typed: mypy --strict accepts a typed program using it, and every
callable in ``autosave.__all__`` has its parameters and return annotated."""

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import autosave

HERE = Path(__file__).parent
REPO = HERE.parent
EXAMPLE = HERE / "typing" / "example.py"


@pytest.mark.slow
def test_mypy_strict_accepts_the_typed_example(tmp_path):
    pytest.importorskip("mypy")
    env = {**os.environ, "MYPYPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(HERE / "typing" / "mypy.ini"),
         "--cache-dir", str(tmp_path / "cache"), str(EXAMPLE)],
        capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_typed_example_runs(tmp_path):
    # The hints describe what the calls really do: the same program works.
    run = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "slot.sav")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr


def _public_callables():
    for name in autosave.__all__:
        obj = getattr(autosave, name)
        if isinstance(obj, type):
            if issubclass(obj, BaseException) and obj.__init__ is BaseException.__init__:
                continue
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__init__", "__enter__", "__exit__"):
                    continue
                if isinstance(member, property):
                    yield f"{name}.{attr}", member.fget
                elif isinstance(member, (classmethod, staticmethod)):
                    yield f"{name}.{attr}", member.__func__
                elif inspect.isfunction(member) and "__attrs" not in member.__qualname__:
                    if getattr(member, "__module__", "").startswith("autosave"):
                        yield f"{name}.{attr}", member
        elif callable(obj):
            yield name, obj


@pytest.mark.parametrize("name,func", list(_public_callables()),
                         ids=[n for n, _ in _public_callables()])
def test_every_public_callable_is_annotated(name, func):
    signature = inspect.signature(func)
    missing = [p.name for i, p in enumerate(signature.parameters.values())
               if p.annotation is inspect.Parameter.empty
               and not (i == 0 and p.name in ("self", "cls"))]
    assert not missing, f"{name}: parameters without a type hint: {missing}"
    assert signature.return_annotation is not inspect.Signature.empty, \
        f"{name}: no return type hint"


def test_the_annotation_check_reaches_the_log_api():
    names = {n for n, _ in _public_callables()}
    assert {"CheckpointLog.open", "CheckpointLog.restore", "Bookmark.screenshot",
            "register", "Adapter.parts", "save_root", "copy"} <= names
