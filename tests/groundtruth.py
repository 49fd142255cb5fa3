"""Ground truth for the release gate: a shipped game, a corpus parked at every yield,
and patches of every kind a studio ships (tests/test_compat_groundtruth.py).

Release 1 of ``gtgame`` has an attrs hierarchy held through a base-class field
(``npcs: list[Npc]`` holding a ``Merchant``), a dict attrs class, a dataclass, a frozen
key class, a plain class, two enums, three assets and four ``@autosave.coroutine``
scripts (a loop, ``yield from`` with branches, repeated identical yields, a while
loop). ``play(k)`` is the game: a fresh world with every script advanced k times;
the corpus is ``play(k)`` saved for every k up to the end of the longest script, so
every script is parked at every one of its yields in some save.

A patch is release 2: text replacements on the source (its scenario included, so the
patched ``play`` says what the developer meant), and, for a patch that adds or removes
a yield, where each old resume point is in the new code (``steps``: script index ->
{old steps taken: new steps taken, or None where the point is gone}).

The truth of a patch: every save, loaded under the patched code, *plays* like a fresh
patched playthrough from the same point: ``observe`` (the data, by what it means) is
the same after the load, every script driven to its end yields the same values and
returns the same results, and the data are the same again at the end. A save the load
refuses, or that plays differently, makes the patch breaking. The gate's verdict is
``compat check --baseline`` and ``compat verify`` on the corpus: breaking when either
says so.
"""

import json
import os
import subprocess
import sys
import textwrap

from autosave.coroutines.labels import base_label

RELEASE_1 = '''
import dataclasses
import enum

import attrs

import autosave


class Mood(enum.Enum):
    CALM = 1
    ANGRY = 2


class Terrain(enum.Enum):
    GRASS = "grass"
    ROCK = "rock"


@attrs.frozen
class Pos:
    x: int
    y: int


@attrs.define
class ItemTemplate:
    name: str
    price: int


SWORD = autosave.asset(ItemTemplate("sword", 10), "items/sword")
SHIELD = autosave.asset(ItemTemplate("shield", 7), "items/shield")
POTION = autosave.asset(ItemTemplate("potion", 2), "items/potion")


@attrs.define
class Npc:
    name: str
    hp: int = 10
    mood: Mood = Mood.CALM
    steps: int = 0
    pos: Pos | None = None


@attrs.define
class Merchant(Npc):
    stock: dict[str, int] = attrs.Factory(dict)
    coins: int = 0


@attrs.define(slots=False)
class Inventory:
    items: list = attrs.Factory(list)
    counts: dict[str, int] = attrs.Factory(dict)


@dataclasses.dataclass
class Quest:
    title: str
    progress: int = 0
    rewards: dict[str, int] = dataclasses.field(default_factory=dict)


class Stats:
    def __init__(self):
        self.kills = 0
        self.visited = []


@autosave.coroutine
def patrol(npc, route):
    for p in route:
        npc.pos = p
        npc.steps += 1
        yield f"{npc.name} at {p.x},{p.y}"
    npc.mood = Mood.ANGRY
    return npc.steps


@autosave.coroutine
def cutscene(world, who):
    yield "title"
    yield "wait"
    yield "wait"
    yield "wait"
    line = who + " speaks"
    yield line
    world.stats.visited.append(who)
    yield "end"


@autosave.coroutine
def haggle(merchant, item):
    offer = item.price
    while offer > item.price // 2:
        answer = yield offer
        if answer == "no":
            offer -= 1
        else:
            break
    merchant.coins += offer
    return offer


@autosave.coroutine
def shop(world, merchant):
    total = 0
    for item in [SWORD, SHIELD]:
        paid = yield from haggle(merchant, item)
        total += paid
        world.inventory.items.append(item)
        world.inventory.counts[item.name] = world.inventory.counts.get(item.name, 0) + 1
        merchant.stock[item.name] -= 1
    if total > 10:
        yield "big spender"
    else:
        yield "thanks"
    return total


@autosave.coroutine
def quest_script(world, quest):
    while quest.progress < 3:
        quest.progress += 1
        world.stats.kills += 1
        yield quest.title + " " + str(quest.progress)
    quest.rewards["gold"] = 5
    yield "done"


@autosave.save_root
@attrs.define
class World:
    npcs: list[Npc]
    inventory: Inventory
    quests: list[Quest]
    stats: Stats
    marks: dict[Pos, str]
    terrain: Terrain
    scripts: list = attrs.Factory(list)
    pending: dict = attrs.Factory(dict)
    results: dict = attrs.Factory(dict)
    log: list = attrs.Factory(list)


# -- the scenario (part of the game: a patch says what it means by patching it too) --

def new_world():
    guard = Npc("guard")
    tom = Merchant("tom", stock={"sword": 1, "shield": 2})
    world = World(npcs=[guard, tom], inventory=Inventory(items=[POTION]),
                  quests=[Quest("rats")], stats=Stats(), marks={Pos(1, 2): "well"},
                  terrain=Terrain.GRASS)
    world.scripts = [patrol(guard, [Pos(1, 0), Pos(2, 0), Pos(2, 1)]),
                     cutscene(world, "tom"), shop(world, tom),
                     quest_script(world, world.quests[0])]
    world.stats.best = 0          # an attribute set from outside its class
    return world


def respond(value):
    return "no" if isinstance(value, int) and value % 2 == 0 else "yes"


def advance(world, i):
    """One step of script i; False when it has finished."""
    if i in world.results:
        return False
    try:
        value = world.scripts[i].send(respond(world.pending.get(i)) if i in world.pending
                                      else None)
    except StopIteration as stop:
        world.results[i] = stop.value
        world.stats.last_done = i     # set from outside, in some saves only
        world.pending.pop(i, None)
        return False
    world.pending[i] = value
    world.log.append((i, value))
    return True


def play(steps):
    """A fresh world with script i advanced steps[i] times."""
    world = new_world()
    for i, k in enumerate(steps):
        for _ in range(k):
            advance(world, i)
    return world


def finish(world):
    for i in range(len(world.scripts)):
        while advance(world, i):
            pass
    return world.log, dict(world.results)


def npc_view(npc):
    out = {"class": type(npc).__name__, "name": npc.name, "hp": npc.hp,
           "mood": npc.mood.name, "steps": npc.steps,
           "pos": None if npc.pos is None else (npc.pos.x, npc.pos.y)}
    if isinstance(npc, Merchant):
        out["stock"] = dict(npc.stock)
        out["coins"] = npc.coins
    return out


def observe(world):
    return {"npcs": [npc_view(n) for n in world.npcs],
            "items": [i.name for i in world.inventory.items],
            "counts": dict(world.inventory.counts),
            "quests": [(q.title, q.progress, dict(q.rewards)) for q in world.quests],
            "stats": (world.stats.kills, list(world.stats.visited)),
            "marks": sorted(((p.x, p.y), v) for p, v in world.marks.items()),
            "terrain": world.terrain.name,
            "assets": [world.inventory.items[0] is POTION]}
'''

