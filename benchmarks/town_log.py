"""Delta checkpoints on a second workload, shaped unlike delta_log.py's agents: a town.

    python benchmarks/town_log.py --dir /dev/shm               # 100k objects, 3 rounds
    python benchmarks/town_log.py --objects 10000 100000 --rounds 5

The town (about ``--objects`` objects, counted as graphs.count_objects counts them):

* citizens, plain ``__dict__`` objects: a name, an age, gold, a ``Job`` and a ``Mood``
  (enums), a home (a Building, shared by several citizens, which lists them back: cycles),
  a slotted ``Tile`` they stand on (shared), a set of friends' ids and a dict of skills
  (str -> list of ints);
* tiles, ``__slots__`` objects on a grid, each pointing at the building on it, if any;
* buildings, plain objects: a kind (an enum), their residents (a list of citizens), a
  stock (str -> list of ints);
* a market (str -> list of prices), a town ledger (a list of (tick, str) tuples) and a
  few running ``@autosave.coroutine`` peddlers, each walking the citizens with its
  frame's locals changing every tick.

Between checkpoints a fraction of the objects changes: citizens' gold, mood and age,
one skill list, their friends, the tile they move to, their home's stock; a tenth of
that fraction of citizens dies (removed from the town, their home and the friend sets
that named them) and as many are born (a new citizen, its set, dict and lists, moved
into a home). The peddlers advance every tick.

Reported per size and change, for one chain (a whole checkpoint and ``full_every``
deltas, ``checkpoint_every=1``, a flush after each step):

* **growth**: the file's growth per delta checkpoint against **alone**, the changed
  objects encoded alone: ``autosave.dumps`` of one tuple per changed or new object (its
  own fields, references to other town objects replaced by their ids) and the ids of
  the dead (issue 36's bound at 1% on 100k: growth at most 4x alone + a few KiB);
* **step / dumps** (median of the chain's per-step ratios, dumps timed just before the
  step; bound: at most 1.0x), **flush**, and **step + flush**;
* **restore / loads**: every checkpoint of the chain restored in a log opened anew (no
  cache: each a chain rebuilt from the whole checkpoint), against ``autosave.loads`` of
  the same bytes timed just after, the median of RESTORES such pairs per checkpoint;
  the median over the chain and its worst (the bound: at most 1.5x for chains up to
  the snapshot interval);
* **equal**: every checkpoint of the chain restored and saved again gives the bytes
  ``autosave.dumps`` gave at its step (checked, the run fails otherwise).

Wall clock, the garbage collector on (a game's). Each size and change runs ``--rounds``
times; the table gives the median of the rounds and, for ratios and times, their range.
The machine these are run on is shared: read the medians, not single rounds.
"""

import argparse
import enum
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import autosave
from autosave.format import kernels

sys.path.insert(0, str(Path(__file__).parent))
from delta_log import spread  # noqa: E402
from graphs import count_objects  # noqa: E402

autosave.allow(__name__)

SKILLS = ("farming", "smithing", "trade", "lore", "fencing", "cooking")
GOODS = ("grain", "iron", "cloth", "salt", "wine", "wool", "timber", "spice")


class Job(enum.Enum):
    FARMER = "farmer"
    SMITH = "smith"
    TRADER = "trader"
    GUARD = "guard"
    IDLE = "idle"


class Mood(enum.IntEnum):
    GRIM = 0
    CALM = 1
    GLAD = 2


class Kind(enum.Enum):
    HOUSE = 1
    FARM = 2
    FORGE = 3
    SHOP = 4


class Tile:
    __slots__ = ("x", "y", "ground", "building", "traffic")

    def __init__(self, x, y, ground):
        self.x, self.y, self.ground = x, y, ground
        self.building = None
        self.traffic = 0


class Building:
    def __init__(self, bid, kind, tile, rng):
        self.bid, self.kind, self.tile = bid, kind, tile
        self.residents = []
        self.stock = {g: [rng.randrange(20) for _ in range(3)]
                      for g in rng.sample(GOODS, 2)}
        tile.building = self


