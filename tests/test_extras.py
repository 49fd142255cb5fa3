"""autosave.dask and autosave.ray without their extra: an ImportError naming the
install that brings it, whether or not the library is on this machine."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module, library, extra", [
    ("autosave.dask", "distributed", "autosave[dask]"),
    ("autosave.ray", "ray", "autosave[ray]"),
])
def test_an_engine_module_without_its_extra_says_what_to_install(module, library, extra):
    program = (f"import sys; sys.modules[{library!r}] = None\n"
               f"try:\n    import {module}\n"
               f"except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert f"pip install '{extra}'" in out
