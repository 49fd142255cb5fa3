"""The release gate on two releases of a tiny shop game.

    python examples/compat/run.py             # check and verify release 1.1
    python examples/compat/run.py --release1  # (re)make 1.0's baseline and save corpus

Release 1.0 (release1/) shipped with its schema snapshot, compat/1.0.json, and a corpus
of saves players made, compat/saves/1.0/. Release 1.1 (release2/) is judged against
both, the way CI would run it:

    autosave compat check shop --baseline compat/1.0.json
    autosave compat verify shop --saves compat/saves/
    autosave diff compat/saves/1.0/start.sav compat/saves/1.0/later.sav
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = os.path.join(HERE, "compat", "1.0.json")
SAVES = os.path.join(HERE, "compat", "saves")
FROM_RELEASE = os.path.join("..", "compat")       # the same, seen from a release directory

MAKE_CORPUS = """
import os, autosave, shop
from autosave.cli import main
assert main(["compat", "snapshot", "shop", "-o", {baseline!r}]) == 0
potion = shop.POTION
start = shop.Shop(stock=[shop.Item("sword", 30), potion], gold=100, featured=potion)
later = shop.Shop(stock=[shop.Item("sword", 25, shop.Rarity.RARE)], gold=130,
                  featured=potion, talks=[shop.haggle(12)])
next(later.talks[0]); later.talks[0].send(3)
os.makedirs({saves!r}, exist_ok=True)
autosave.save(os.path.join({saves!r}, "start.sav"), start)
autosave.save(os.path.join({saves!r}, "later.sav"), later)
"""


def autosave_cli(release, *args):
    """Run the `autosave` command inside a release's directory; its exit status."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, release)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    print(f"$ autosave {' '.join(args)}")
    done = subprocess.run([sys.executable, "-m", "autosave.cli", *args], env=env,
                          cwd=os.path.join(HERE, release), text=True, capture_output=True)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    print(f"(exit {done.returncode})")
    return done.returncode


def make_release1():
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "release1"))
    subprocess.run([sys.executable, "-c", MAKE_CORPUS.format(
        baseline=BASELINE, saves=os.path.join(SAVES, "1.0"))], env=env,
        cwd=os.path.join(HERE, "release1"), check=True)


def main():
    if "--release1" in sys.argv:
        make_release1()
        return 0
    check = autosave_cli("release2", "compat", "check", "shop", "--baseline",
                         os.path.join(FROM_RELEASE, "1.0.json"), "--verbose")
    verify = autosave_cli("release2", "compat", "verify", "shop", "--saves",
                          os.path.join(FROM_RELEASE, "saves"))
    autosave_cli("release2", "diff", os.path.join(FROM_RELEASE, "saves", "1.0", "start.sav"),
                 os.path.join(FROM_RELEASE, "saves", "1.0", "later.sav"))
    return max(check, verify)


if __name__ == "__main__":
    sys.exit(main())