class Citizen:
    def __init__(self, cid, rng, home, tile):
        self.cid = cid
        self.name = f"citizen-{cid}"
        self.age = rng.randrange(16, 70)
        self.gold = round(rng.random() * 100, 2)
        self.job = rng.choice(list(Job))
        self.mood = Mood.CALM
        self.home, self.tile = home, tile
        self.friends = set()
        self.skills = {s: [rng.randrange(10) for _ in range(3)]
                       for s in rng.sample(SKILLS, 2)}
        home.residents.append(self)


@autosave.coroutine
def peddler(town, start, stride):
    """Walks the citizens, selling to each: its frame (an index, a purse, the last
    buyer) changes every tick."""
    purse = 0.0
    i = start
    while True:
        citizens = town["citizens"]
        if citizens:
            ids = town["ids"]
            buyer = citizens.get(ids[i % len(ids)])
            if buyer is not None and buyer.gold > 1:
                buyer.gold = round(buyer.gold - 1, 2)
                purse += 1
        i += stride
        yield purse


# Objects per citizen: itself, its friends set, its skills dict and two lists; a tile
# each; a fifth of a building (itself, residents, stock and two lists) each: ~7.
PER_CITIZEN = 7


def town(objects, seed=3):
    rng = random.Random(seed)
    people = max(10, objects // PER_CITIZEN)
    side = int(people ** 0.5) + 1
    tiles = [Tile(x, y, rng.choice(("grass", "mud", "stone")))
             for y in range(side) for x in range(side)]
    free = tiles[:]
    rng.shuffle(free)
    buildings = [Building(b, rng.choice(list(Kind)), free.pop(), rng)
                 for b in range(max(2, people // 5))]
    citizens = {}
    for cid in range(people):
        citizens[cid] = Citizen(cid, rng, rng.choice(buildings), rng.choice(tiles))
    ids = list(citizens)
    for c in citizens.values():
        c.friends.update(rng.sample(ids, 3))
    state = {
        "tick": 0, "next_id": people, "citizens": citizens, "ids": ids,
        "tiles": tiles, "buildings": buildings,
        "market": {g: [round(rng.random() * 10, 2) for _ in range(8)] for g in GOODS},
        "ledger": [(0, "founded")],
    }
    state["peddlers"] = [peddler(state, k * 7, 13 + k) for k in range(4)]
    for p in state["peddlers"]:
        next(p)
    return state


class Changes:
    """What one tick changed: the objects (by identity) and the ids of the dead."""

    def __init__(self):
        self.objects = {}
        self.dead = []

    def add(self, obj):
        self.objects[id(obj)] = obj


def _move_in(state, changes, rng, citizen_cid=None):
    cid = state["next_id"]
    state["next_id"] += 1
    home = rng.choice(state["buildings"])
    c = Citizen(cid, rng, home, rng.choice(state["tiles"]))
    c.friends.update(rng.sample(state["ids"], 2))
    state["citizens"][cid] = c
    state["ids"].append(cid)
    changes.add(c), changes.add(c.friends), changes.add(c.skills)
    for lst in c.skills.values():
        changes.add(lst)
    changes.add(home.residents), changes.add(state["citizens"]), changes.add(state["ids"])


def _die(state, changes, rng):
    ids = state["ids"]
    cid = ids.pop(rng.randrange(len(ids)))
    c = state["citizens"].pop(cid)
    c.home.residents.remove(c)
    for fid in c.friends:
        friend = state["citizens"].get(fid)
        if friend is not None and cid in friend.friends:
            friend.friends.discard(cid)
            changes.add(friend.friends)
    changes.dead.append(cid)
    changes.add(c.home.residents), changes.add(state["citizens"]), changes.add(ids)


def change(state, fraction, rng):
    """Change about ``fraction`` of the town's objects (each changed citizen changes
    about PER_CITIZEN of them: itself, a skill list, its friends, its tile and the one
    it left, its home's stock), plus births and deaths."""
    changes = Changes()
    citizens = state["citizens"]
    ids = state["ids"]
    for cid in rng.sample(ids, max(1, int(len(ids) * fraction))):
        c = citizens[cid]
        c.gold = round(c.gold + rng.random() * 5 - 2, 2)
        c.mood = rng.choice(list(Mood))
        c.age += 1
        if rng.random() < 0.2:
            c.job = rng.choice(list(Job))
        skill = rng.choice(list(c.skills))
        c.skills[skill][rng.randrange(len(c.skills[skill]))] += 1
        changes.add(c.skills[skill])
        c.friends.add(rng.choice(ids))
        changes.add(c.friends)
        c.tile.traffic -= 1
        changes.add(c.tile)
        c.tile = rng.choice(state["tiles"])
        c.tile.traffic += 1
        changes.add(c.tile)
        stock = c.home.stock[rng.choice(list(c.home.stock))]
        stock[rng.randrange(len(stock))] = rng.randrange(20)
        changes.add(stock)
        changes.add(c)
    for _ in range(max(1, int(len(ids) * fraction / 10))):
        _die(state, changes, rng)
        _move_in(state, changes, rng)
    prices = state["market"][rng.choice(GOODS)]
    prices[rng.randrange(len(prices))] = round(rng.random() * 10, 2)
    changes.add(prices)
    state["tick"] += 1
    state["ledger"].append((state["tick"], f"tick {state['tick']}: {len(changes.dead)} died"))
    changes.add(state["ledger"]), changes.add(state)
    for p in state["peddlers"]:
        p.send(None)
    return changes


def _ref(obj):
    """A reference to another town object, as its id."""
    if isinstance(obj, Citizen):
        return ("c", obj.cid)
    if isinstance(obj, Building):
        return ("b", obj.bid)
    if isinstance(obj, Tile):
        return ("t", obj.x, obj.y)
    return obj


def alone(changes):
    """``autosave.dumps`` of the changed objects encoded alone: each object's own
    fields, references to other town objects as ids, and the ids of the dead."""
    rows = []
    for obj in changes.objects.values():
        if isinstance(obj, Citizen):
            rows.append((obj.cid, obj.name, obj.age, obj.gold, obj.job, obj.mood,
                         _ref(obj.home), _ref(obj.tile)))
        elif isinstance(obj, Tile):
            rows.append((obj.x, obj.y, obj.ground, _ref(obj.building), obj.traffic))
        elif isinstance(obj, dict) and "citizens" in obj:     # the town: its tick
            rows.append((obj["tick"], obj["next_id"]))
        elif isinstance(obj, dict) and obj and isinstance(next(iter(obj.values())),
                                                          Citizen):
            rows.append(None)                 # the citizens dict: its keys are the ids
        elif isinstance(obj, dict):           # a skills dict (new citizens only)
            rows.append(list(obj))
        elif isinstance(obj, list) and obj and isinstance(obj[0], Citizen):
            rows.append([c.cid for c in obj])
        elif isinstance(obj, list) and obj and isinstance(obj[0], tuple):
            rows.append(obj[-1])              # the ledger: the entry it gained
        elif isinstance(obj, list) and len(obj) > 1000:
            rows.append(None)                 # the ids: the dead and the born say it
        else:
            rows.append(obj)                  # sets and lists of plain values
    born = [o.cid for o in changes.objects.values() if isinstance(o, Citizen)]
    return len(autosave.dumps((rows, changes.dead, born)))


RESTORES = 3            # restore / loads pairs per checkpoint (their median)


def timed(fn, *args):
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def run(directory, objects, fraction, full_every, seed=1):
    # here, not at the top: flush_log.py imports the workload into older builds
    from autosave.log.chain import is_delta, read_checkpoint

    rng = random.Random(seed)
    state = town(objects)
    counted = count_objects(state)
    path = Path(directory) / f"town-{objects}-{fraction}.log"
    path.unlink(missing_ok=True)
    steps, flushes, growth, alones, dumps_t, ratios, saved = [], [], [], [], [], [], {}
    touched = []
    with autosave.CheckpointLog.open(path, checkpoint_every=1, full_every=full_every) as log:
        log.enter("town")
        for k in range(full_every + 1):
            changes = change(state, fraction, rng) if k else None
            took, data = timed(autosave.dumps, state)
            dumps_t.append(took)
            before = log.file.end
            took, position = timed(log.step, state)
            steps.append(took)
            ratios.append(took / dumps_t[-1])
            took, _ = timed(log.flush)
            flushes.append(took)
            if changes is not None:
                growth.append(log.file.end - before)
                alones.append(alone(changes))
                touched.append(len(changes.objects) + len(changes.dead))
            saved[position.step] = data
        payloads = [log.file.read(log.records[0].checkpoints[s])[1]
                    for s in range(full_every + 1)]
    restore_ratios = []
    for k in range(full_every + 1):
        pairs = []
        for run_ in range(RESTORES):      # alternating, so that a busy machine skews both
            gc.collect()
            with autosave.CheckpointLog.open(path, writable=False) as log:
                took, restored = timed(log.restore, autosave.Position("town", k, 0))
                if not run_:
                    assert read_checkpoint(log.file,
                                           log.records[0].checkpoints[k]) == saved[k]
            if not run_ and autosave.dumps(restored) != saved[k]:
                raise AssertionError(f"checkpoint {k} restores a state whose bytes "
                                     f"differ from the dumps taken at its step")
            del restored
            gc.collect()
            loads_took, restored = timed(autosave.loads, saved[k])
            del restored
            pairs.append(took / loads_took)
        restore_ratios.append(statistics.median(pairs))
    return {
        "objects": objects, "counted": counted, "change": fraction,
        "deltas": sum(map(is_delta, payloads[1:])),
        "save_bytes": len(saved[full_every]), "growth": statistics.mean(growth),
        "alone": statistics.mean(alones), "touched": statistics.mean(touched),
        "growth_ratio": statistics.mean(growth) / statistics.mean(alones),
        "step": statistics.median(steps[1:]), "dumps": statistics.median(dumps_t),
        "step_ratio": statistics.median(ratios[1:]),
        "flush": statistics.median(flushes[1:]),
        "step_flush": statistics.median(map(sum, zip(steps[1:], flushes[1:]))),
        "restore_ratio": statistics.median(restore_ratios[1:]),
        "restore_worst": max(restore_ratios[1:]),
        "restore_last": restore_ratios[-1], "restore_chain": restore_ratios,
        "equal": full_every + 1,
    }


def table(rows):
    out = ["| objects | change | objects changed | deltas | save | growth / ckpt | alone | growth / alone "
           "| step / dumps | dumps ms | flush ms | step + flush ms | restore / loads "
           "(median of chain) | worst of chain | equal |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for rounds in rows:
        r = {key: statistics.median(x[key] for x in rounds) for key in rounds[0]
             if key != "restore_chain"}
        out.append(
            f"| {r['counted']:,.0f} | {r['change']:.0%} | {r['touched']:,.0f} "
            f"| {r['deltas']:.0f} "
            f"| {r['save_bytes']:,.0f} B | {r['growth']:,.0f} B | {r['alone']:,.0f} B "
            f"| {spread([x['growth_ratio'] for x in rounds], '{:.2f}x')} "
            f"| {spread([x['step_ratio'] for x in rounds], '{:.2f}x')} "
            f"| {r['dumps'] * 1e3:.1f} "
            f"| {spread([x['flush'] * 1e3 for x in rounds], '{:.1f}')} "
            f"| {spread([x['step_flush'] * 1e3 for x in rounds], '{:.1f}')} "
            f"| {spread([x['restore_ratio'] for x in rounds], '{:.2f}x')} "
            f"| {spread([x['restore_worst'] for x in rounds], '{:.2f}x')} "
            f"| {min(x['equal'] for x in rounds)}/{r['equal']:.0f} |")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, nargs="*", default=[100_000])
    parser.add_argument("--changes", type=float, nargs="*", default=[0.01, 0.1, 1.0])
    parser.add_argument("--full-every", type=int, default=16)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for objects in args.objects:
            for fraction in args.changes:
                rounds = []
                for i in range(args.rounds):
                    rounds.append(run(tmp, objects, fraction, args.full_every, seed=i + 1))
                    print(table([rounds[-1:]]).splitlines()[-1], file=sys.stderr,
                          flush=True)
                    print("  restore / loads by checkpoint:", " ".join(
                        f"{x:.2f}" for x in rounds[-1]["restore_chain"]), file=sys.stderr)
                rows.append(rounds)
    print(f"Python {sys.version.split()[0]}, full_every={args.full_every}, "
          f"{args.rounds} rounds (median, range), {kernels.IMPLEMENTATION} loops, "
          f"wall clock on a shared machine\n")
    print(table(rows))


if __name__ == "__main__":
    main()
