"""The walk and the rebuild are iterative: graphs far deeper than the recursion limit
save and load (pickle raises RecursionError long before)."""

import pickle
import sys

import pytest

import autosave

autosave.allow(__name__)


class Link:
    __slots__ = ("value", "next")

    def __init__(self, value, next=None):
        self.value = value
        self.next = next


def chain(n):
    head = None
    for i in range(n, 0, -1):
        head = Link(i, head)
    return head


@pytest.mark.slow
def test_million_node_linked_list_round_trips():
    n = 1_000_000
    back = autosave.loads(autosave.dumps(chain(n)))
    count, node, last = 0, back, 0
    while node is not None:
        count += 1
        assert node.value == last + 1
        last = node.value
        node = node.next
    assert count == n


def test_deep_chain_beats_recursion_limit_where_pickle_fails():
    depth = sys.getrecursionlimit() * 20
    head = chain(depth)
    with pytest.raises(RecursionError):
        pickle.dumps(head)
    back = autosave.loads(autosave.dumps(head))
    assert back.next.next.value == 3


@pytest.mark.slow
def test_deeply_nested_lists():
    outer = inner = []
    for _ in range(200_000):
        nxt = []
        inner.append(nxt)
        inner = nxt
    back = autosave.loads(autosave.dumps(outer))
    depth = 0
    while back:
        back = back[0]
        depth += 1
    assert depth == 200_000
