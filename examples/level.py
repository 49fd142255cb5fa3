"""autosave demo: save a running game level, load it, and check that nothing changed.

    python examples/level.py

The game (examples/game/) is ordinary code: attrs classes and plain classes, NPCs that
reference each other in cycles, squads that share members, one random.Random driving
everything, static sprites and item templates. Nothing in it knows how to save itself;
the only autosave lines are `@autosave.save_root` on Level, the `autosave.asset(...)`
registrations of the static data and one field marked `autosave.transient`.

This program plays the level for a while, saves it to a file, loads it back, then
keeps playing both the loaded level and the original. If the save captured everything
(positions, plans, who targets whom, the RNG mid-sequence), the two stay identical
tick for tick. It finishes with a size and speed comparison against pickle.
"""

import os
import pickle
import sys
import tempfile
import time

import autosave
from game import asset_references, build_level, fingerprint, step

SEED = 7
NPCS = 300
TICKS_BEFORE_SAVE = 150
TICKS_AFTER_LOAD = 150


def main():
    level = build_level(seed=SEED, n_npcs=NPCS)
    for _ in range(TICKS_BEFORE_SAVE):
        step(level)
    print(f"Built a level with {len(level.npcs)} NPCs in {len(level.squads)} squads "
          f"and played {level.tick} ticks.")

    # -- save and load through a real file ------------------------------------------------
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "level.sav")
        started = time.perf_counter()
        size = autosave.save(path, level)        # atomic write: temp file, fsync, rename
        save_ms = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        loaded = autosave.load(path)
        load_ms = (time.perf_counter() - started) * 1000
    print(f"Saved to a file: {size:,} bytes in {save_ms:.1f} ms; loaded in {load_ms:.1f} ms.")
    timings = compare_with_pickle(level)         # same level, same moment; printed at the end

    # -- the loaded level is the level we saved -------------------------------------------
    if fingerprint(loaded) != fingerprint(level):
        return fail("the loaded level differs from the one that was saved",
                    fingerprint(level), fingerprint(loaded))

    # Static data comes back as the very objects the game registered, not copies.
    refs = list(asset_references(loaded))
    strays = [name for table, name, obj in refs if obj is not table[name]]
    if strays:
        print(f"FAILED: {len(strays)} asset references were loaded as copies, "
              f"e.g. {strays[:3]}", file=sys.stderr)
        return 1
    print(f"State identical after load; all {len(refs):,} asset references are the "
          f"registered objects themselves.")

    # Fields marked autosave.transient are not saved: they come back as their default.
    if loaded.last_step_seconds != 0.0:
        print(f"FAILED: the transient field last_step_seconds was saved "
              f"(loaded {loaded.last_step_seconds!r}, expected the default 0.0)", file=sys.stderr)
        return 1

    # -- keep playing both: the original and the loaded copy ------------------------------
    for _ in range(TICKS_AFTER_LOAD):
        step(level)
        step(loaded)
    if fingerprint(loaded) != fingerprint(level):
        return fail(f"the loaded level diverged from the original within "
                    f"{TICKS_AFTER_LOAD} ticks", fingerprint(level), fingerprint(loaded))
    kills = sum(entry[1] == "kill" for entry in level.log)
    print(f"Played {TICKS_AFTER_LOAD} more ticks on the original and on the loaded level: "
          f"identical at tick {level.tick} (next NPC id {level.next_id}, "
          f"{kills} kills in the last {len(level.log)} log entries).")

    print()
    print("\n".join(timings))
    return 0


def compare_with_pickle(level):
    """In-memory save and load times (best of 5) and sizes, autosave next to pickle."""
    # pickle recurses once per level of nesting, and NPC -> target -> target ... chains
    # run deep. autosave walks iteratively and needs no such setting.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 50_000))

    a_data = autosave.dumps(level)
    p_data = pickle.dumps(level, protocol=5)
    rows = [
        ("save", best_ms(autosave.dumps, level), best_ms(pickle.dumps, level, 5)),
        ("load", best_ms(autosave.loads, a_data), best_ms(pickle.loads, p_data)),
    ]
    lines = [f"{'in memory':10} {'autosave':>12} {'pickle 5':>12} {'autosave/pickle':>16}"]
    for what, a, p in rows:
        lines.append(f"{what:10} {a:>9.1f} ms {p:>9.1f} ms {a / p:>15.2f}x")
    lines.append(f"{'size':10} {len(a_data):>10,} B {len(p_data):>10,} B "
                 f"{len(a_data) / len(p_data):>15.2f}x")
    lines.append("(pickle also stores the sprites and item templates and loads copies of them;\n"
                 " it runs whatever code the bytes name, so it is unsafe for files players share.)")
    return lines


def best_ms(fn, *args, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - started)
    return best * 1000


PARTS = ["tick", "next NPC id", "RNG state", "NPCs", "squads", "NPCs by id", "event log",
         "event log size"]


def fail(message, expected, actual):
    print(f"FAILED: {message}.", file=sys.stderr)
    for name, a, b in zip(PARTS, expected, actual):
        if a != b:
            print(f"  first difference in {name}: {first_difference(a, b)}", file=sys.stderr)
            break
    return 1


def first_difference(a, b, where=""):
    """Where two nested tuples first differ, as '[3][5]: 41 != 40'."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{i}]")
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
    return f"{where or 'value'}: {a!r:.200} (original) != {b!r:.200} (loaded)"


if __name__ == "__main__":
    sys.exit(main())
