"""The loops for plain containers in batches (autosave.format.kernels: group_kinds,
inline_keyed, dict_entries, fill_dicts) and for coded columns (code_strings,
decode_codes), in Python and in C, held to one contract
(docs/speedups.md): same results or the same exception class, on generated inputs and
on forged lengths and keys; no reference kept."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autosave.format import kernels
from helpers import assert_leaves_nothing

try:
    from autosave import _speedups
except ImportError:
    _speedups = None

FUZZ = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "0") or 0)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ("group_kinds", "inline_keyed", "dict_entries", "fill_dicts", "code_strings",
         "decode_codes")
IMPLEMENTATIONS = [pytest.param(kernels.PURE, id="Python"),
                   pytest.param({name: getattr(_speedups, name, None) for name in NAMES},
                                id="C", marks=pytest.mark.skipif(
                                    _speedups is None, reason="autosave._speedups not built"))]
needs_c = pytest.mark.skipif(_speedups is None, reason="autosave._speedups not built")


@pytest.fixture(params=IMPLEMENTATIONS)
def k(request):
    return request.param


class Node:
    pass


class Key(str):
    """A str subclass: not an inline value, though it hashes like one."""


def test_group_kinds_groups_in_the_order_first_met(k):
    n, m = Node(), Node()
    kinds, groups = k["group_kinds"]([1, "a", n, 2, n, {}, "b", m])
    assert kinds == [int, str, Node, dict]
    assert groups == [[1, 2], ["a", "b"], [n, n, m], [{}]]
    assert groups[2][0] is n and groups[2][2] is m
    assert k["group_kinds"]([]) == ([], [])
    assert k["group_kinds"](iter((1, 2))) == ([int], [[1, 2]])


def test_inline_keyed_is_none_when_every_dict_is(k):
    assert k["inline_keyed"]([{1: Node()}, {"a": 1, None: 2, 1.5: 3, b"x": 4, True: 5}, {}]) \
        is None
    assert k["inline_keyed"]([]) is None


def test_inline_keyed_tells_each_dict_when_one_is_not(k):
    assert k["inline_keyed"]([{1: 2}, {(1,): 2}, {}, {Key("a"): 1}, {2**80: 1}]) == \
        [True, False, True, False, True]


@pytest.mark.parametrize("name", ["inline_keyed", "dict_entries"])
def test_dict_loops_refuse_what_is_not_a_dict(k, name):
    with pytest.raises(TypeError):
        k[name]([{}, [1, 2]])


def test_dict_entries_are_the_lengths_then_the_keys_then_the_values(k):
    n = Node()
    assert k["dict_entries"]([{1: n, "a": None}, {}, {(1,): 2}]) == \
        [[2, 0, 1], [1, "a", (1,)], [n, None, 2]]
    assert k["dict_entries"](()) == [[], [], []]


def test_fill_dicts_sets_each_run_of_entries_in_order(k):
    dicts = [{}, {}, {}]
    n = Node()
    k["fill_dicts"](dicts, [2, 0, 2], ["b", "a", 1, 1.0], [n, 2, 3, 4])
    assert dicts == [{"b": n, "a": 2}, {}, {1: 4}]
    assert list(dicts[0]) == ["b", "a"] and type(next(iter(dicts[2]))) is int


@pytest.mark.parametrize("keys", [[(1,)], [Key("a")], [Node()], [[1]]])
def test_fill_dicts_refuses_a_key_that_is_not_an_inline_value(k, keys):
    dicts = [{}]
    with pytest.raises(TypeError):
        k["fill_dicts"](dicts, [1], keys, [0])
    assert dicts == [{}]


def test_code_strings_numbers_the_distinct_strings_in_order(k):
    a = "".join(["x", "y"])                  # equal to "xy", another object
    assert k["code_strings"](["xy", "b", a, "", "b"], 3) == (["xy", "b", ""], [0, 1, 0, 2, 1])
    assert k["code_strings"]((), 0) == ([], [])


def test_code_strings_stops_past_the_limit():
    assert k_none(["a", "b", "c", "a"], 2)
    assert k_none(["a", "b", "c", 1], 2)          # stopped before the 1


def k_none(values, limit):
    return all(impl(values, limit) is None for impl in
               (kernels.PURE["code_strings"], getattr(_speedups, "code_strings", None))
               if impl is not None)


@pytest.mark.parametrize("values", [["a", 1], ["a", Key("b")], [None], ["a", b"a"]])
def test_code_strings_refuses_what_is_not_a_str(k, values):
    with pytest.raises(TypeError):
        k["code_strings"](values, 10)


def test_decode_codes_gives_each_codes_string(k):
    assert k["decode_codes"](["a", "b"], [1, 0, 1]) == ["b", "a", "b"]
    assert k["decode_codes"]([], []) == []


@pytest.mark.parametrize("strings, codes, error", [
    (["a"], [1], ValueError), (["a"], [-1], ValueError), (["a"], [True], ValueError),
    (["a"], [0.0], ValueError), (["a"], ["0"], ValueError), (["a"], [2**64], ValueError),
    ([], [0], ValueError), (["a", 1], [0], TypeError), ([Key("a")], [], TypeError),
    ([[0]], [0], TypeError),
])
def test_decode_codes_refuses_what_a_forged_file_may_hold(k, strings, codes, error):
    with pytest.raises(error):
        k["decode_codes"](strings, codes)


def test_container_loops_keep_no_reference(k):
    # (not 20: CPython 3.11 keeps tuples of up to 20 items on a free list, which
    # tracemalloc counts as still traced)
    objs = [Node() for _ in range(25)]
    dicts = [{i: o, "k": o} for i, o in enumerate(objs)]

    def once():
        k["group_kinds"](objs + dicts + [1, "a"])
        k["inline_keyed"](dicts)
        k["inline_keyed"](dicts + [{(1,): 1}])
        k["dict_entries"](dicts)
        k["fill_dicts"]([{} for _ in range(4)], [1, 2, 0, 2], [1, 2, "a", None, b"b"],
                        objs[:5])
        k["code_strings"](["a", "b", "a"] * 9, 10)
        k["code_strings"]([f"s{i}" for i in range(30)], 10)
        k["decode_codes"](["a", "b"], [0, 1] * 13)
        for bad in (lambda: k["fill_dicts"]([{}], [1], [(1,)], [1]),
                    lambda: k["dict_entries"]([{}, 1]),
                    lambda: k["code_strings"](["a"] * 30 + [1], 10),
                    lambda: k["decode_codes"](["a"], [0] * 30 + [1])):
            try:
                bad()
            except (TypeError, ValueError):
                pass
            else:
                raise AssertionError("a bad input was taken")
    assert_leaves_nothing(once)


# -- the two implementations, compared on generated inputs ---------------------------------

inline = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                   st.floats(allow_nan=False), st.text(max_size=3), st.binary(max_size=3))
POOL = [Node() for _ in range(4)] + [(1,), Key("k")]
keys = st.one_of(inline, st.sampled_from(POOL))
values = st.one_of(inline, st.sampled_from(POOL), st.builds(dict), st.builds(list))


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except (IndexError, TypeError, ValueError) as e:
        return "raised", type(e)


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.dictionaries(keys, values, max_size=5), max_size=12),
       st.lists(values, max_size=12))
def test_save_loops_agree(dicts, others):
    for name in ("inline_keyed", "dict_entries"):
        assert outcome(kernels.PURE[name], dicts) == outcome(getattr(_speedups, name), dicts)
    mixed = [x for pair in zip(dicts, others) for x in pair]
    assert kernels.PURE["group_kinds"](mixed) == _speedups.group_kinds(mixed)


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.one_of(st.integers(-2, 4), st.sampled_from([2**63, 2**64, True, 1.0,
                                                                "1", None])), max_size=8),
       st.lists(keys, max_size=12), st.integers(-1, 1))
def test_fill_dicts_checks_what_a_forged_file_may_give(lengths, key_list, extra):
    """The C never reads past the keys or values, whatever the lengths: it fills only
    when they are ints >= 0 adding up to the keys, one value per key, every key inline,
    and then as the Python does (whose callers check the lengths first)."""
    value_list = [f"v{j}" for j in range(max(0, len(key_list) + extra))]
    c = [{} for _ in lengths]
    fits = (all(isinstance(m, int) and m >= 0 for m in lengths)
            and sum(lengths) == len(key_list) and extra == 0)
    result = outcome(_speedups.fill_dicts, c, lengths, key_list, value_list)
    if not fits:
        assert result == ("raised", ValueError) or (result[0] == "raised" and result[1]
                                                    is TypeError)
        assert c == [{} for _ in lengths]
        return
    py = [{} for _ in lengths]
    assert outcome(kernels.PURE["fill_dicts"], py, lengths, key_list, value_list) == result
    assert c == py


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.one_of(st.sampled_from(["a", "b", "", "\ud800"]), st.text(max_size=2),
                          st.sampled_from([1, None, Key("a"), True, 1.0])), max_size=30),
       st.integers(-1, 12))
def test_code_strings_agree(values, limit):
    assert outcome(kernels.PURE["code_strings"], values, limit) == \
        outcome(_speedups.code_strings, values, limit)


# More distinct strings than the C loop remembers by address (RECENT_STRINGS), equal
# strings that are different objects, and repeats far apart: the codes are the dict's.
WORDS = [f"w{i}" for i in range(400)]


@needs_c
@settings(max_examples=FUZZ or 100, **SETTINGS)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(WORDS).map(
    lambda w: "".join(list(w)))), max_size=1200), st.integers(0, 500))
def test_code_strings_agree_past_the_strings_they_remember(values, limit):
    assert outcome(kernels.PURE["code_strings"], values, limit) == \
        outcome(_speedups.code_strings, values, limit)


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.one_of(st.text(max_size=2), st.sampled_from([1, None, Key("a")])),
                max_size=5),
       st.lists(st.one_of(st.integers(-2, 6), st.sampled_from([True, 1.0, "1", 2**64])),
                max_size=12))
def test_decode_codes_agree_on_forged_columns(strings, codes):
    assert outcome(kernels.PURE["decode_codes"], strings, codes) == \
        outcome(_speedups.decode_codes, strings, codes)


class Flooded(ValueError):
    pass


@needs_c
@settings(max_examples=FUZZ or 300, **SETTINGS)
@given(st.lists(st.integers(0, 5), max_size=8).flatmap(
           lambda lengths: st.tuples(st.just(lengths), st.lists(
               inline, min_size=sum(lengths), max_size=sum(lengths)))),
       st.integers(0, 6), st.integers(-1, 4))
def test_fill_dicts_checks_the_dicts_of_at_least_so_many_keys_first(case, at_least, stop):
    """The loader's flood check, handed to the kernel: called with the keys of every dict
    of ``at_least`` entries or more, in order, before anything is filled; what it raises
    is raised, and no dict is filled then. The C and the Python agree on every call."""
    lengths, key_list = case
    value_list = [f"v{j}" for j in range(len(key_list))]
    seen = {}

    def run(name, fill):
        calls = seen[name] = []

        def check(run_keys):
            calls.append(list(run_keys))
            if len(calls) - 1 == stop:
                raise Flooded
        dicts = [{} for _ in lengths]
        return outcome(fill, dicts, lengths, key_list, value_list, check, at_least), dicts

    c = run("C", _speedups.fill_dicts)
    py = run("Python", kernels.PURE["fill_dicts"])
    assert c == py and seen["C"] == seen["Python"]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    expected = [key_list[s:s + m] for s, m in zip(starts, lengths) if m >= at_least]
    if 0 <= stop < len(expected):
        assert c[0] == ("raised", Flooded) and c[1] == [{} for _ in lengths]
        assert seen["C"] == expected[:stop + 1]
    else:
        assert seen["C"] == expected
        assert c[0] == outcome(kernels.PURE["fill_dicts"], [{} for _ in lengths], lengths,
                               key_list, value_list)


def test_fill_dicts_without_a_check_checks_nothing(k):
    dicts = [{}, {}]
    k["fill_dicts"](dicts, [1, 1], ["a", "b"], [1, 2], None, 0)
    assert dicts == [{"a": 1}, {"b": 2}]
