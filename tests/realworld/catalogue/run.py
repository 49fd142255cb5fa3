"""Both sides of the catalogue test, each run in a child process of its own.

The save side builds every entry, saves it with autosave and with pickle, then uses
it; the load side loads both saves in a fresh interpreter (another hash seed, nothing
of the save side left in memory) and uses them. Outcomes are plain values written with
pickle: this is the test's own data, passed between its own processes.
"""

import contextlib
import pickle
import warnings

import autosave
from autosave.model.registry import REGISTRY


@contextlib.contextmanager
def trusting(package):
    """Only ``package`` (a name, or a tuple of names) is allowed (besides what the game's
    classes trust) while one entry is saved or loaded: a process running the whole
    catalogue would otherwise let an entry pass on an allow() made for another."""
    before = set(REGISTRY.allowed)
    if package is not None:
        autosave.allow(*((package,) if isinstance(package, str) else package))
    try:
        yield
    finally:
        REGISTRY.allowed.clear()
        REGISTRY.allowed.update(before)
        REGISTRY.changes += 1


def attempt(fn, *args):
    """("ok", result) or ("error", "Kind: message")."""
    try:
        with warnings.catch_warnings():
            # pickle of itertools is deprecated since 3.12: that is pickle's outcome
            # here, not something to stop on
            warnings.simplefilter("ignore", DeprecationWarning)
            return "ok", fn(*args)
    except Exception as e:            # an outcome to compare, whatever it is
        return "error", f"{type(e).__name__}: {e}"


def plain(outcome):
    """A use() outcome that can travel to the other process (a use() returning a live
    object is a mistake of the catalogue's, reported as such)."""
    try:
        pickle.dumps(outcome)
    except Exception as e:
        return "error", f"use() returned something that is not a plain value: {e}"
    return outcome


def save_side(entries, path):
    outcomes = {}
    for e in entries:
        missing = e.missing()
        if missing:
            outcomes[e.name] = {"skip": missing}
            continue
        with trusting(e.allow):
            built = attempt(e.build)
            if built[0] == "error":
                outcomes[e.name] = {"build": built}
                continue
            obj = built[1]
            saved = attempt(autosave.dumps, obj)
            pickled = attempt(pickle.dumps, obj, 5)
            # used only once both saves are made: use() moves the object on
            outcomes[e.name] = {"autosave": saved, "pickle": pickled,
                                "used": plain(attempt(e.use, obj))}
    with open(path, "wb") as f:
        pickle.dump(outcomes, f)


def load_side(entries, path):
    with open(path, "rb") as f:
        saved = pickle.load(f)
    outcomes = {}
    for e in entries:
        before = saved[e.name]
        if "autosave" not in before:
            continue
        with trusting(e.allow):
            out = {}
            if before["autosave"][0] == "ok":
                data = before["autosave"][1]
                loaded = attempt(autosave.loads, data)
                if loaded[0] == "ok":
                    obj = loaded[1]
                    out["same_bytes"] = attempt(lambda: autosave.dumps(obj) == data)
                    out["autosave"] = plain(attempt(e.use, obj))
                else:
                    out["autosave"] = loaded
            if before["pickle"][0] == "ok":
                loaded = attempt(pickle.loads, before["pickle"][1])
                out["pickle"] = plain(attempt(e.use, loaded[1])) if loaded[0] == "ok" else loaded
        outcomes[e.name] = out
    with open(path + ".loaded", "wb") as f:
        pickle.dump(outcomes, f)

