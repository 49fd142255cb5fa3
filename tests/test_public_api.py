"""What a pickle user expects: file objects, a deep copy, coroutines under copy.deepcopy
and pickle, a clean namespace, ``--version`` and ``python -m autosave``."""

import copy
import io
import os
import pickle
import subprocess
import sys

import attrs
import pytest

import autosave

autosave.allow(__name__)


@attrs.define(eq=False)
class Unit:
    name: str
    friend: object = None
    brain: object = None


@autosave.coroutine
def patrol(unit, waypoints):
    count = 0
    for point in waypoints:
        seen = yield point
        if seen:
            late = count            # bound only after something was seen
            yield ("chase", seen, late)
        count += 1


def world():
    a, b = Unit("a"), Unit("b")
    a.friend, b.friend = b, a
    a.brain = patrol(a, [(0, 0), (1, 0), (1, 1)])
    next(a.brain)
    return [a, b]


def test_dump_and_load_on_file_objects():
    buf = io.BytesIO()
    n = autosave.dump(world(), buf)
    assert n == len(buf.getvalue())
    buf.seek(0)
    a, b = autosave.load(buf)
    assert a.friend is b and b.friend is a and next(a.brain) == (1, 0)


def test_dump_and_load_on_real_files(tmp_path):
    path = tmp_path / "slot.sav"
    with open(path, "wb") as f:
        autosave.dump(world(), f)
    with open(path, "rb") as f:
        a, b = autosave.load(f)
    assert a.name == "a" and autosave.load(path)[1].name == "b"


class Dribble(io.RawIOBase):
    """A raw file that takes at most 7 bytes per write."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.data += bytes(b[:7])
        return min(len(b), 7)


def test_dump_loops_over_short_writes():
    f = Dribble()
    n = autosave.dump(world(), f)
    assert len(f.data) == n and autosave.loads(bytes(f.data))[0].name == "a"


def test_text_files_and_paths_are_told_apart():
    with pytest.raises(TypeError, match="binary"):
        autosave.load(io.StringIO("x"))
    with pytest.raises(TypeError, match="save\\(path"):
        autosave.dump([1], "slot.sav")


def test_load_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.sav"
    path.write_bytes(b"\x89ASV\x02garbage")
    with open(path, "rb") as f, pytest.raises(autosave.FormatError) as info:
        autosave.load(f)
    assert str(path) in "".join(info.value.__notes__)


def test_copy_is_a_deep_copy_with_identity_and_coroutines():
    a, b = world()
    c, d = autosave.copy([a, b])
    assert c is not a and c.friend is d and d.friend is c
    assert next(c.brain) == (1, 0) and next(a.brain) == (1, 0)    # independent


@pytest.mark.parametrize("steps", [0, 1, 2, 3])
def test_deepcopy_of_a_state_holding_coroutines(steps):
    a, b = world()
    for i in range(steps):
        a.brain.send("orc" if i == 1 else None)
    twin = copy.deepcopy([a, b])
    assert twin[0].brain is not a.brain and twin[0].friend is twin[1]
    assert list(twin[0].brain) == list(a.brain)


def test_pickle_of_a_coroutine_says_what_to_use():
    with pytest.raises(TypeError, match="autosave.dumps"):
        pickle.dumps(world())


def test_the_namespace_shows_the_public_api_only():
    names = dir(autosave)
    assert "walk" not in names and "rebuild" not in names and "direct" not in names
    assert {"save_root", "dumps", "loads", "dump", "load", "copy"} <= set(names)
    assert set(autosave.__all__) <= set(names)


@pytest.mark.parametrize("argv", [["-m", "autosave", "--version"]])
def test_version_and_python_dash_m(argv):
    from autosave.format.kernels import IMPLEMENTATION
    out = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    loops = "C loops" if IMPLEMENTATION == "C" else "pure-Python loops"
    assert out.returncode == 0 and out.stdout.startswith(f"autosave {autosave.__version__} "
                                                         f"({loops}")


BLOCK_SPEEDUPS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "autosave._speedups":
            raise ImportError("not built")
sys.meta_path.insert(0, Block())
sys.argv = ["autosave", "--version"]
from autosave.cli import main
main()
"""


def test_version_says_when_the_pure_python_fallback_runs():
    env = {k: v for k, v in os.environ.items() if k != "AUTOSAVE_PUREPYTHON"}
    out = subprocess.run([sys.executable, "-c", BLOCK_SPEEDUPS], capture_output=True,
                         text=True, env=env)
    assert out.stdout.strip() == (f"autosave {autosave.__version__} (pure-Python loops: the "
                                  f"C extension autosave._speedups was not built: reinstall "
                                  f"with a C compiler)"), out.stderr
    out = subprocess.run([sys.executable, "-m", "autosave", "--version"], capture_output=True,
                         text=True, env={**env, "AUTOSAVE_PUREPYTHON": "1"})
    assert "(pure-Python loops: AUTOSAVE_PUREPYTHON is set)" in out.stdout


def test_python_dash_m_runs_the_command(tmp_path):
    path = tmp_path / "s.sav"
    autosave.save(path, [1, 2])
    out = subprocess.run([sys.executable, "-m", "autosave", "dump", str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0 and '"builtins.list"' in out.stdout


def test_the_install_claims_no_generic_top_level_name(tmp_path):
    """The build tool installs as autosave_codegen; "codegen" is another project's."""
    code = ("import importlib.util as u; "
            "print(u.find_spec('codegen') is None, u.find_spec('autosave_codegen') is not None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.stdout.split() == ["True", "True"], out.stderr
    out = subprocess.run([sys.executable, "-m", "autosave_codegen", "--help"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0 and "autosave-codegen" in out.stdout
