"""autosave next to pickle (protocol 5): save and load, on the graphs in graphs.py.

    python -m pytest benchmarks/                     # all of it, a minute or so
    python -m pytest benchmarks/ -k level            # one graph
    python -m pytest benchmarks/ --benchmark-json=out.json

Each graph is one pytest-benchmark group, so its six timings print together:
``test_autosave_*`` use the generated code of examples/game and benchmarks/worldsim,
``test_autosave_reflective_*`` run with AUTOSAVE_CODEGEN=0. Every
operation runs on a big-stack thread (graphs.deep_call) because pickle recurses once per
level of nesting; autosave does not need it but runs the same way, for fairness. Before
anything is timed, both libraries' round trips are checked against the original graph.
"""

import pickle

import pytest

import autosave
from graphs import GRAPHS, allow_deep_recursion, count_objects, deep_call, same_graph


class Case:
    def __init__(self, name, build):
        allow_deep_recursion()
        self.name = name
        self.root = build()
        self.objects = count_objects(self.root)
        self.autosave_bytes = deep_call(autosave.dumps, self.root)
        self.pickle_bytes = deep_call(pickle.dumps, self.root, 5)
        # Never time a broken path: both round trips must give back the same graph.
        same_graph(self.root, deep_call(autosave.loads, self.autosave_bytes))
        same_graph(self.root, deep_call(pickle.loads, self.pickle_bytes))


@pytest.fixture(scope="module", params=list(GRAPHS))
def case(request):
    return Case(request.param, GRAPHS[request.param])


def run(benchmark, case, fn, *args, size):
    benchmark.group = f"{case.name} ({case.objects:,} objects)"
    benchmark.extra_info.update(graph=case.name, objects=case.objects, bytes=size)
    deep_call(benchmark, fn, *args)


def test_autosave_save(benchmark, case):
    run(benchmark, case, autosave.dumps, case.root, size=len(case.autosave_bytes))


def test_autosave_reflective_save(benchmark, case, monkeypatch):
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "0")
    run(benchmark, case, autosave.dumps, case.root, size=len(case.autosave_bytes))


def test_pickle_save(benchmark, case):
    run(benchmark, case, pickle.dumps, case.root, 5, size=len(case.pickle_bytes))


def test_autosave_load(benchmark, case):
    run(benchmark, case, autosave.loads, case.autosave_bytes, size=len(case.autosave_bytes))


def test_autosave_reflective_load(benchmark, case, monkeypatch):
    monkeypatch.setenv("AUTOSAVE_CODEGEN", "0")
    run(benchmark, case, autosave.loads, case.autosave_bytes, size=len(case.autosave_bytes))


def test_pickle_load(benchmark, case):
    run(benchmark, case, pickle.loads, case.pickle_bytes, size=len(case.pickle_bytes))
