"""Every save in the suite is a differential test of the save engine against itself,
and of the two encoders.

``autosave.dumps`` writes through ``saver.Saver``, with the game's generated handlers
when it has them (here: for every class generated code exists for). Every save in every
test is made a second time by reflection alone; both must give the same bytes, and where a graph cannot be saved, the same error with the same object
path. Any difference fails the test that made the save. The first save's records are
encoded as a save encodes them (by msgspec where it is installed), the second's by
msgpack alone (format.msgpack_pack), so the two encoders are also compared on every
save (tests/test_encoding.py has the adversarial cases). The second save also runs the
engine's loops in Python (``autosave.format.kernels``) where the first ran them in C, so every
save compares the two implementations as well (tests/test_kernels.py).
"""

import os

import pytest
from hypothesis import settings

import autosave.files
from autosave.format.wire import body_of, encode, frame, msgpack_pack
from autosave.saving.saver import Saver
from autosave.format.kernels import python_loops

MISMATCHES = []

# CI runs a seeded set of generated examples, the same on every run, so a red build is
# a regression and not a lucky draw; AUTOSAVE_FUZZ_EXAMPLES=N explores fresh random ones
# (the files that read it also raise their example counts to N).
settings.register_profile("seeded", derandomize=True)
settings.register_profile("fuzz", derandomize=False)
settings.load_profile("fuzz" if os.environ.get("AUTOSAVE_FUZZ_EXAMPLES") else "seeded")


def reflective_bytes(root):
    """The bytes of a save by reflection alone, its loops in Python, encoded by msgpack
    alone (every buffer in band)."""
    with python_loops():
        return frame(msgpack_pack(body_of(*Saver(generated=False).run(root))))


def in_band(buffer):
    return True


class CheckedSaver(Saver):
    def run(self, root):
        try:
            offering = self.out_of_band is not None
            direct = super().run(root)
            # a save offering buffers out of band, with every one kept in band: the
            # bytes of a save without
            direct_bytes = encode(*direct, buffer_callback=in_band if offering else None)
        except Exception as e:
            try:
                reflective_bytes(root)
            except Exception as r:
                if (type(r), str(r)) != (type(e), str(e)):
                    MISMATCHES.append(f"the engines refuse the graph differently: direct "
                                      f"{type(e).__name__}: {e}; reflective "
                                      f"{type(r).__name__}: {r}")
                raise e from None
            MISMATCHES.append(f"the direct walk failed where reflection did not: "
                              f"{type(e).__name__}: {e}")
            raise
        try:
            expected = reflective_bytes(root)
        except Exception as e:
            MISMATCHES.append(f"reflection failed where the direct walk did not: "
                              f"{type(e).__name__}: {e}")
            return direct
        if direct_bytes != expected:
            MISMATCHES.append(f"direct and reflective bytes (encoded by pack and by "
                              f"msgpack_pack) differ for a {type(root).__qualname__} root "
                              f"({len(direct_bytes)} vs {len(expected)} bytes)")
        return direct


def pytest_addoption(parser):
    parser.addoption(
        "--full", action="store_true",
        help="run the whole suite: the tests marked slow too (without it, and without "
             "-m, `python -m pytest` runs the fast tier, -m 'not slow'); .ci/run uses it")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "one_save_engine: the test's graph changes while it is being saved (an "
        "adversarial __reduce__), so a second walk of it cannot be compared with the first")
    config.addinivalue_line(
        "markers", "slow: in the full run only (--full): long property runs, subprocess "
        "builds, mypy, whole-package codegen; the fast tier keeps a test of every module")
    # The fast tier is the default; an explicit -m (say -m slow) is the user's choice.
    if not config.getoption("--full") and not config.option.markexpr:
        config.option.markexpr = "not slow"


@pytest.fixture(autouse=True)
def both_save_engines(monkeypatch, request):
    if request.node.get_closest_marker("one_save_engine"):
        yield
        return
    monkeypatch.setattr(autosave.files, "Saver", CheckedSaver)
    generated = autosave.files.GENERATED
    activate = type(generated).activate
    monkeypatch.setattr(generated, "activate", lambda: activate(generated) or True)
    MISMATCHES.clear()
    yield
    found = list(MISMATCHES)
    MISMATCHES.clear()
    assert not found, "\n".join(found)
