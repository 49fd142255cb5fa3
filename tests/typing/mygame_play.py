import autosave
from mygame.world import Item, Level, Npc, Terrain, wander

level = Level([Terrain.GRASS, Terrain.WATER], [Item("key")], [Npc("Ann")])
level.npcs[0].brain = wander(level.npcs[0], level.rng)
next(level.npcs[0].brain)
again: Level = autosave.loads(autosave.dumps(level))
assert again.npcs[0].brain.send("orc") == "Ann: Hello"
print("ok")
