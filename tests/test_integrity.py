"""Saves of every earlier format version keep loading, with exactly what was saved."""

import pathlib

import pytest

import autosave
import format1_graphs
import helpers

FORMAT1 = pathlib.Path(__file__).resolve().parent / "data" / "format1"


@pytest.mark.parametrize("name", sorted(format1_graphs.GRAPHS))
def test_format1_saves_load_with_their_contents(name):
    data = (FORMAT1 / f"{name}.sav").read_bytes()
    assert data[:5] == b"\x89ASV\x01", "the fixture must stay a format-1 file"
    loaded = autosave.load(FORMAT1 / f"{name}.sav")
    helpers.assert_isomorphic(format1_graphs.GRAPHS[name](), loaded)
    # Saved again, the graph gives the same bytes as the graph built today.
    assert autosave.dumps(loaded) == autosave.dumps(format1_graphs.GRAPHS[name]())


def test_format1_fixtures_cover_every_graph():
    assert sorted(p.stem for p in FORMAT1.glob("*.sav")) == sorted(format1_graphs.GRAPHS)
