"""The whole file's budget (docs/security.md, "Budgets"): records that each keep to
their own bound may not sum past what the file's size allows. Each case is a file
forged as an attacker would (tests/forge.py), loaded with both loop implementations:
refused with a FormatError naming a record, within the memory the file is allowed;
and the same records in a game's own numbers still load."""

import itertools
import tracemalloc

import pytest

import autosave
from autosave.errors import FormatError
from autosave.format.kernels import python_loops
from autosave.checks.limits import MEMORY_BASE, MEMORY_PER_BYTE

from forge import Forge


@pytest.fixture(params=["C", "Python"])
def loops(request):
    if request.param == "Python":
        with python_loops():
            yield request.param
    else:
        yield request.param


def allowed(data):
    return MEMORY_BASE + MEMORY_PER_BYTE * len(data)


def refused_within_budget(data, match):
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match=match) as info:
            autosave.loads(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < allowed(data), f"peak {peak:,} bytes, allowed {allowed(data):,}"
    assert "record " in str(info.value) and "docs/security.md" in str(info.value)
    return info.value


def combinatoric(name, count, r, pool=()):
    f = Forge()
    t = f.rec("builtins.tuple", *pool)
    state = (None, None) if name == "itertools.permutations" else (None,)
    f.rec("builtins.list", *[f.rec(name, t, r, *state) for _ in range(count)])
    return f.bytes()


@pytest.mark.parametrize("name", ["itertools.combinations", "itertools.permutations",
                                  "itertools.combinations_with_replacement"])
def test_combinatoric_sizes_are_summed_over_the_file(loops, name):
    # 400 records, each within the per-record size limit: 5 KB declaring 400 MiB
    data = combinatoric(name, 400, 1 << 16)
    refused_within_budget(data, rf"record \d+ .*{name} record of size 65,536")


@pytest.mark.parametrize("name", ["itertools.combinations", "itertools.permutations",
                                  "itertools.combinations_with_replacement"])
def test_combinatoric_records_of_a_game_load(loops, name):
    made = getattr(itertools, name.split(".")[1])(range(6), 3)
    next(made)
    [loaded] = autosave.loads(autosave.dumps([made]))
    assert list(loaded) == list(made)


def test_iterator_gaps_are_summed_over_the_file(loops):
    f = Forge()
    empty = f.rec("builtins.list")
    f.rec("builtins.list", *[f.rec("builtins.list_iterator", empty, 1 << 21)
                             for _ in range(60)])
    refused_within_budget(f.bytes(), r"record \d+ .*list_iterator 2,097,152 items past")


def test_one_gap_larger_than_the_budget_is_refused_before_it_is_allocated(loops):
    f = Forge()
    f.rec("builtins.list_iterator", f.rec("builtins.list"), 1 << 23)
    refused_within_budget(f.bytes(), r"record 1 .*8,388,608 items past")


def test_a_gap_of_a_game_loads(loops):
    items = [1, 2, 3, 4, 5]
    it = iter(items)
    for _ in range(4):
        next(it)
    del items[1:]                    # the position now lies 3 past the end
    items2, it2 = autosave.loads(autosave.dumps([items, it]))
    items2.extend([7, 8, 9, 10])
    assert list(it2) == [10]


def test_dict_iterator_advances_are_summed_over_the_file(loops):
    # every iterator advanced part way over one shared dict: quadratic work from
    # linear bytes
    n = 8000
    f = Forge()
    d = f.rec("builtins.dict", *[x for i in range(n) for x in (i, 0)])
    f.rec("builtins.list", *[f.rec("builtins.dict_iterator", "keys", d, i) for i in range(n)])
    refused_within_budget(f.bytes(), r"record \d+ .*dict_iterator [\d,]+ items into its dict "
                                     r"takes [\d,]+ steps")


def test_dict_iterators_of_a_game_load(loops):
    d = dict.fromkeys(range(1000))
    its = [iter(d) for _ in range(50)]
    for k, it in enumerate(its):
        for _ in range(k * 10):
            next(it)
    d2, its2 = autosave.loads(autosave.dumps([d, its]))
    assert [next(it) for it in its2] == [k * 10 for k in range(50)]


def test_a_budget_is_per_load_and_not_left_behind(loops):
    # a load refused for its budget leaves none open: the next load is charged its own
    data = combinatoric("itertools.combinations", 400, 1 << 16)
    with pytest.raises(FormatError):
        autosave.loads(data)
    small = combinatoric("itertools.combinations", 2, 1 << 16)
    for _ in range(3):
        assert len(autosave.loads(small)) == 2


class Embeds:
    """Holds a save of its own, loaded by its hook: game code loading bytes of its own
    during a load."""

    def __init__(self, inner):
        self.inner = inner

    def __autosave_loaded__(self):
        self.loaded = autosave.loads(self.inner)
        self.copied = autosave.copy([itertools.combinations((), 1 << 16) for _ in range(60)])


autosave.allow(__name__)


@pytest.mark.slow         # a load within a load, each near its budget: seconds
def test_a_load_run_by_a_hook_has_a_budget_of_its_own(loops):
    inner = autosave.dumps([[] for _ in range(400_000)])     # decoding it: ~90 bytes each
    outer = autosave.dumps(Embeds(inner))
    assert len(outer) < 2 * len(inner)
    back = autosave.loads(outer)
    assert len(back.loaded) == 400_000 and len(back.copied) == 60


def test_a_bytes_constructor_is_charged_what_it_allocates(loops):
    """A __reduce__ record may construct bytes from plain values: bytes(n) allocates n
    bytes from a file of a few."""
    f = Forge()
    f.reduce(f.glob("builtins.bytes"), (1 << 30,))
    refused_within_budget(f.bytes(), r"record \d+ .*bytes\(1,073,741,824\) takes")
    g = Forge()
    g.reduce(g.glob("builtins.bytes"), (1 << 20,))
    assert autosave.loads(g.bytes()) == bytes(1 << 20)