# How many steps each script takes to finish in release 1 (patrol 3 yields, cutscene
# 6, shop 4 with its haggles, quest 4), plus the step that ends it.
LENGTHS = (4, 7, 5, 5)
CORPUS = [tuple(min(k, n) for n in LENGTHS) for k in range(max(LENGTHS) + 1)]

MAKE_CORPUS = '''
import json, os, sys
import autosave, gtgame
from autosave.cli import main
assert main(["compat", "snapshot", "gtgame", "-o", "compat/1.0.json"]) == 0
os.makedirs("saves", exist_ok=True)
for k, steps in enumerate(json.loads(sys.argv[1])):
    autosave.save(f"saves/{k:02d}.sav", gtgame.play(steps))
'''

JUDGE = '''
import contextlib, io, json, sys
import autosave
from autosave.cli import main


def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return status, out.getvalue()


def play_save(gtgame, k, mapped, saves="saves"):
    with open(f"{saves}/{k:02d}.sav", "rb") as f:
        loaded = autosave.loads(f.read())
    fresh = gtgame.play(mapped)
    if gtgame.observe(loaded) != gtgame.observe(fresh):
        return f"data differ after the load: {gtgame.observe(loaded)} != {gtgame.observe(fresh)}"
    n, m = len(loaded.log), len(fresh.log)
    gtgame.finish(loaded)
    gtgame.finish(fresh)
    if loaded.log[n:] != fresh.log[m:] or loaded.results != fresh.results:
        return (f"plays differently: {loaded.log[n:]} {loaded.results} != "
                f"{fresh.log[m:]} {fresh.results}")
    if gtgame.observe(loaded) != gtgame.observe(fresh):
        return f"data differ at the end: {gtgame.observe(loaded)} != {gtgame.observe(fresh)}"
    return None


def truth(corpus, steps_map, saves="saves"):
    import gtgame
    bad = []
    for k, steps in enumerate(corpus):
        mapped = [steps_map.get(str(i), {}).get(str(s), s) for i, s in enumerate(steps)]
        if None in mapped:
            bad.append(f"save {k}: parked at a point the patch removed")
            continue
        try:
            problem = play_save(gtgame, k, mapped, saves)
        except Exception as e:
            problem = f"{type(e).__name__}: {e}"
        if problem:
            bad.append(f"save {k}: {problem}")
    return bad


def runs(saves):
    """Forward truth: every save of a newer build loads in this (older) build, and its
    data are observed and its scripts played to the end without an error."""
    import os
    import gtgame
    bad = []
    for name in sorted(os.listdir(saves)):
        try:
            with open(os.path.join(saves, name), "rb") as f:
                world = autosave.loads(f.read())
            gtgame.observe(world)
            gtgame.finish(world)
            gtgame.observe(world)
        except Exception as e:
            bad.append(f"{name}: {type(e).__name__}: {e}")
    return bad


if sys.argv[1] == "forward":
    # the older build (this directory) reading saves of the newer one
    print(json.dumps(runs(sys.argv[2])))
    raise SystemExit(0)
corpus, steps_map = json.loads(sys.argv[1]), json.loads(sys.argv[2])
check = run(["compat", "check", "gtgame", "--baseline", "compat/1.0.json", "--corpus",
             "saves", "--format", "json"])
verify = run(["compat", "verify", "gtgame", "--saves", "saves", "--format", "json"])
print(json.dumps({"check": check, "verify": verify, "truth": truth(corpus, steps_map)}))
'''


