"""decode()'s record checks against a plain loop written from docs/format.md alone:
they must agree on every record table, malformed ones above all."""

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from autosave.format import wire as fmt
from autosave.errors import FormatError

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)   # 0: the seeded CI set

type_index = st.one_of(st.integers(-6, 6), st.booleans(), st.none(), st.text(max_size=1),
                       st.floats(allow_nan=False))
record = st.one_of(
    st.lists(st.integers(-3, 3), min_size=0, max_size=3).map(lambda rest: rest),
    st.tuples(type_index, st.lists(st.integers(0, 3), max_size=2)).map(lambda p: [p[0], *p[1]]),
    st.integers(), st.none(), st.text(max_size=2),
)


def reference(ntypes, records):
    """docs/format.md's rules, one record at a time: (closes_cycle, type column) or the
    index of the first record that breaks them."""
    marks, column = [], []
    for i, rec in enumerate(records):
        if type(rec) is not list or not rec or type(rec[0]) is not int:
            return i
        t = rec[0] if rec[0] >= 0 else ~rec[0]
        if t >= ntypes:
            return i
        marks.append(int(rec[0] < 0))
        column.append(t)
    return marks, column


@st.composite
def tables(draw):
    """A type count, and records whose type indices crowd its edges."""
    ntypes = draw(st.integers(0, 4))
    edge = st.sampled_from([ntypes - 1, ntypes, -ntypes, -ntypes - 1, 0, -1])
    edged = st.tuples(edge, st.lists(st.integers(0, 3), max_size=2)).map(
        lambda p: [p[0], *p[1]])
    return ntypes, draw(st.lists(st.one_of(edged, record), max_size=8))


@settings(max_examples=FUZZ or 400)
@given(tables())
@example((2, [[-3]]))
@example((2, [[1], [-2], [2]]))
@example((0, [[0]]))
@example((3, [[True]]))
@example((3, [[]]))
def test_the_fast_record_checks_agree_with_the_rules(table):
    ntypes, records = table
    types = [[f"t{i}", 1, []] for i in range(ntypes)]
    expected = reference(ntypes, [list(r) if type(r) is list else r for r in records])
    data = fmt.frame(fmt.pack([types, records, None, []]))
    if isinstance(expected, int):
        with pytest.raises(FormatError, match=f"^record {expected} "):
            fmt.decode(data)
        return
    _, decoded, _, _, closes_cycle, _ = fmt.decode(data)
    assert list(closes_cycle) == expected[0]
    assert [rec[0] for rec in decoded] == expected[1]
