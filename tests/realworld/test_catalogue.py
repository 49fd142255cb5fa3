"""The catalogue (catalogue.py): every kind of object games and simulations keep, built
and saved in one process, loaded in a fresh one with another hash seed, used on both
sides; the outcomes must be equal. The same objects go through pickle, and autosave
must round-trip every entry pickle does. Entries pickle cannot round-trip carry
"pickle-fails" in their test id; that label is checked, not assumed.

Two child processes run the whole catalogue: one saves, one loads.
"""

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from catalogue import ENTRIES

HERE = Path(__file__).parent


def _id(e):
    return e.name + ("" if e.pickle else " [pickle-fails]")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    import pickle
    path = str(tmp_path_factory.mktemp("catalogue") / "saved")
    seeds = random.sample(range(1, 2 ** 32 - 1), 2)     # two different hash seeds
    for mode, seed in zip(("save", "load"), seeds):
        env = dict(os.environ, PYTHONHASHSEED=str(seed),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])))
        code = textwrap.dedent(f"""
            import catalogue
            catalogue.main({mode!r}, {path!r})
        """)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"the {mode} process (PYTHONHASHSEED={seed}) failed:\n{done.stderr}"
    with open(path, "rb") as f:
        saved = pickle.load(f)
    with open(path + ".loaded", "rb") as f:
        loaded = pickle.load(f)
    return saved, loaded, seeds


def typed(value):
    """The value with the type of every part, so 1, 1.0 and True stay apart."""
    if type(value) in (list, tuple):
        return (type(value).__name__, *map(typed, value))
    if type(value) is dict:
        return ("dict", *((typed(k), typed(v)) for k, v in value.items()))
    if type(value) in (set, frozenset):
        return (type(value).__name__, frozenset(map(typed, value)))
    return (type(value).__name__, value)


def round_trips(saved, loaded, side):
    """Did ``side`` give back an object whose use equals the original's?"""
    return (saved[side][0] == "ok" and saved["used"][0] == "ok" and side in loaded
            and loaded[side][0] == "ok" and typed(loaded[side][1]) == typed(saved["used"][1]))


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_an_entry_saved_in_one_process_runs_on_alike_in_another(entry, outcomes):
    saved_all, loaded_all, seeds = outcomes
    saved = saved_all[entry.name]
    if "skip" in saved:
        pytest.skip(saved["skip"])
    where = f"{entry.name} (hash seeds {seeds[0]} then {seeds[1]})"
    assert "build" not in saved, f"{where}: the catalogue's build failed: {saved['build'][1]}"
    assert saved["used"][0] == "ok", f"{where}: use() failed before saving: {saved['used'][1]}"
    assert saved["autosave"][0] == "ok", f"{where}: autosave.dumps failed: {saved['autosave'][1]}"
    loaded = loaded_all[entry.name]
    assert loaded["autosave"][0] == "ok", f"{where}: the load or use() failed: {loaded['autosave'][1]}"
    assert typed(loaded["autosave"][1]) == typed(saved["used"][1]), where
    assert entry.resaves_alike is None or loaded["same_bytes"] == ("ok", entry.resaves_alike), (
        f"{where}: saving the loaded object {'changed' if entry.resaves_alike else 'kept'} "
        f"its bytes; fix its resaves_alike= label")
    pickle_ok = round_trips(saved, loaded, "pickle")
    assert pickle_ok == entry.pickle, (
        f"{where}: pickle {'round-trips' if pickle_ok else 'does not round-trip'} it; "
        f"fix its pickle= label (pickle: {saved['pickle']}, {loaded.get('pickle')})")


def test_autosave_round_trips_every_entry_pickle_does(outcomes, capsys):
    saved_all, loaded_all, _ = outcomes
    ran = [e.name for e in ENTRIES if "skip" not in saved_all[e.name]]
    by_pickle = {n for n in ran if round_trips(saved_all[n], loaded_all.get(n, {}), "pickle")}
    by_autosave = {n for n in ran if round_trips(saved_all[n], loaded_all.get(n, {}), "autosave")}
    with capsys.disabled():
        print(f"\ncatalogue: {len(ran)} entries ran; autosave round-trips {len(by_autosave)}, "
              f"pickle {len(by_pickle)}; pickle fails: {', '.join(sorted(set(ran) - by_pickle))}")
    assert by_pickle <= by_autosave, sorted(by_pickle - by_autosave)
    assert len(ENTRIES) >= 37
