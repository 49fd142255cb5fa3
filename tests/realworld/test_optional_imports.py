"""Adapters of optional packages register when the game imports the package; a load
never imports one, and says so when a save needs a package the game did not import."""

import subprocess
import sys
import textwrap

import pytest


def run(code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_numpy_is_not_imported_by_autosave_and_a_load_does_not_import_it():
    pytest.importorskip("numpy")
    data = run("""
        import sys, numpy as np, numpy.random, autosave
        sys.stdout.write(autosave.dumps([np.arange(3), np.random.default_rng(1)]).hex())
    """)
    out = run(f"""
        import sys, autosave
        assert "numpy" not in sys.modules
        try:
            autosave.loads(bytes.fromhex({data!r}))
        except autosave.LoadError as e:
            print(type(e).__name__)
        assert "numpy" not in sys.modules
        import numpy
        try:
            autosave.loads(bytes.fromhex({data!r}))
        except autosave.IncompatibleSaveError as e:
            assert "import numpy.random before loading" in str(e), e
            print("asks for numpy.random")
        import numpy.random
        print(type(autosave.loads(bytes.fromhex({data!r}))[1]).__name__)
    """)
    lines = out.splitlines()
    assert lines[0] in ("UntrustedTypeError", "IncompatibleSaveError")
    assert lines[1:] == ["asks for numpy.random", "Generator"]
