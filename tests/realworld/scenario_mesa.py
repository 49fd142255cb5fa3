"""A mesa model: agents trading wealth, moving by the model's numpy generator."""

import mesa


class Walker(mesa.Agent):
    def __init__(self, model):
        super().__init__(model)
        self.wealth = 1
        self.where = model.rng.random(2)

    def step(self):
        if self.wealth > 0:
            other = self.random.choice(list(self.model.agents))
            other.wealth += 1
            self.wealth -= 1
        self.where = self.where + self.model.rng.normal(size=2)


class MoneyModel(mesa.Model):
    def __init__(self, n=30, seed=None):
        super().__init__(seed=seed)
        Walker.create_agents(self, n)

    def step(self):
        self.agents.shuffle_do("step")

    def observe(self):
        return sorted((a.unique_id, a.wealth, tuple(a.where)) for a in self.agents)
