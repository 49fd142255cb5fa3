"""@autosave.coroutine against native generators: one resumed step, and saving/loading
10,000 suspended coroutines (pickle cannot save a generator at all).

    python -m pytest benchmarks/test_bench_coroutines.py
"""

import pickle

import pytest

import autosave
import coroutine_game as cg

STEPS = 1000


def run_steps(gen, n=STEPS):
    step = gen.__next__
    for _ in range(n):
        step()


@pytest.mark.parametrize("kind", ["native", "coroutine"])
def test_patrol_step(benchmark, kind):
    make = cg.patrol_native if kind == "native" else cg.patrol
    gen = make(cg.Guard("b"), cg.WAYPOINTS)
    next(gen)
    benchmark.extra_info["steps per round"] = STEPS
    benchmark(run_steps, gen)


@pytest.mark.parametrize("kind", ["native", "coroutine"])
def test_patrol_send_step(benchmark, kind):
    make = cg.patrol_native if kind == "native" else cg.patrol
    gen = make(cg.Guard("b"), cg.WAYPOINTS)
    next(gen)

    def sends(n=STEPS):
        send = gen.send
        for _ in range(n):
            send(None)
    benchmark(sends)


@pytest.mark.parametrize("kind", ["native", "coroutine"])
def test_counter_step(benchmark, kind):
    gen = (cg.counter_native if kind == "native" else cg.counter)(0)
    next(gen)
    benchmark(run_steps, gen)


@pytest.fixture(scope="module")
def ten_thousand():
    return cg.guards(10_000)


def test_save_10000_suspended_coroutines(benchmark, ten_thousand):
    data = benchmark(autosave.dumps, ten_thousand)
    benchmark.extra_info["bytes"] = len(data)
    benchmark.extra_info["bytes per coroutine"] = len(data) / 10_000


def test_load_10000_suspended_coroutines(benchmark, ten_thousand):
    data = autosave.dumps(ten_thousand)
    loaded = benchmark(autosave.loads, data)
    assert next(loaded[7].brain) == next(ten_thousand[7].brain)


def test_pickle_cannot_save_suspended_generators():
    with pytest.raises(TypeError):
        pickle.dumps(cg.guards(1, cg.patrol_native))
