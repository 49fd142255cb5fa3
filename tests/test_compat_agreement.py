"""`compat check` and `compat verify` agree, rule by rule, on real patched packages.

Release 1 of a small game is written to a temporary directory; a subprocess snapshots
it and saves a corpus holding every kind of thing a rule is about (fields, an enum
member, an asset, a coroutine parked at a label and one not started, a function of an
allowed namespace). Each patch below is release 2: one subprocess per patch runs both
`check` (against the snapshot) and `verify` (on the corpus). For every patch the two
must agree, and `check` must name the rule the patch is about. Each rule has a breaking
and a compatible patch.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

RELEASE_1 = '''
import enum

import attrs

import autosave
import relhelp

autosave.allow("relhelp")


class Color(enum.Enum):
    RED = 1
    GREEN = 2


@autosave.saveable(name="relgame.Item", version=2)
@attrs.define
class Item:
    name: str
    price: int


@autosave.upgrade("relgame.Item", from_version=1)
def item_from_v1(fields):
    return fields


@attrs.define
class Npc:
    hp: int
    mood: str = "calm"
    scratch: int = attrs.field(default=0, metadata=autosave.transient)


SWORD = autosave.asset(Item("sword", 10), "items/sword")


@autosave.coroutine
def patrol(route):
    steps = 0
    total = 0
    while True:
        got = yield steps
        steps += 1
        total += got or 0


@autosave.save_root
@attrs.define
class World:
    npcs: list[Npc]
    items: list[Item]
    color: Color
    weapon: Item
    ai: list
    helper: object = None
'''

MAKE_CORPUS = '''
import os, sys, relgame, relhelp, autosave
from autosave.cli import main
assert main(["compat", "snapshot", "relgame", "-o", "compat/1.0.json"]) == 0
parked = relgame.patrol(["a", "b"])
next(parked)
parked.send(3)
world = relgame.World(
    npcs=[relgame.Npc(5), relgame.Npc(7, "angry")], items=[relgame.Item("shield", 3)],
    color=relgame.Color.GREEN, weapon=relgame.SWORD,
    ai=[relgame.patrol(["c"]), parked], helper=relhelp.double)
os.makedirs("compat/saves/1.0", exist_ok=True)
autosave.save("compat/saves/1.0/full.sav", world)
autosave.save("compat/saves/1.0/small.sav", relgame.World([], [], relgame.Color.RED,
                                                         relgame.SWORD, []))
'''

JUDGE = '''
import contextlib, io, json
from autosave.cli import main

def run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(argv)
    return status, out.getvalue()

check = run(["compat", "check", "relgame", "--baseline", "compat/1.0.json", "--format", "json"])
verify = run(["compat", "verify", "relgame", "--saves", "compat/saves", "--format", "json"])
print(json.dumps({"check": check, "verify": verify}))
'''

NPC = "@attrs.define\nclass Npc:\n"
PERSON = ("@autosave.saveable(aliases=('relgame.Npc',))\n@attrs.define\nclass Person:\n")
TREE = "\n\n@autosave.saveable\n@attrs.define\nclass Tree:\n    height: int = 1\n"
HOOK = ("\n\n@autosave.upgrade('relgame.Npc', from_version=1)\ndef npc_from_v1(fields):\n"
        "    {body}\n    return fields\n")


def replace(*pairs):
    return list(pairs)


# (id, the breaking rule check must report or None, [(old, new)], {extra file: source})
PATCHES = [
    ("class-added", None, replace(("SWORD =", TREE + "\nSWORD =")), {}),
    ("class-renamed", "CLASS_REMOVED",
     replace((NPC, "@attrs.define\nclass Person:\n"), ("list[Npc]", "list[Person]")), {}),
    ("class-renamed-with-alias", None,
     replace((NPC, PERSON), ("list[Npc]", "list[Person]")), {}),
    ("python-class-renamed-stable-name-kept", None,
     replace(("class Item:", "class Article:"), ("list[Item]", "list[Article]"),
             ("weapon: Item", "weapon: Article"), ("SWORD = autosave.asset(Item(",
                                                   "SWORD = autosave.asset(Article(")), {}),
    ("class-moved-reexported", None,
     replace(("@attrs.define\nclass Npc:\n    hp: int\n    mood: str = \"calm\"\n"
              "    scratch: int = attrs.field(default=0, metadata=autosave.transient)\n",
              "from relgame.people import Npc\n")),
     {"relgame/people.py": "import attrs, autosave\n\n@attrs.define\nclass Npc:\n"
                           "    hp: int\n    mood: str = 'calm'\n    scratch: int = "
                           "attrs.field(default=0, metadata=autosave.transient)\n"}),
    ("class-moved-away", "CLASS_REMOVED",
     replace(("@attrs.define\nclass Npc:\n    hp: int\n    mood: str = \"calm\"\n"
              "    scratch: int = attrs.field(default=0, metadata=autosave.transient)\n",
              "from relgame import people\n"), ("list[Npc]", "list[people.Person]")),
     {"relgame/people.py": "import attrs, autosave\n\n@attrs.define\nclass Person:\n"
                           "    hp: int\n    mood: str = 'calm'\n"}),
    ("field-added-with-default", None,
     replace(('    mood: str = "calm"\n', '    mood: str = "calm"\n    level: int = 1\n')), {}),
    ("field-added-without-default", "FIELD_ADDED_NO_DEFAULT",
     replace(("    hp: int\n", "    hp: int\n    level: int\n")), {}),
    ("field-added-supplied-by-hook", None,
     replace(("    hp: int\n", "    hp: int\n    level: int\n"),
             (NPC, "@autosave.saveable(version=2)\n" + NPC),
             ("SWORD =", HOOK.format(body="fields['level'] = 1") + "\nSWORD =")), {}),
    ("version-bumped-without-hook", "UPGRADE_MISSING",
     replace((NPC, "@autosave.saveable(version=2)\n" + NPC)), {}),
    ("version-decreased", "VERSION_DECREASED",
     replace(('name="relgame.Item", version=2', 'name="relgame.Item", version=1')), {}),
    ("field-removed", None, replace(('    mood: str = "calm"\n', "")), {}),
    ("field-type-changed", "FIELD_TYPE_CHANGED", replace(("    hp: int\n", "    hp: str\n")), {}),
    ("field-type-widened", None, replace(("    hp: int\n", "    hp: int | None\n")), {}),
    ("field-type-changed-with-hook", None,
     replace(("    hp: int\n", "    hp: str\n"),
             (NPC, "@autosave.saveable(version=2)\n" + NPC),
             ("SWORD =", HOOK.format(body="fields['hp'] = str(fields['hp'])") + "\nSWORD =")),
     {}),
    ("transient-now-saved-without-default", "FIELD_NOW_SAVED_NO_DEFAULT",
     replace(("    scratch: int = attrs.field(default=0, metadata=autosave.transient)\n", ""),
             ("    hp: int\n", "    hp: int\n    scratch: int\n")), {}),
    ("transient-now-saved-with-default", None,
     replace(("scratch: int = attrs.field(default=0, metadata=autosave.transient)",
              "scratch: int = 0")), {}),
    ("saved-now-transient", None,
     replace(('mood: str = "calm"',
              'mood: str = attrs.field(default="calm", metadata=autosave.transient)')), {}),
    ("enum-became-a-class", "CLASS_KIND_CHANGED",
     replace(("class Color(enum.Enum):\n    RED = 1\n    GREEN = 2\n",
              "@attrs.define\nclass Color:\n    value: int = 1\n    RED = 1\n    GREEN = 2\n"),
             ), {}),
    ("class-adopted-getstate", None,
     replace(('    scratch: int = attrs.field(default=0, metadata=autosave.transient)\n',
              '    scratch: int = attrs.field(default=0, metadata=autosave.transient)\n\n'
              '    def __getstate__(self):\n        return {"hp": self.hp, "mood": self.mood}\n\n'
              '    def __setstate__(self, state):\n        self.hp, self.mood = state["hp"], '
              'state["mood"]\n        self.scratch = 0\n')), {}),
    ("enum-member-added", None, replace(("    GREEN = 2\n", "    GREEN = 2\n    BLUE = 3\n")),
     {}),
    ("enum-member-removed", "ENUM_MEMBER_REMOVED", replace(("    GREEN = 2\n", "")), {}),
    ("enum-member-renamed", "ENUM_MEMBER_REMOVED",
     replace(("    GREEN = 2\n", "    TEAL = 2\n")), {}),
    ("enum-member-renamed-alias-kept", None,
     replace(("    GREEN = 2\n", "    TEAL = 2\n    GREEN = 2\n")), {}),
    ("asset-id-changed", "ASSET_REMOVED", replace(('"items/sword"', '"items/blade"')), {}),
    ("asset-added", None,
     replace(("SWORD =", 'AXE = autosave.asset(Item("axe", 4), "items/axe")\nSWORD =')), {}),
    ("coroutine-yield-edited", "COROUTINE_LABEL_REMOVED",
     replace(("got = yield steps\n", "got = yield steps + 0\n")), {}),
    # autosave-codegen's manifest in the package keeps the label of a lightly edited yield
    ("coroutine-yield-edited-manifest-kept", None,
     replace(("got = yield steps\n", "got = yield steps + 0\n")),
     {"relgame/autosave_manifest.json": "@release1:labels/autosave_manifest.json"}),
    ("coroutine-yield-added", None,
     replace(("        steps += 1\n", "        steps += 1\n        if steps > 1000:\n"
                                     "            yield -1\n")), {}),
    ("coroutine-statements-added", None,
     replace(("    steps = 0\n", "    if route is None:\n        return\n    steps = 0\n"),
             ("        steps += 1\n", "        steps += 1\n        steps += 0\n")), {}),
    ("coroutine-local-renamed", "COROUTINE_LOCAL_MISSING",
     replace(("    total = 0\n", "    tally = 0\n"), ("total += got", "tally += got")), {}),
    ("coroutine-local-removed", None,
     replace(("    total = 0\n", ""), ("        total += got or 0\n", "")), {}),
    ("coroutine-parameter-added-with-default", None,
     replace(("def patrol(route):", "def patrol(route, speed=1):"),
             ("steps += 1", "steps += speed")), {}),
    ("coroutine-undecorated", "COROUTINE_REMOVED",
     replace(("@autosave.coroutine\ndef patrol", "def patrol")), {}),
    ("namespace-no-longer-trusted", "NAMESPACE_UNTRUSTED",
     replace(('autosave.allow("relhelp")\n', "")), {}),
    ("root-mark-removed", None,
     replace(("@autosave.save_root\n@attrs.define\nclass World",
              "@autosave.saveable\n@attrs.define\nclass World")), {}),
]


def env():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(["."] + [root] + (
        [e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.pop("AUTOSAVE_STRICT", None)
    return e


def python(cwd, code):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_release(directory, source, extra=()):
    (directory / "relgame").mkdir(parents=True, exist_ok=True)
    (directory / "relhelp").mkdir(exist_ok=True)
    (directory / "relhelp" / "__init__.py").write_text("def double(x):\n    return 2 * x\n")
    (directory / "relgame" / "__init__.py").write_text(source)
    for name, text in dict(extra).items():
        (directory / name).write_text(text)


@pytest.fixture(scope="module")
def release1(tmp_path_factory):
    directory = tmp_path_factory.mktemp("release1")
    write_release(directory, RELEASE_1)
    python(directory, MAKE_CORPUS)
    python(directory, "from autosave_codegen.cli import main; "
                      "assert main(['relgame', '--out', 'labels']) == 0")
    return directory


def apply(pairs):
    source = RELEASE_1
    for old, new in pairs:
        assert source.count(old) == 1, f"the patch does not apply: {old!r}"
        source = source.replace(old, new)
    return source


@pytest.mark.slow
@pytest.mark.parametrize("patch", PATCHES, ids=[p[0] for p in PATCHES])
def test_check_and_verify_agree(release1, tmp_path, patch):
    name, rule, pairs, extra = patch
    for sub in ("compat", "compat/saves/1.0"):
        (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    (tmp_path / "compat" / "1.0.json").write_bytes((release1 / "compat" / "1.0.json").read_bytes())
    for f in ("full.sav", "small.sav"):
        (tmp_path / "compat/saves/1.0" / f).write_bytes((release1 / "compat/saves/1.0" / f).read_bytes())
    extra = {name: (release1 / text.removeprefix("@release1:")).read_text()
             if text.startswith("@release1:") else text for name, text in extra.items()}
    write_release(tmp_path, apply(pairs), extra)
    result = json.loads(python(tmp_path, JUDGE))
    (check_status, check_out), (verify_status, verify_out) = result["check"], result["verify"]
    assert check_status in (0, 1), check_out
    assert verify_status in (0, 1), verify_out
    report = json.loads(check_out)
    breaking = {f["rule"] for f in report["findings"] if f["breaking"]}
    files = {os.path.basename(f["path"]): f for f in json.loads(verify_out)["files"]}
    assert (check_status == 1) == (verify_status == 1), (
        f"check says {'breaking' if check_status else 'compatible'} ({sorted(breaking)}), "
        f"verify says {files}")
    if rule is None:
        assert check_status == 0 and not breaking
        assert all(f["status"] == "ok" for f in files.values()), files
    else:
        assert rule in breaking, report["findings"]
        assert files["full.sav"]["status"] in ("incompatible", "mistyped"), files
        # the finding says where: file and line in the current source or the baseline
        found = [f for f in report["findings"] if f["rule"] == rule]
        assert all(f["fix"] and f["message"] for f in found)
