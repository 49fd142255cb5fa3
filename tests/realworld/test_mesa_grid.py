"""A mesa model on a grid: the grid's cells are of a class made with ``type()`` per
grid, saved through mesa's ``unpickle_gridcell`` (a registered reconstructor,
autosave/model/adapters/libraries.py), and the grid's ``__setstate__`` reads the cells its
state holds, so it must run after they are complete. Loaded and stepped further, the
model matches an uninterrupted run.

Not in the two-process catalogue: a loaded grid cannot be saved a second time, with
pickle as with autosave, because mesa's ``unpickle_gridcell`` makes cells of a fresh
class without the ``__reduce__`` the grid's own cell class has.
"""

import pytest

import autosave

mesa = pytest.importorskip("mesa")
from mesa.discrete_space import CellAgent, OrthogonalMooreGrid  # noqa: E402


class Mover(CellAgent):
    def __init__(self, model, cell):
        super().__init__(model)
        self.cell = cell

    def step(self):
        empty = [c for c in self.cell.neighborhood if c.is_empty]
        if empty:
            self.cell = self.random.choice(empty)


@autosave.save_root
class Walkers(mesa.Model):
    def __init__(self, seed=None):
        super().__init__(rng=seed)
        self.grid = OrthogonalMooreGrid((8, 8), torus=True, random=self.random)
        for cell in self.random.sample(list(self.grid.all_cells), 10):
            Mover(self, cell)

    def step(self):
        self.agents.shuffle_do("step")


def positions(model, steps):
    for _ in range(steps):
        model.step()
    return sorted((a.unique_id, a.cell.coordinate) for a in model.agents)


@pytest.mark.parametrize("saved_after", [0, 1, 3])
def test_a_grid_model_loads_and_steps_on_as_an_uninterrupted_run(saved_after):
    autosave.allow("mesa")
    model = Walkers(seed=7)
    positions(model, saved_after)
    loaded = autosave.loads(autosave.dumps(model))
    assert loaded.grid._cells[(0, 0)].coordinate == (0, 0)
    assert all(c.neighborhood for c in loaded.grid.all_cells)     # connected again
    assert positions(loaded, 4) == positions(model, 4)


def test_without_the_registered_reconstructor_a_grid_is_refused():
    from autosave.model.reconstructors import register, unregister
    import mesa.discrete_space.grid as grid
    autosave.allow("mesa")
    data = autosave.dumps(Walkers(seed=1))
    unregister(grid.unpickle_gridcell)
    try:
        with pytest.raises(autosave.UntrustedTypeError, match="unpickle_gridcell"):
            autosave.loads(data)
    finally:
        from autosave.model.adapters.libraries import _check_gridcell
        register(grid.unpickle_gridcell, _check_gridcell, callables=(0,), source="autosave")


@pytest.mark.slow
def test_a_grid_model_loads_in_a_fresh_process_and_steps_on_alike(tmp_path):
    import json
    import os
    import subprocess
    import sys
    autosave.allow("mesa")
    model = Walkers(seed=11)
    positions(model, 2)
    path = tmp_path / "grid.sav"
    autosave.save(path, model)
    expected = positions(model, 4)
    child = (
        "import json, sys; sys.path.insert(0, sys.argv[1])\n"
        "import autosave, test_mesa_grid as t\n"
        "autosave.allow('mesa')\n"
        "m = autosave.load(sys.argv[2])\n"
        "print(json.dumps(t.positions(m, 4)))\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", child, os.path.dirname(__file__), str(path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert [(u, tuple(c)) for u, c in got] == expected
