"""filterfalse, groupby and its groups, tee, and the combinatoric iterators: saved
mid-run, they continue where they were, and the load consumes nothing; forged records
of each are refused before itertools sees them, and nothing they hold is called."""

import itertools

import pytest

import autosave
from autosave import FormatError, SaveError, dumps, loads
from forge import Forge

autosave.allow("test_itertools_adapters")
CALLS = []


def spy(x):
    """A key function that records every call."""
    CALLS.append(x)
    return x


def roundtrip(obj):
    data = dumps(obj)
    out = loads(data)
    assert dumps(out) == data
    return out


def test_groupby_continues_and_the_group_in_hand_stays_valid():
    source = iter("aaabccdd")
    groups = itertools.groupby(source)
    next(groups)
    _, current = next(groups)
    stale_key, stale = next(groups)              # "c": the "b" group is no longer current
    state = {"groups": groups, "current": stale, "old": current, "src": source}
    out = roundtrip(state)
    assert list(out["old"]) == [] and list(current) == []
    assert list(out["current"]) == ["c", "c"]
    assert [(k, list(g)) for k, g in out["groups"]] == [("d", ["d", "d"])]


def test_groupby_with_a_key_function_and_not_started():
    out = roundtrip(itertools.groupby(iter([1, 3, 2, 4, 5]), key=_odd))
    assert [(k, list(g)) for k, g in out] == [(True, [1, 3]), (False, [2, 4]), (True, [5])]


def _odd(x):
    return x % 2 == 1


def test_tee_iterators_share_their_buffer_and_their_source():
    source = iter(range(200))                    # buffers span several tee data links
    a, b = itertools.tee(source)
    for _ in range(130):
        next(a)
    next(b)
    out = roundtrip({"a": a, "b": b, "src": source})
    assert next(out["b"]) == 1 and next(out["a"]) == 130
    assert next(out["src"]) == 131                # the load read nothing from it
    assert list(out["b"])[:3] == [2, 3, 4] and list(out["a"])[0] == 132
    c, d = itertools.tee(iter("xy"))
    list(c)
    c2, d2 = roundtrip([c, d])
    assert list(c2) == [] and list(d2) == ["x", "y"]


def test_combinatoric_iterators_continue_mid_run_and_when_done():
    made = [itertools.product("ab", range(3), repeat=2), itertools.permutations("abcd", 3),
            itertools.combinations("abcde", 3), itertools.combinations_with_replacement("ab", 4),
            itertools.permutations("ab", 5), itertools.combinations("ab", 5)]
    for it in made[:4]:
        next(it), next(it)
    spent = itertools.permutations("ab")
    list(spent)
    out = roundtrip([*made, spent])
    for original, copy in zip(made, out):
        assert list(copy) == list(original)
    assert list(out[-1]) == []


def test_filterfalse_and_its_source_stay_shared():
    source = iter([0, 1, "", "a", None])
    ff = itertools.filterfalse(None, source)
    next(ff)
    out = roundtrip([ff, source])
    assert next(out[1]) == 1 and list(out[0]) == ["", None]


def test_pairwise_is_refused_with_what_to_do_instead():
    with pytest.raises(SaveError, match=r"root\['p'\]: .* an itertools.pairwise.*itertools.tee"):
        dumps({"p": itertools.pairwise("abc")})


# -- forged records ------------------------------------------------------------------------

def forged(build):
    f = Forge()
    build(f)
    return loads(f.bytes())


def it(f, *items):
    return f.rec("builtins.list_iterator", f.rec("builtins.list", *items), 0)


@pytest.mark.parametrize("build, match", [
    (lambda f: f.rec("itertools.filterfalse", None, f.rec("builtins.list", 1)), "expected an iterator"),
    (lambda f: f.rec("itertools.filterfalse", 5, it(f, 1)), "holds a function"),
    (lambda f: f.rec("itertools.groupby", it(f), None, 1), "started flag"),
    (lambda f: f.rec("itertools.groupby", it(f), None, True, 1, 2), "started flag"),
    (lambda f: f.rec("itertools.groupby", f.rec("builtins.dict", 1, 2), None, False), "iterator"),
    (lambda f: f.rec("itertools._grouper", f.rec("builtins.list"), 1), "holds its groupby"),
    (lambda f: f.rec("itertools._tee", f.rec("builtins.list"), 0), "tee data link"),
    (lambda f: f.rec("itertools._tee", f.rec("itertools._tee_dataobject", it(f), None), 58),
     "index lies in"),
    (lambda f: f.rec("itertools._tee_dataobject", it(f), None, *range(58)), "at most 57"),
    (lambda f: f.rec("itertools._tee_dataobject", it(f),
                     f.rec("itertools._tee_dataobject", it(f), None), 1), "exactly 57"),
    (lambda f: f.rec("itertools._tee_dataobject", it(f), f.rec("builtins.list"), 1), "next link"),
    (lambda f: f.rec("itertools._tee_dataobject", f.rec("builtins.dict", *range(20)), None),
     "expected an iterator"),
    (lambda f: f.rec("itertools.product", None, f.rec("builtins.list", 1, 2)), "must be a tuple"),
    (lambda f: f.rec("itertools.product", f.rec("builtins.tuple", 0, 0),
                     f.rec("builtins.tuple", 1)), "must be 1 ints"),
    (lambda f: f.rec("itertools.product", f.rec("builtins.tuple", "0"),
                     f.rec("builtins.tuple", 1)), "must be 1 ints"),
    (lambda f: f.rec("itertools.permutations", f.rec("builtins.tuple", 1), 10 ** 12, None, None),
     "size must be"),
    (lambda f: f.rec("itertools.combinations", f.rec("builtins.tuple", 1), -1, None), "size must be"),
    (lambda f: f.rec("itertools.combinations_with_replacement", f.rec("builtins.tuple"), 1 << 40,
                     None), "size must be"),
    (lambda f: f.rec("itertools.combinations", f.rec("builtins.list", 1, 2), 1, None), "must be a tuple"),
    (lambda f: f.rec("itertools.permutations", f.rec("builtins.tuple", 1, 2), 1,
                     f.rec("builtins.tuple", 0, 1), f.rec("builtins.tuple", 0, 0)), "cycles must be 1"),
    (lambda f: f.rec("itertools.combinations", f.rec("builtins.tuple", 1, 2), 1,
                     f.rec("builtins.tuple", 0, 1)), "indices must be 1"),
])
def test_forged_itertools_records_are_refused(build, match):
    with pytest.raises(FormatError, match=match):
        forged(build)


def test_functions_in_forged_records_are_stored_never_called():
    def build(f):
        items = f.rec("builtins.list", 1, 2)
        fn = f.glob("test_itertools_adapters.spy")
        g = f.rec("itertools.groupby", f.rec("builtins.list_iterator", items, 0), fn, False)
        ff = f.rec("itertools.filterfalse", fn, f.rec("builtins.list_iterator", items, 0))
        f.rec("builtins.list", items, g, ff)
    CALLS.clear()
    items, g, ff = forged(build)
    assert items == [1, 2] and CALLS == []
    assert [k for k, _ in g] == [1, 2] and CALLS == [1, 2]   # once the game iterates


def test_forged_indices_are_clamped_by_itertools_not_trusted():
    def build(f):
        f.rec("itertools.product", f.rec("builtins.tuple", 99, -5),
              f.rec("builtins.tuple", "a", "b"), f.rec("builtins.tuple", 1))
    out = forged(build)
    assert list(out) in ([("b", 1)], [])
