"""What games and simulations hold, saved mid-run, loaded and run on: each step after
the load equals the uninterrupted run. Optional libraries are skipped when absent."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import autosave

HERE = Path(__file__).parent
STEPS = 6


def run_on(original, copy, step, observe):
    for _ in range(STEPS):
        step(original)
        step(copy)
        assert observe(copy) == observe(original)


def test_numpy_particle_system():
    pytest.importorskip("numpy")
    from scenario_numpy import Particles
    autosave.allow("scenario_numpy")
    world = Particles(40, seed=3)
    for _ in range(5):
        world.step()
    copy = autosave.loads(autosave.dumps(world))
    assert copy.pos.base is copy.state                  # the views still share the state
    run_on(world, copy, lambda w: w.step(), lambda w: w.observe())


def test_mesa_model_stepped_saved_loaded_stepped_again():
    pytest.importorskip("mesa")
    from scenario_mesa import MoneyModel
    autosave.allow("scenario_mesa", "mesa")
    model = MoneyModel(seed=42)
    for _ in range(4):
        model.step()
    copy = autosave.loads(autosave.dumps(model))
    run_on(model, copy, lambda m: m.step(), lambda m: m.observe())


def test_pygame_sprite_group_rects():
    pytest.importorskip("pygame")
    import pygame
    from scenario_pygame import Ship
    autosave.allow("pygame", "scenario_pygame")
    group = pygame.sprite.Group()
    for i in range(5):
        s = Ship()
        s.rect = pygame.Rect(i * 10, 5, 8, 8)
        s.velocity = pygame.math.Vector2(1, i)
        s.spin = pygame.math.Vector3(0, 0, i)
        s.tint = pygame.Color(10 * i, 20, 30, 255)
        s.add(group)
    data = autosave.dumps({"group": group})
    copy = autosave.loads(data)["group"]
    assert isinstance(copy, pygame.sprite.Group) and len(copy) == 5

    def step(g):
        for s in g:
            s.rect.move_ip(s.velocity)
            s.spin.rotate_z_ip(15)

    def observe(g):
        return sorted((tuple(s.rect), tuple(s.velocity), tuple(round(c, 9) for c in s.spin),
                       tuple(s.tint)) for s in g)
    run_on(group, copy, step, observe)
    assert all(copy in s.groups() for s in copy)       # membership both ways


def test_networkx_graph_with_node_objects():
    nx = pytest.importorskip("networkx")
    autosave.allow("networkx", "test_scenarios")
    g = nx.DiGraph(name="roads")
    towns = [Town(f"t{i}", i * 10) for i in range(6)]
    for a, b in zip(towns, towns[1:]):
        g.add_edge(a, b, cost=a.people + b.people)
    g.add_edge(towns[-1], towns[0], cost=1)
    copy = autosave.loads(autosave.dumps(g))
    ctowns = {t.name: t for t in copy.nodes}

    def step(graph):
        for town in list(graph.nodes):
            town.people += graph.out_degree(town) * 3
        heaviest = max(graph.edges(data=True), key=lambda e: (e[2]["cost"], e[0].name))
        graph.remove_edge(heaviest[0], heaviest[1])

    def observe(graph):
        return (sorted((t.name, t.people) for t in graph.nodes),
                sorted((a.name, b.name, d["cost"]) for a, b, d in graph.edges(data=True)),
                [t.name for t in nx.dfs_preorder_nodes(graph, source=next(iter(graph.nodes)))])
    assert set(ctowns) == {t.name for t in towns}
    run_on(g, copy, step, observe)


class Town:
    def __init__(self, name, people):
        self.name, self.people = name, people


SINGLE_FILE_GAME = textwrap.dedent("""
    import sys, random, autosave
    import numpy as np
    import numpy.random   # a load imports nothing: the game imports what its saves hold

    @autosave.save_root
    class Game:
        def __init__(self):
            self.rng = random.Random(4)
            self.nprng = np.random.default_rng(4)
            self.board = np.zeros((4, 4), dtype=np.int8)
            self.row = self.board[1]
            self.seen = {("a", 1), ("b", 2), frozenset({"x", "y"})}
            self.score = 0

        def step(self):
            self.board[self.rng.randrange(4), int(self.nprng.integers(4))] += 1
            self.score += int(self.row.sum())
            return (self.board.tobytes(), self.score)

    if sys.argv[1] == "save":
        game = Game()
        for _ in range(3):
            game.step()
        sys.stdout.buffer.write(autosave.dumps(game))
    else:
        game = autosave.loads(sys.stdin.buffer.read())
        print([game.step() for _ in range(4)] == [eval(sys.argv[2])[i] for i in range(4)] or "ok")
""")


@pytest.mark.slow
def test_a_single_file_game_in_main_loads_in_a_fresh_process_with_another_hash_seed(tmp_path):
    pytest.importorskip("numpy")
    script = tmp_path / "game.py"
    script.write_text(SINGLE_FILE_GAME)

    def run(*args, seed, stdin=None):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        done = subprocess.run([sys.executable, str(script), *args], input=stdin,
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout

    data = run("save", seed=1)
    assert run("save", seed=2) == data                  # same game, same bytes
    expected = run_steps(script)
    out = run("load", repr(expected), seed=3, stdin=data)
    assert out.strip() == b"True"


def run_steps(script):
    """The uninterrupted run's steps 4..7, computed in this process."""
    namespace = {"__name__": "scenario_game"}
    source = SINGLE_FILE_GAME.split("if sys.argv[1]")[0]
    exec(compile(source, str(script), "exec"), namespace)
    game = namespace["Game"]()
    for _ in range(3):
        game.step()
    return [game.step() for _ in range(4)]
