"""A SimPy simulation saved half-way -- event queue, resources, a store, a preemptive
resource, pending any/all conditions, interrupts and @autosave.coroutine processes --
loads and finishes exactly like a run that was never saved (see simpy_model)."""

import inspect

import pytest

import autosave
pytest.importorskip("simpy")  # noqa: E402 -- the full matrix installs it ('.[dev]')
import simpy_model
from modtools import fresh_name, load_module, unload

HALF = 25.0          # the model's whole run ends near t = 50
END = 55.0


def finished_log(world):
    world.env.run()
    return world.log


@pytest.fixture(scope="module")
def uninterrupted():
    return finished_log(simpy_model.build())


@pytest.fixture(scope="module")
def native_model():
    """The same model with plain generators: CPython's own behaviour."""
    source = inspect.getsource(simpy_model).replace("@autosave.coroutine\n", "")
    name = fresh_name("simpy_native")
    yield load_module(name, source)
    unload(name)


def test_the_model_is_nontrivial(uninterrupted):
    kinds = {entry[1] for entry in uninterrupted}
    assert {"served", "renege", "broken", "repaired", "made", "waited", "retired", "stored",
            "packed", "preempted", "inspecting", "packer-idle"} <= kinds
    assert uninterrupted[-1][0] > 2 * HALF * 0.9
    assert any(t < HALF for t, *_ in uninterrupted) and any(t > HALF for t, *_ in uninterrupted)


def test_decorated_processes_run_like_native_generators(uninterrupted, native_model):
    assert uninterrupted == finished_log(native_model.build())


def save_load(world):
    data = autosave.dumps(world)
    assert autosave.dumps(world) == data, "dumping the same simulation twice gave different bytes"
    loaded = autosave.loads(data)
    assert autosave.dumps(loaded) == data, "dumps(loads(data)) != data"
    return loaded


def test_environment_saved_half_way_finishes_like_an_uninterrupted_run(uninterrupted):
    # SimPy's Environment and resources cache MethodType(SomeClass, self) for env.timeout,
    # env.process, counter.request ... (BoundClass.bind_early): those save and load too
    world = simpy_model.build()
    world.env.run(until=HALF)
    loaded = save_load(world)
    assert loaded.env is not world.env and loaded.log == world.log
    assert finished_log(loaded) == uninterrupted
    assert finished_log(world) == uninterrupted   # saving did not disturb the original


def test_saved_and_loaded_at_many_points(uninterrupted):
    world = simpy_model.build()
    t = 0.0
    while t < END:
        t += 1.7
        world.env.run(until=t)
        world = save_load(world)
    assert world.log == uninterrupted


@pytest.mark.slow
def test_saved_at_every_event(uninterrupted):
    world = simpy_model.build()
    steps = 0
    while world.env.peek() != float("inf"):
        assert steps < 2000, f"the loaded simulation did not end; its log so far: {world.log}"
        world.env.step()
        steps += 1
        world = save_load(world)
    assert world.log == uninterrupted


def test_a_loaded_process_can_be_interrupted_and_queried():
    world = simpy_model.build()
    world.env.run(until=HALF)
    loaded = save_load(world)
    for w in (world, loaded):
        alive = [name for name, p in sorted(w.machines.items()) if p.is_alive]
        assert alive
        proc = w.machines[alive[0]]
        assert proc.name == "machine"
        if proc.target is not None and alive[0] in w.working:
            proc.interrupt("by the test")
        w.env.run(until=HALF + 5)
    assert loaded.log == world.log
