"""Plain-class attributes from a corpus of saves (`compat check --corpus`, `compat
snapshot --corpus`): an attribute set only from outside the class is known from the
records that hold it (autosave/compat/corpus.py)."""

import json

import attrs
import pytest

import autosave
from autosave.cli import main
from autosave.compat import describe, model
from autosave.compat.check import compare
from autosave.compat.corpus import attributes_seen, with_corpus
from autosave.errors import CorpusError
from modtools import fresh_name, unload
from test_coroutine_transform import source_module as load_module

RELEASE_1 = '''
import attrs
import autosave

class Stats:
    def __init__(self):
        self.kills = 0

@autosave.save_root
@attrs.define
class World:
    stats: Stats = attrs.Factory(Stats)
'''


def release_1_corpus(name, directory):
    """Saves of release 1: ``best`` set on every Stats from outside, ``last`` on some."""
    m = load_module(name, RELEASE_1)
    autosave.allow(name)
    for k in range(4):
        world = m.World()
        world.stats.best = k
        if k >= 2:
            world.stats.last = "x"
        autosave.save(str(directory / f"{k}.sav"), world)
    snap = model.loads(model.dumps(describe.snapshot([name])), "1.0.json")
    unload(name)
    return snap


def release_2(name, init_lines, body=""):
    source = RELEASE_1.replace("        self.kills = 0\n", "        self.kills = 0\n" + "".join(
        f"        {line}\n" for line in init_lines)).replace("class Stats:\n",
                                                           "class Stats:\n" + body)
    load_module(name, source)
    try:
        # judged by the rules only: the module is gone once described
        return attrs.evolve(describe.snapshot([name]), live=False)
    finally:
        unload(name)


@pytest.fixture
def corpus(tmp_path):
    name = fresh_name("attrs_corpus")
    return name, release_1_corpus(name, tmp_path), tmp_path


def breaking(findings):
    return sorted((f.rule, f.member) for f in findings if f.breaking)


def test_the_corpus_counts_attributes_per_class(corpus):
    name, _, directory = corpus
    seen = attributes_seen([directory])
    stats = seen[f"{name}.Stats"]
    assert stats.records == 4 and stats.attributes == {"kills": 4, "best": 4, "last": 2}


def test_an_attribute_set_outside_then_in_init_is_held_by_old_saves(corpus):
    name, base, directory = corpus
    current = release_2(name, ["self.best = 0"])
    # without the corpus the gate cannot know old saves hold it
    assert breaking(compare(base, current)) == [("ATTRIBUTE_ADDED_NO_DEFAULT", "best")]
    enriched = with_corpus(base, attributes_seen([directory]))
    assert {f.name: f.origin for f in enriched.classes[f"{name}.Stats"].fields} == {
        "kills": "init", "best": "corpus", "last": "corpus-some"}
    assert breaking(compare(enriched, current)) == []


def test_an_attribute_only_some_saves_hold_still_needs_a_default(corpus):
    name, base, directory = corpus
    enriched = with_corpus(base, attributes_seen([directory]))
    findings = compare(enriched, release_2(name, ["self.last = None"]))
    assert breaking(findings) == [("ATTRIBUTE_ADDED_NO_DEFAULT", "last")]
    (f,) = [f for f in findings if f.breaking]
    assert f.fix.startswith(f"give it a class-level default in the body of {name}.Stats "
                            f"(last = <its initial value>")
    # the fix as written
    fixed = release_2(name, ["self.last = None"], "    last = None\n\n")
    assert breaking(compare(enriched, fixed)) == []
    # an attribute the code never sets is kept by loads: not reported as removed
    assert not [f for f in compare(enriched, release_2(name, [])) if f.member == "best"]


def test_check_and_snapshot_take_a_corpus(corpus, tmp_path, capsys):
    name, base, directory = corpus
    (tmp_path / "base.json").write_text(model.dumps(base))
    load_module(name, RELEASE_1.replace("        self.kills = 0\n",
                                        "        self.kills = 0\n        self.best = 0\n"))
    try:
        argv = ["compat", "check", name, "--baseline", str(tmp_path / "base.json"),
                "--format", "json", "--config", str(tmp_path / "none.toml")]
        assert main(argv) == 1
        capsys.readouterr()
        assert main(argv + ["--corpus", str(directory)]) == 0
        capsys.readouterr()
        assert main(["compat", "snapshot", name, "--corpus", str(directory)]) == 0
        doc = json.loads(capsys.readouterr().out)
        fields = {f["name"]: f.get("origin") for f in doc["classes"][f"{name}.Stats"]["fields"]}
        assert fields == {"kills": "init", "best": "init", "last": "corpus-some"}
    finally:
        unload(name)


def test_a_corpus_that_does_not_decode_is_refused(tmp_path, capsys):
    (tmp_path / "bad.sav").write_bytes(b"\x89ASV" + b"\xff" * 40)
    with pytest.raises(CorpusError, match="bad.sav"):
        attributes_seen([tmp_path])
    (tmp_path / "bad.sav").write_bytes(b"not a save")
    with pytest.raises(CorpusError, match="holds no autosave save"):
        attributes_seen([tmp_path])
