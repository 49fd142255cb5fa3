"""A numpy-heavy scene: a terrain heightmap, a particle system whose position and
velocity are views of one state array, units holding small arrays and numpy scalars,
and a numpy generator mid-sequence."""

import numpy as np

import autosave


class Unit:
    def __init__(self, rng, i):
        self.name = f"unit{i}"
        self.pos = rng.random(2)
        self.hp = np.int32(100 - i % 50)
        self.speed = np.float32(rng.random())
        self.path = rng.integers(0, 256, size=(8, 2), dtype=np.int16)
        self.inventory = ["sword", "rope"] if i % 3 else []


@autosave.save_root
class Scene:
    def __init__(self, units=2000, particles=20_000, seed=3):
        self.rng = np.random.default_rng(seed)
        self.terrain = self.rng.random((256, 256), dtype=np.float32)
        self.water = self.terrain < 0.2
        self.state = np.zeros((particles, 4))
        self.pos, self.vel = self.state[:, :2], self.state[:, 2:]
        self.vel[:] = self.rng.normal(size=(particles, 2))
        self.units = [Unit(self.rng, i) for i in range(units)]
        self.tick = np.int64(0)


def numpy_scene():
    scene = Scene()
    scene.rng.random(17)                 # mid-sequence
    return scene
