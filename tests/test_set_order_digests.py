"""Set members saved as inline values only (frozen dataclasses of ints, namedtuples of
floats, tuples of strings) get their digests without the graph the other members need
(autosave.saving.order.SetOrder.digests): the same digests, hence the same canonical order
and the same bytes, as the graph gives them."""

import collections
import dataclasses
import enum

from hypothesis import given, settings
from hypothesis import strategies as st

import autosave
from autosave.saving.order import SetOrder

autosave.allow(__name__)


@dataclasses.dataclass(frozen=True)
class Cell:
    x: int
    y: object


Pair = collections.namedtuple("Pair", "a b")


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a                  # b unset: the unset-slot marker is a token too


def order():
    return SetOrder(lambda obj: None, lambda obj: 0, lambda: None)


inline = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                   st.tuples(st.integers(3999, 4001), st.sampled_from([-1, 0, 1]))
                   .map(lambda e: 10 ** e[0] + e[1]),          # ints written in hex past 10**4000
                   st.floats(), st.text(max_size=4), st.binary(max_size=3),
                   st.text(st.characters(codec=None, categories=["Cs", "Lo", "So"]),
                           max_size=3))   # lone surrogates: text encoded surrogatepass
simple = st.one_of(st.builds(Cell, st.integers(), inline), st.builds(Pair, inline, inline),
                   st.tuples(inline, inline), st.frozensets(st.integers(), max_size=4),
                   st.sampled_from(list(Colour)), st.builds(Slotted, inline))
nested = st.builds(Cell, st.integers(), simple)          # refers to an object: the graph


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(simple, nested), max_size=12, unique_by=id))
def test_inline_only_members_get_the_digests_the_graph_gives(members):
    fast = order().digests(members)
    graph = order().graph_digests(members)
    assert fast == graph


def test_a_set_of_value_hashed_members_saves_the_same_bytes_each_time():
    members = {Cell(i % 7, f"s{i}") for i in range(50)} | {Pair(1.5, i) for i in range(20)}
    data = autosave.dumps(members)
    assert autosave.dumps(autosave.loads(data)) == data
    assert autosave.dumps(set(reversed(list(members)))) == data


# -- the written-out tokens --------------------------------------------------------------

INLINE_VALUES = (st.integers() | st.integers(min_value=-(10 ** 4100), max_value=10 ** 4100)
                 | st.floats(allow_nan=True) | st.text() | st.binary() | st.booleans()
                 | st.none()
                 | st.text(st.characters(codec=None, categories=["Cs"]), min_size=1))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=8), st.lists(INLINE_VALUES, max_size=6))
def test_inline_text_is_the_tokens_written_out(prefix, values):
    """``_inline_text`` writes the common tokens out without a call each (the set-order
    hot path); it must give exactly the text ``_hash`` would hash from ``inline_token``,
    or two saves of one set could order it differently."""
    from autosave.saving.order import _inline_text, _prefix, inline_token
    key = _prefix(prefix)
    expected = (key + "".join(_prefix(inline_token(v)) for v in values))
    assert _inline_text(key, values) == expected.encode("utf-8", "surrogatepass")


@given(st.lists(INLINE_VALUES, max_size=3), st.sampled_from([(), [], Colour.RED, object()]))
def test_inline_text_refuses_what_is_not_inline(values, other):
    from autosave.saving.order import _inline_text
    assert _inline_text("0:", [*values, other]) is None
