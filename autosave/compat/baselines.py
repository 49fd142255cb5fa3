"""Where baselines come from: files, directories of them, or a git ref.

``--baseline PATH``: a snapshot file, or a directory whose ``*.json`` files are each a
baseline (every shipped release: a player may skip patches).

``--against REF``: the same, read from git without checking anything out: the
baseline path (``--baseline-path``, else ``baseline-path`` in ``[tool.autosave.compat]``,
else ``compat``) is looked up in REF relative to the current directory, with
``git ls-tree`` and ``git show REF:./PATH``.
"""

import os
import subprocess

from ..errors import BaselineError
from . import model


def from_path(path):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".json"))
        if not names:
            raise BaselineError(f"{path}: the directory holds no baseline (*.json)")
        return [model.load(os.path.join(path, n)) for n in names]
    if not os.path.exists(path):
        raise BaselineError(f"{path}: no such baseline file or directory")
    return [model.load(path)]


def git(args, what):
    try:
        done = subprocess.run(["git", *args], capture_output=True, timeout=60)
    except FileNotFoundError:
        raise BaselineError(f"{what}: git is not installed") from None
    except subprocess.TimeoutExpired:
        raise BaselineError(f"{what}: git did not answer within 60 s") from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BaselineError(f"{what}: {reason[-1] if reason else 'git failed'}")
    return done.stdout


def from_git(ref, path):
    if not ref or ref.startswith("-"):
        raise BaselineError(f"--against {ref!r} is not a git ref")
    what = f"{ref}:{path}"
    if os.path.isabs(path):
        raise BaselineError(f"{what}: with --against, the baseline path is a path inside the "
                            f"repository, relative to the current directory")
    rel = "./" + path.strip("/").removeprefix("./")
    kind = git(["cat-file", "-t", f"{ref}:{rel}"], what).decode().strip()
    if kind == "blob":
        files = [rel]
    else:
        listed = git(["ls-tree", "--name-only", ref, rel.rstrip("/") + "/"], what)
        # ls-tree prints paths relative to the current directory, like the one asked for
        files = sorted("./" + n for n in listed.decode("utf-8", "replace").splitlines()
                       if n.endswith(".json"))
        if not files:
            raise BaselineError(f"{what}: the directory holds no baseline (*.json) at {ref}")
    out = []
    for name in files:
        data = git(["show", f"{ref}:{name}"], f"{ref}:{name}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BaselineError(f"{ref}:{name}: not UTF-8 text") from None
        out.append(model.loads(text, f"{ref}:{name.removeprefix('./')}"))
    return out
