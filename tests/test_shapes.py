"""The shape benchmarks' generator (benchmarks/shapemodel), checked without timing: every
state it draws, and every named workload at a small size, saves and loads back to the
same graph, generated code and reflection write the same bytes, and a loaded state saves
to the very same bytes. (benchmarks/shapes.py times them.)"""

import os
import pickle
import sys
from pathlib import Path

import pytest

import autosave
import autosave_codegen as codegen
from autosave.format.kernels import python_loops

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from graphs import same_graph  # noqa: E402
from shapemodel import gen  # noqa: E402


def reflective(fn, *args):
    old = os.environ.get("AUTOSAVE_CODEGEN")
    os.environ["AUTOSAVE_CODEGEN"] = "0"
    try:
        return fn(*args)
    finally:
        if old is None:
            del os.environ["AUTOSAVE_CODEGEN"]
        else:
            os.environ["AUTOSAVE_CODEGEN"] = old


def check_round_trip(root, compare=True):
    data = autosave.dumps(root)
    assert reflective(autosave.dumps, root) == data, "generated and reflective bytes differ"
    with python_loops():
        assert autosave.dumps(root) == data, "the C and the Python loops differ"
        python_loaded = autosave.loads(data)
    for loaded in (autosave.loads(data), reflective(autosave.loads, data), python_loaded):
        if compare:
            same_graph(root, loaded)
        assert autosave.dumps(loaded) == data, "a loaded state saves to other bytes"


@pytest.mark.parametrize("seed", range(6))
def test_generated_states_round_trip(seed):
    state = gen.random_state(seed, 1_500)
    assert len(state.parts) >= 3          # the draw mixes several styles
    check_round_trip(state)


def test_generated_states_are_the_same_for_a_seed():
    assert autosave.dumps(gen.random_state(7, 500)) == autosave.dumps(gen.random_state(7, 500))
    assert autosave.dumps(gen.random_state(7, 500)) != autosave.dumps(gen.random_state(8, 500))


@pytest.mark.parametrize("name", sorted(gen.WORKLOADS))
def test_workloads_round_trip(name):
    if name == "numpy-scene":
        pytest.importorskip("numpy")
    root, pickle_root = gen.WORKLOADS[name](600)
    # coroutines: a generator's frame is not something same_graph looks into; the
    # re-save to the same bytes covers it
    check_round_trip(root, compare=root is pickle_root)
    same_graph(pickle_root, pickle.loads(pickle.dumps(pickle_root, protocol=5)))


def test_committed_generated_code_is_current():
    for path, text in codegen.outputs(["shapemodel"], None).items():
        assert path.parent == BENCHMARKS / "shapemodel"
        if text is None:
            assert not path.exists()
            continue
        assert path.read_text(encoding="utf-8") == text, \
            f"{path} is stale: run autosave-codegen shapemodel in benchmarks/"
