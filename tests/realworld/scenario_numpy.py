"""A numpy particle system, as a game's effects layer holds it."""

import numpy as np


class Particles:
    def __init__(self, n, seed):
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros((n, 4))                  # x, y, vx, vy
        self.pos = self.state[:, :2]                   # views of one base
        self.vel = self.state[:, 2:]
        self.vel[:] = self.rng.normal(size=(n, 2))
        self.alive = np.ones(n, dtype=bool)
        self.kind = np.array(["spark", "smoke"] * (n // 2))
        self.born = np.full(n, np.datetime64("2024-01-01T00:00"), dtype="M8[s]")
        self.tick = np.int64(0)

    def step(self):
        self.vel += self.rng.normal(scale=0.1, size=self.vel.shape)
        self.pos += self.vel * 0.1
        self.alive &= np.abs(self.pos).max(axis=1) < 5
        self.tick += 1

    def observe(self):
        return self.state.tobytes(), self.alive.tobytes(), int(self.tick)