def env():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(["."] + [root] + (
        [e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.pop("AUTOSAVE_STRICT", None)
    return e


def python(cwd, code, *args):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd,
                          env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def apply(pairs, source=RELEASE_1):
    for old, new in pairs:
        assert source.count(old) == 1, f"the patch does not apply: {old!r}"
        source = source.replace(old, new)
    return source


def write_game(directory, source):
    (directory / "gtgame").mkdir(parents=True, exist_ok=True)
    (directory / "gtgame" / "__init__.py").write_text(source)


def release(directory):
    """Release 1 in ``directory``: its snapshot (compat/1.0.json) and the corpus (saves/)."""
    write_game(directory, RELEASE_1)
    python(directory, MAKE_CORPUS, json.dumps(CORPUS))


def judge(release_dir, directory, pairs, steps=None):
    """{"check": (status, json), "verify": (status, json), "truth": [what went wrong]}
    of a patch, judged in ``directory`` against release 1 in ``release_dir``."""
    (directory / "compat").mkdir(parents=True, exist_ok=True)
    (directory / "saves").mkdir(exist_ok=True)
    (directory / "compat" / "1.0.json").write_bytes(
        (release_dir / "compat" / "1.0.json").read_bytes())
    for save in (release_dir / "saves").iterdir():
        (directory / "saves" / save.name).write_bytes(save.read_bytes())
    write_game(directory, apply(pairs))
    steps = {str(i): {str(k): v for k, v in m.items()} for i, m in (steps or {}).items()}
    return json.loads(python(directory, JUDGE, json.dumps(CORPUS), json.dumps(steps)))


MAKE_NEWER_SAVES = '''
import json, os, sys
import autosave, gtgame
os.makedirs("newsaves", exist_ok=True)
for k, steps in enumerate(json.loads(sys.argv[1])):
    autosave.save(f"newsaves/{k:02d}.sav", gtgame.play(steps))
'''


def judge_forward(release_dir, directory, pairs):
    """Forward mode: {"check": [forward findings], "truth": [what went wrong]} of the
    older build (release 1, in ``release_dir``) reading saves the patched build makes.
    The truth here is weaker than a patch's: a save must load, be observed and play to
    its end without an error (what the older build makes of data it does not know is
    not compared)."""
    (directory / "compat").mkdir(parents=True, exist_ok=True)
    (directory / "compat" / "1.0.json").write_bytes(
        (release_dir / "compat" / "1.0.json").read_bytes())
    write_game(directory, apply(pairs))
    made = subprocess.run([sys.executable, "-c", textwrap.dedent(MAKE_NEWER_SAVES),
                           json.dumps(CORPUS)], cwd=directory, env=env(),
                          capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        return {"check": None, "truth": None, "why": made.stderr.strip().splitlines()[-1]}
    bad = json.loads(python(release_dir, JUDGE, "forward", str(directory / "newsaves")))
    done = subprocess.run([sys.executable, "-m", "autosave", "compat", "check", "gtgame",
                           "--baseline", "compat/1.0.json", "--forward", "--older-code",
                           str(release_dir), "--format", "json", "--config", "none.toml"],
                          cwd=directory, env=env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), done.stderr
    findings = [f for f in json.loads(done.stdout)["findings"] if f["forward"]]
    return {"check": findings, "truth": bad}


# -- the patches ---------------------------------------------------------------------------
# (id, breaks: what the developer knows the patch does to old saves, [(old, new)],
#  steps map or None, in the short CI form)

def _twins(n):
    return "".join('    yield "wait"\n' for _ in range(n))


WAITS = '    yield "title"\n' + _twins(3)
# the label release 1 gives its n-th `yield "wait"` (twins are numbered in order)
WAIT_LABEL = base_label((), "yield 'wait'")


def wait_label(n):
    return WAIT_LABEL if n == 1 else f"{WAIT_LABEL}#{n}"


def _pinned(*ns):
    """`yield "wait"` pinned to the label release 1 gives its n-th twin."""
    return "".join(f'    yield autosave.label("{wait_label(n)}", "wait")\n' for n in ns)

NPC_END = "    pos: Pos | None = None\n"
NEW_NPCS = ('    guard = Npc("guard")\n    tom = Merchant("tom", stock={"sword": 1, "shield": 2})\n')
MERCHANT_VIEW = '        out["coins"] = npc.coins\n'
SHIFT_AFTER_TITLE = {1: {k: k + 1 for k in range(2, 8)}}

PATCHES = [
    ("no-change", False, [], None, True),
    ("field-added-with-default", False,
     [(NPC_END, NPC_END + "    morale: int = 5\n")], None, False),
    ("field-added-no-default", True,
     [(NPC_END, NPC_END + "    faction: str = attrs.field(kw_only=True)\n"),
      (NEW_NPCS, '    guard = Npc("guard", faction="town")\n    tom = Merchant("tom", '
                 'faction="town", stock={"sword": 1, "shield": 2})\n'),
      ('"steps": npc.steps,', '"steps": npc.steps, "faction": npc.faction,')], None, False),
    ("field-added-no-default-fixed", False,
     [(NPC_END, NPC_END + '    faction: str = attrs.field(kw_only=True, default="town")\n'),
      (NEW_NPCS, '    guard = Npc("guard", faction="town")\n    tom = Merchant("tom", '
                 'faction="town", stock={"sword": 1, "shield": 2})\n'),
      ('"steps": npc.steps,', '"steps": npc.steps, "faction": npc.faction,')], None, False),
    ("subclass-field-added-no-default", True,
     [("    coins: int = 0\n", "    coins: int = 0\n    rep: int = attrs.field(kw_only=True)\n"),
      ('Merchant("tom", stock=', 'Merchant("tom", rep=3, stock='),
      (MERCHANT_VIEW, MERCHANT_VIEW + '        out["rep"] = npc.rep\n')], None, True),
    # hooks resolve per concrete class: Npc's hook upgrades Merchant records too
    ("base-version-bumped-hook-for-base-only", False,
     [(NPC_END, NPC_END + "    level: int = attrs.field(kw_only=True)\n"),
      ("@attrs.define\nclass Npc:", "@autosave.saveable(version=2)\n@attrs.define\nclass Npc:"),
      ("\n\n@attrs.define\nclass Merchant",
       "\n\n@autosave.upgrade('gtgame.Npc', from_version=1)\ndef npc_v1(fields):\n"
       "    fields['level'] = 1\n    return fields\n\n\n@attrs.define\nclass Merchant"),
      (NEW_NPCS, '    guard = Npc("guard", level=1)\n    tom = Merchant("tom", level=1, '
                 'stock={"sword": 1, "shield": 2})\n'),
      ('"steps": npc.steps,', '"steps": npc.steps, "level": npc.level,')], None, False),
    ("field-removed", False,
     [("    hp: int = 10\n", ""), ('"hp": npc.hp,', "")], None, False),
    ("field-renamed", True,
     [("    coins: int = 0\n", "    gold: int = 0\n"),
      ("merchant.coins += offer", "merchant.gold += offer"),
      (MERCHANT_VIEW, '        out["coins"] = npc.gold\n')], None, True),
    ("field-renamed-declared", False,
     [("    coins: int = 0\n",
       '    gold: int = attrs.field(default=0, metadata=autosave.renamed_from("coins"))\n'),
      ("merchant.coins += offer", "merchant.gold += offer"),
      (MERCHANT_VIEW, '        out["coins"] = npc.gold\n')], None, False),
    ("field-renamed-no-default", True,
     [("    coins: int = 0\n", "    gold: int = attrs.field(kw_only=True)\n"),
      ('Merchant("tom", stock=', 'Merchant("tom", gold=0, stock='),
      ("merchant.coins += offer", "merchant.gold += offer"),
      (MERCHANT_VIEW, '        out["coins"] = npc.gold\n')], None, False),
    ("field-type-changed", True,
     [("    stock: dict[str, int]", "    stock: dict[str, str]"),
      ('stock={"sword": 1, "shield": 2}', 'stock={"sword": "1", "shield": "2"}'),
      ("merchant.stock[item.name] -= 1",
       "merchant.stock[item.name] = str(int(merchant.stock[item.name]) - 1)")], None, False),
    ("field-type-changed-hook-forgets", True,
     [("    stock: dict[str, int]", "    stock: dict[str, str]"),
      ("@attrs.define\nclass Merchant", "@autosave.saveable(version=2)\n@attrs.define\nclass Merchant"),
      ("\n\n@attrs.define(slots=False)\nclass Inventory",
       "\n\n@autosave.upgrade('gtgame.Merchant', from_version=1)\ndef merchant_v1(fields):\n"
       "    fields['coins'] = int(fields.get('coins', 0))\n    return fields\n\n\n"
       "@attrs.define(slots=False)\nclass Inventory"),
      ('stock={"sword": 1, "shield": 2}', 'stock={"sword": "1", "shield": "2"}'),
      ("merchant.stock[item.name] -= 1",
       "merchant.stock[item.name] = str(int(merchant.stock[item.name]) - 1)")], None, True),
    ("field-type-changed-hook-converts", False,
     [("    stock: dict[str, int]", "    stock: dict[str, str]"),
      ("@attrs.define\nclass Merchant", "@autosave.saveable(version=2)\n@attrs.define\nclass Merchant"),
      ("\n\n@attrs.define(slots=False)\nclass Inventory",
       "\n\n@autosave.upgrade('gtgame.Merchant', from_version=1)\ndef merchant_v1(fields):\n"
       "    fields['stock'] = {k: str(v) for k, v in fields['stock'].items()}\n"
       "    return fields\n\n\n@attrs.define(slots=False)\nclass Inventory"),
      ('stock={"sword": 1, "shield": 2}', 'stock={"sword": "1", "shield": "2"}'),
      ("merchant.stock[item.name] -= 1",
       "merchant.stock[item.name] = str(int(merchant.stock[item.name]) - 1)")], None, False),
    ("plain-attribute-added", True,
     [("        self.visited = []\n", "        self.visited = []\n        self.streak = 0\n"),
      ('"stats": (world.stats.kills,', '"stats": (world.stats.streak, world.stats.kills,')],
     None, True),
    ("plain-attribute-added-class-default", False,
     [("class Stats:\n", "class Stats:\n    streak = 0\n\n"),
      ("        self.visited = []\n", "        self.visited = []\n        self.streak = 0\n"),
      ('"stats": (world.stats.kills,', '"stats": (world.stats.streak, world.stats.kills,')],
     None, False),
    ("enum-member-removed", True,
     [("    ANGRY = 2\n", ""), ("npc.mood = Mood.ANGRY", "npc.mood = Mood.CALM")], None, False),
    ("enum-member-added", False, [("    ANGRY = 2\n", "    ANGRY = 2\n    BORED = 3\n")],
     None, False),
    ("asset-id-changed", True, [('"items/shield"', '"items/buckler"')], None, False),
    ("class-renamed-with-alias", False,
     [("@dataclasses.dataclass\nclass Quest:",
       '@autosave.saveable(aliases=("gtgame.Quest",))\n@dataclasses.dataclass\nclass Mission:'),
      ("quests: list[Quest]", "quests: list[Mission]"), ('[Quest("rats")]', '[Mission("rats")]')],
     None, False),
    ("class-renamed", True,
     [("@dataclasses.dataclass\nclass Quest:", "@dataclasses.dataclass\nclass Mission:"),
      ("quests: list[Quest]", "quests: list[Mission]"), ('[Quest("rats")]', '[Mission("rats")]')],
     None, False),
    ("key-class-field-added", False, [("    x: int\n    y: int\n",
                                       "    x: int\n    y: int\n    z: int = 0\n")], None, False),
    ("version-bumped-without-hook", True,
     [("@dataclasses.dataclass\nclass Quest:",
       "@autosave.saveable(version=2)\n@dataclasses.dataclass\nclass Quest:")], None, False),
    ("dataclass-field-added", False,
     [("    progress: int = 0\n", '    progress: int = 0\n    giver: str = "elder"\n')],
     None, False),
    ("class-added", False, [("\n\n@autosave.save_root", "\n\n@attrs.define\nclass Tree:\n"
                                                        "    height: int = 1\n\n\n@autosave.save_root")],
     None, False),
    ("yield-inserted-before-twins", True, [(WAITS, '    yield "title"\n' + _twins(4))],
     SHIFT_AFTER_TITLE, True),
    ("yield-inserted-before-twins-distinct", False,
     [(WAITS, '    yield "title"\n    yield "pause"\n' + _twins(3))], SHIFT_AFTER_TITLE, False),
    ("yield-twin-removed", True, [(WAITS, '    yield "title"\n' + _twins(2))],
     {1: {3: None, 4: 3, 5: 4, 6: 5, 7: 6}}, False),
    # the twins the baseline had pinned to their labels: the new one is told apart
    ("yield-inserted-before-twins-pinned", False,
     [(WAITS, '    yield "title"\n' + _twins(1) + _pinned(1, 2, 3))], SHIFT_AFTER_TITLE, True),
    ("yield-inserted-after-twins-pinned", False,
     [(WAITS, '    yield "title"\n' + _pinned(1, 2, 3) + _twins(1))],
     {1: {5: 6, 6: 7, 7: 8}}, False),
    ("yield-inserted-between-twins-pinned", False,
     [(WAITS, '    yield "title"\n' + _pinned(1) + _twins(1) + _pinned(2, 3))],
     {1: {k: k + 1 for k in range(3, 8)}}, False),
    # pinned, the removed twin is named: saves parked there are refused, the rest play
    ("yield-twin-removed-pinned", True,
     [(WAITS, '    yield "title"\n' + _pinned(1, 3))],
     {1: {3: None, 4: 3, 5: 4, 6: 5, 7: 6}}, True),
    ("line-after-yield-reads-parameter", False,
     [("    yield line\n", '    yield line\n    if who == "nobody":\n        return\n')],
     None, False),
    ("coroutine-parameter-added-with-default", False,
     [("def patrol(npc, route):", "def patrol(npc, route, speed=1):"),
      ("        npc.steps += 1\n", "        npc.steps += speed\n")], None, True),
    ("coroutine-renamed-alias-kept", False,
     [("def patrol(npc, route):", "def walk(npc, route):"),
      ("    return npc.steps\n", "    return npc.steps\n\n\npatrol = walk\n")], None, True),
    ("coroutine-undecorated", True,
     [("@autosave.coroutine\ndef quest_script", "def quest_script")], None, False),
]

PATCHES += [
    ("base-version-bumped-fixed", False,
     [(NPC_END, NPC_END + "    level: int = attrs.field(kw_only=True, default=1)\n"),
      ("@attrs.define\nclass Npc:", "@autosave.saveable(version=2)\n@attrs.define\nclass Npc:"),
      ("\n\n@attrs.define\nclass Merchant",
       "\n\n@autosave.upgrade('gtgame.Npc', from_version=1)\ndef npc_v1(fields):\n"
       "    fields['level'] = 1\n    return fields\n\n\n@attrs.define\nclass Merchant"),
      (NEW_NPCS, '    guard = Npc("guard", level=1)\n    tom = Merchant("tom", level=1, '
                 'stock={"sword": 1, "shield": 2})\n'),
      ('"steps": npc.steps,', '"steps": npc.steps, "level": npc.level,')], None, False),
    ("subclass-field-added-default", False,
     [("    coins: int = 0\n",
       "    coins: int = 0\n    rep: int = attrs.field(kw_only=True, default=3)\n"),
      ('Merchant("tom", stock=', 'Merchant("tom", rep=3, stock='),
      (MERCHANT_VIEW, MERCHANT_VIEW + '        out["rep"] = npc.rep\n')], None, False),
    ("field-renamed-no-default-declared", False,
     [("    coins: int = 0\n", "    gold: int = attrs.field(kw_only=True, "
                              "metadata=autosave.renamed_from('coins'))\n"),
      ('Merchant("tom", stock=', 'Merchant("tom", gold=0, stock='),
      ("merchant.coins += offer", "merchant.gold += offer"),
      (MERCHANT_VIEW, '        out["coins"] = npc.gold\n')], None, False),
    ("asset-id-changed-old-id-kept", False,
     [('SHIELD = autosave.asset(ItemTemplate("shield", 7), "items/shield")',
       'SHIELD = autosave.asset(ItemTemplate("shield", 7), "items/buckler")\n'
       'autosave.asset(SHIELD, "items/shield")')], None, False),
    ("version-bumped-hook-added", False,
     [("@dataclasses.dataclass\nclass Quest:",
       "@autosave.saveable(version=2)\n@dataclasses.dataclass\nclass Quest:"),
      ("\n\nclass Stats:", "\n\n@autosave.upgrade('gtgame.Quest', from_version=1)\n"
                          "def quest_v1(fields):\n    return fields\n\n\nclass Stats:")],
     None, False),
]

# A breaking patch, the rule of the finding whose *first* fix is applied, what that fix
# says, and the patch that applies it as written (it must load and play right, and the
# gate must say so).
FIXES = [
    ("field-added-no-default", "FIELD_ADDED_NO_DEFAULT", "give faction a default",
     "field-added-no-default-fixed"),
    ("subclass-field-added-no-default", "FIELD_ADDED_NO_DEFAULT", "give rep a default",
     "subclass-field-added-default"),
    ("field-renamed", "FIELD_PROBABLY_RENAMED",
     "declare the old name: gold = attrs.field(..., metadata=autosave.renamed_from('coins'))",
     "field-renamed-declared"),
    ("field-renamed-no-default", "FIELD_PROBABLY_RENAMED",
     "declare the old name: gold = attrs.field(..., metadata=autosave.renamed_from('coins'))",
     "field-renamed-no-default-declared"),
    ("field-type-changed", "FIELD_TYPE_CHANGED",
     "bump the version of gtgame.Merchant and add @autosave.upgrade('gtgame.Merchant', "
     "from_version=1) converting fields['stock']", "field-type-changed-hook-converts"),
    ("plain-attribute-added", "ATTRIBUTE_ADDED_NO_DEFAULT",
     "give it a class-level default in the body of gtgame.Stats (streak = <its initial "
     "value>", "plain-attribute-added-class-default"),
    ("asset-id-changed", "ASSET_REMOVED", "keep registering autosave.asset(obj, "
     "'items/shield')", "asset-id-changed-old-id-kept"),
    ("version-bumped-without-hook", "UPGRADE_MISSING",
     "add @autosave.upgrade('gtgame.Quest', from_version=1)", "version-bumped-hook-added"),
    ("yield-inserted-before-twins", "COROUTINE_TWINS_CHANGED",
     "pin the labels saves may be parked at: write the identical `yield 'wait'` the "
     "baseline had, in their order, as `yield autosave.label(", 
     "yield-inserted-before-twins-pinned"),
    ("class-renamed", "CLASS_REMOVED", "keep the class, or add aliases=('gtgame.Quest',)",
     "class-renamed-with-alias"),
]

# In-flight differences no schema can decide: each changes how a save parked in the
# middle plays on (the truth differs), so the gate must not be silent: it warns with
# the rule named, for a reviewer. (id, rule, [(old, new)], steps map)
CUTSCENE_TAIL = ('    line = who + " speaks"\n    yield line\n'
                 '    world.stats.visited.append(who)\n    yield "end"\n')
WARNED = [
    ("loop-bound-changed", "COROUTINE_LOOP_CHANGED",
     [("while quest.progress < 3:", "while quest.progress < 4:")], {3: {4: 5, 5: 6}}),
    ("yields-reordered", "COROUTINE_YIELDS_REORDERED",
     [(CUTSCENE_TAIL, '    line = who + " speaks"\n    yield "end"\n'
                      '    world.stats.visited.append(who)\n    yield line\n')],
     {1: {5: 6, 6: 5}}),
    ("local-from-upgraded-field", "COROUTINE_LOCAL_FROM_UPGRADED",
     [("@attrs.define\nclass ItemTemplate:",
       "@autosave.saveable(version=2)\n@attrs.define\nclass ItemTemplate:"),
      ('SWORD = autosave.asset(ItemTemplate("sword", 10)',
       "@autosave.upgrade('gtgame.ItemTemplate', from_version=1)\ndef cents(fields):\n"
       "    fields['price'] *= 100\n    return fields\n\n\n"
       'SWORD = autosave.asset(ItemTemplate("sword", 1000)'),
      ('ItemTemplate("shield", 7)', 'ItemTemplate("shield", 700)'),
      ('ItemTemplate("potion", 2)', 'ItemTemplate("potion", 200)'),
      ("    merchant.coins += offer\n", "    merchant.coins += offer // 100\n"),
      ("        if answer == \"no\":\n            offer -= 1\n",
       "        if answer == \"no\":\n            offer -= 100\n")], None),
]

# Findings a patch must also produce (besides its verdict): what the gate says about it.
ALSO_REPORTS = {
    "yield-twin-removed-pinned": "COROUTINE_LABEL_REMOVED",
    "yield-inserted-before-twins-pinned": "COROUTINE_LABEL_ADDED",
    "base-version-bumped-hook-for-base-only": "FIELD_ADDED",
    "field-type-changed-hook-forgets": "FIELD_TYPE_CONVERTED_BY_HOOK",
    "coroutine-renamed-alias-kept": "COROUTINE_RENAMED",
    "field-renamed-declared": "FIELD_RENAMED",
    "plain-attribute-added-class-default": "FIELD_ADDED",
}

PATCHES += [
    ("plain-attribute-set-by-a-method", True,
     [("        self.visited = []\n",
       "        self.visited = []\n\n    def record(self, who):\n        self.last = who\n"
       "        self.visited.append(who)\n"),
      ("    world.stats.visited.append(who)\n", "    world.stats.record(who)\n"),
      ('"stats": (world.stats.kills,',
       '"stats": (getattr(world.stats, "last", None) if world.stats.visited else "-", '
       'world.stats.kills,')], None, False),
]

PATCHES += [
    # a subclass with a version of its own keeps its own hooks: Npc's do not run for it
    ("base-version-bumped-subclass-pinned", True,
     [(NPC_END, NPC_END + "    level: int = attrs.field(kw_only=True)\n"),
      ("@attrs.define\nclass Npc:", "@autosave.saveable(version=2)\n@attrs.define\nclass Npc:"),
      ("\n\n@attrs.define\nclass Merchant",
       "\n\n@autosave.upgrade('gtgame.Npc', from_version=1)\ndef npc_v1(fields):\n"
       "    fields['level'] = 1\n    return fields\n\n\n@autosave.saveable(version=1)\n"
       "@attrs.define\nclass Merchant"),
      (NEW_NPCS, '    guard = Npc("guard", level=1)\n    tom = Merchant("tom", level=1, '
                 'stock={"sword": 1, "shield": 2})\n'),
      ('"steps": npc.steps,', '"steps": npc.steps, "level": npc.level,')], None, False),
]
ALSO_REPORTS["base-version-bumped-subclass-pinned"] = "UPGRADE_NOT_INHERITED"

# Attributes set from outside their class are known from the corpus (check --corpus).
PATCHES += [
    ("plain-attribute-set-outside-moved-into-init", False,
     [("    world.stats.best = 0          # an attribute set from outside its class\n", ""),
      ("        self.visited = []\n", "        self.visited = []\n        self.best = 0\n"),
      ('"stats": (world.stats.kills,', '"stats": (world.stats.best, world.stats.kills,')],
     None, True),
    ("plain-attribute-set-outside-in-some-saves-moved-into-init", True,
     [("        self.visited = []\n", "        self.visited = []\n        self.last_done = None\n"),
      ('"stats": (world.stats.kills,', '"stats": (world.stats.last_done, world.stats.kills,')],
     None, True),
    ("plain-attribute-set-outside-in-some-saves-class-default", False,
     [("class Stats:\n", "class Stats:\n    last_done = None\n\n"),
      ("        self.visited = []\n", "        self.visited = []\n        self.last_done = None\n"),
      ('"stats": (world.stats.kills,', '"stats": (world.stats.last_done, world.stats.kills,')],
     None, False),
]
FIXES.append(("plain-attribute-set-outside-in-some-saves-moved-into-init",
              "ATTRIBUTE_ADDED_NO_DEFAULT", "give it a class-level default in the body of "
              "gtgame.Stats (last_done = <its initial value>",
              "plain-attribute-set-outside-in-some-saves-class-default"))
