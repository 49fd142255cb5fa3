"""The C loops under AddressSanitizer and UndefinedBehaviorSanitizer.

csrc/ is built again with ``-fsanitize=address,undefined`` (every report fatal) where a
C compiler and its sanitizer runtimes are present, and the differential property tests
of tests/test_kernels.py (both loops on generated and forged inputs) run against that
build in a subprocess: a memory error or undefined behaviour anywhere they reach
(a signed overflow in ``differences``, say) fails this test, where a normal build would
give a silent wrong result. CI runs 60 examples of each from a fixed seed;
AUTOSAVE_FUZZ_EXAMPLES=N runs N fresh ones of each.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "csrc").glob("*.c"))
FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-fno-omit-frame-pointer", "-g", "-O1", "-shared", "-fPIC"]


def compiler():
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def runtime(cc, name):
    found = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True,
                           text=True).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    if os.environ.get("AUTOSAVE_PUREPYTHON"):
        pytest.skip("AUTOSAVE_PUREPYTHON: the C loops are not in use")
    cc = compiler()
    asan = cc and runtime(cc, "libasan.so")
    if not asan or not runtime(cc, "libubsan.so"):
        pytest.skip("no C compiler with sanitizer runtimes here")
    out = tmp_path_factory.mktemp("asan") / ("_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    built = subprocess.run([cc, *FLAGS, f"-I{sysconfig.get_paths()['include']}",
                            *map(str, SOURCES), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return out, asan


RUNNER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("autosave._speedups", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules["autosave._speedups"] = module
from autosave.format import kernels
assert kernels.IMPLEMENTATION == "C" and kernels._speedups is module, "not the sanitized build"
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


def run_sanitized(sanitized, *pytest_args):
    library, asan = sanitized
    examples = {}
    if not os.environ.get("AUTOSAVE_FUZZ_EXAMPLES"):
        # CI: 60 examples of each, from a fixed seed (the same ones on every run)
        examples, pytest_args = {"AUTOSAVE_FUZZ_EXAMPLES": "60"}, (*pytest_args,
                                                                   "--hypothesis-seed=0")
    env = {**os.environ, **examples, "LD_PRELOAD": asan,
           # CPython's own allocations are not ours to report, nor its leaks at exit
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=99",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:exitcode=98",
           "PYTHONMALLOC": "malloc"}
    return subprocess.run([sys.executable, "-c", RUNNER, str(library), *pytest_args,
                           "-q", "-p", "no:cacheprovider", "-x"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow         # builds the extension under sanitizers: seconds of C compiling
def test_the_differential_tests_pass_under_asan_and_ubsan(sanitized):
    done = run_sanitized(sanitized, "tests/test_kernels.py", "-k", "agree or refuse or forged")
    report = done.stdout[-3000:] + done.stderr[-6000:]
    assert done.returncode == 0, report
    assert "runtime error" not in done.stderr and "AddressSanitizer" not in done.stderr, report


@pytest.mark.slow         # builds the extension under sanitizers, as the test above
def test_a_save_framed_in_place_passes_under_asan_and_ubsan(sanitized):
    """csrc/frame.c grows the encoder's result in place and hands out views of it."""
    done = run_sanitized(sanitized, "tests/test_framed.py")
    report = done.stdout[-3000:] + done.stderr[-6000:]
    assert done.returncode == 0, report
    assert "runtime error" not in done.stderr and "AddressSanitizer" not in done.stderr, report


@pytest.mark.slow         # builds the extension under sanitizers, as the test above
def test_the_sanitizers_would_see_a_signed_overflow(sanitized, tmp_path):
    """The build traps what it is meant to: a C loop doing undefined behaviour on
    purpose fails the run (so a pass above means none was reached)."""
    cc = compiler()
    source = tmp_path / "overflow.c"
    source.write_text("#include <limits.h>\nint main(int argc, char **argv) {\n"
                      "    volatile long x = LONG_MAX; return (int)(x + argc);\n}\n")
    exe = tmp_path / "overflow"
    subprocess.run([cc, "-fsanitize=undefined", "-fno-sanitize-recover=all", str(source),
                    "-o", str(exe)], check=True, capture_output=True)
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode != 0 and "runtime error" in done.stderr
