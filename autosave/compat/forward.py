"""Forward compatibility judged by the older build's own loader.

Forward mode asks whether an older build reads the saves this build writes (cloud
saves, a rollback). Without the older code only the manifest rules can judge
(``check.compare_forward``). With it (``--older-code DIR``, or the tree of the ref an
``--against`` baseline came from), a subprocess imports the older packages from that
directory, and runs the ordinary check there with this build's snapshot as its
baseline: the older build's loader (``resolve.py``: ``plan_for``, enum members,
coroutine labels and locals) is handed the records this build's saves hold, and its
rules and refusals are the forward findings. The current process never imports the
older code. Anything that stops the subprocess from answering (the packages do not
import, a crash, a timeout, output that is not a report) is ``FORWARD_NOT_JUDGED``:
the gate fails closed.
"""

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from ..errors import BaselineError
from . import model
from .baselines import git
from .check import Finding
from .model import Snapshot

TIMEOUT = 600


def _not_judged(base: Snapshot, packages, code_dir: str, why: str) -> Finding:
    return Finding(
        rule="FORWARD_NOT_JUDGED", name=", ".join(packages), member=None, file=None,
        line=None, forward=True, baseline=base.source,
        message=f"the older build in {code_dir} could not be asked whether it reads this "
                f"build's saves: {why}",
        fix=f"make the older release's {', '.join(packages)} importable from {code_dir} "
            f"(its source tree, dependencies installed), or judge by the manifest rules "
            f"only: leave out --older-code")


def judge(base: Snapshot, current: Snapshot, packages, code_dir: str) -> list[Finding]:
    """The forward findings of the older build in ``code_dir`` (whose release ``base``
    describes) reading saves of ``current``, from that build's own loader."""
    if not os.path.isdir(code_dir):
        return [_not_judged(base, packages, code_dir, "no such directory")]
    with tempfile.TemporaryDirectory() as tmp:
        newer = os.path.join(tmp, "newer.json")
        with open(newer, "w", encoding="utf-8") as f:
            f.write(model.dumps(current))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(code_dir)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        argv = [sys.executable, "-m", "autosave", "compat", "check", *packages,
                "--baseline", newer, "--format", "json",
                "--config", os.path.join(tmp, "none.toml")]
        try:
            done = subprocess.run(argv, cwd=code_dir, env=env, capture_output=True,
                                  text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return [_not_judged(base, packages, code_dir, f"no answer within {TIMEOUT} s")]
    if done.returncode not in (0, 1):
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return [_not_judged(base, packages, code_dir, reason)]
    try:
        found = json.loads(done.stdout)["findings"]
        return [Finding(rule=f["rule"], name=f["name"], member=f["member"], file=f["file"],
                        line=f["line"], message=f["message"], fix=f["fix"],
                        baseline=base.source, in_baseline=f["in_baseline"], forward=True)
                for f in found]
    except (ValueError, KeyError, TypeError) as e:
        return [_not_judged(base, packages, code_dir, f"its report did not read: {e}")]


def code_of_ref(ref: str, into: str) -> str:
    """Extract the tree of git ``ref`` into ``into``; the directory in it that stands
    where the current directory stands in the working tree."""
    data = git(["archive", "--format=tar", ref], f"{ref}: the older code")
    prefix = git(["rev-parse", "--show-prefix"], "git rev-parse").decode().strip()
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            try:
                tar.extractall(into, filter="data")
            except TypeError:       # Python 3.11 before 3.11.4: no extraction filters
                tar.extractall(into)      # the project's own git tree
    except (tarfile.TarError, OSError) as e:
        raise BaselineError(f"{ref}: the older code could not be extracted: {e}") from None
    return os.path.join(into, prefix)
