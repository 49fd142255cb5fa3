"""Checkpoint logs across content patches (autosave/log/content.py): a random story is
played with bookmarks, checkpoints and branches, patched at random (steps inserted,
deleted, replaced, blocks moved, nodes removed), and reopened with the new content.
Every bookmark must then restore to exactly the state the *new* story gives at its
mapped step (an oracle replays the new story), name the same line when that line
survives, or be reported lost when its node is gone."""

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autosave import CheckpointLog
from autosave.errors import LostPositionError

EXAMPLES = int(os.environ.get("AUTOSAVE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])


class Game:
    """A story player. The state passed to step i of a node is the state before its
    line i runs: the path of nodes entered before and the lines run so far here."""

    def __init__(self, log, story):
        self.log, self.story, self.state = log, story, None

    def enter(self, node):
        path = [] if self.state is None else self.state["path"] + [self.state["node"]]
        self.state = {"node": node, "path": path, "lines": []}
        self.log.enter(node, state=self.state)

    def can_advance(self):
        s = self.state
        return s is not None and len(s["lines"]) + 1 < len(self.story[s["node"]])

    def advance(self):
        s = self.state
        line = self.story[s["node"]][len(s["lines"])]
        self.log.reached.add(line)
        self.state = {**s, "lines": s["lines"] + [line]}
        self.log.step(self.state)

    def replay(self, state, steps):
        """Re-run ``steps`` lines from ``state`` under this game's story."""
        lines = list(state["lines"])
        keys = self.story[state["node"]]
        for _ in range(steps):
            lines.append(keys[len(lines)])
        return {**state, "lines": lines}

    def restore(self, position):
        self.state = self.log.restore(position, replay=self.replay)
        return self.state


def oracle(story, state, step):
    """The state the story gives at ``step`` of the node of ``state``, entered the same way."""
    return {**state, "lines": list(story[state["node"]][:step])}


@st.composite
def stories(draw):
    count = draw(st.integers(1, 4))
    story, token = {}, 0
    for n in range(count):
        length = draw(st.integers(1, 9))
        story[f"n{n}"] = [f"n{n}.{token + i}" for i in range(length)]
        token += length
    return story


def play(data, log, story, game_steps):
    """Random play: enter nodes, advance, bookmark, restore a bookmark and branch.
    Returns slot -> the state the bookmark was made at."""
    game = Game(log, story)
    marks = {}
    for _ in range(game_steps):
        action = data.draw(st.sampled_from(["enter", "advance", "advance", "advance",
                                            "bookmark", "branch", "flush"]), label="action")
        if action == "enter" or game.state is None:
            game.enter(data.draw(st.sampled_from(sorted(story)), label="node"))
        elif action == "advance" and game.can_advance():
            game.advance()
        elif action == "bookmark":
            slot = f"s{len(marks)}"
            log.bookmark(slot)
            marks[slot] = game.state
        elif action == "branch" and marks:
            slot = data.draw(st.sampled_from(sorted(marks)), label="restore")
            if slot in log.bookmarks:
                assert game.restore(log.bookmarks[slot].position) == marks[slot]
        elif action == "flush":
            log.flush()
    if game.state is not None:
        log.bookmark("last")
        marks["last"] = game.state
    return marks


def patch(data, story, tag):
    """(new story, nodes whose lines were moved as a block, removed nodes); new lines
    are named ``tag`` + a number, unique across patches."""
    new, moved, removed = {}, set(), set()
    fresh = 0
    for name, keys in story.items():
        if data.draw(st.integers(0, 7), label=f"remove {name}") == 0:
            removed.add(name)
            continue
        keys = list(keys)
        for _ in range(data.draw(st.integers(0, 3), label="edits")):
            how = data.draw(st.sampled_from(["insert", "delete", "replace", "move"]))
            i = data.draw(st.integers(0, len(keys)), label="at")
            if how == "insert":
                keys.insert(i, f"{tag}{fresh}")
                fresh += 1
            elif how == "delete" and i < len(keys):
                del keys[i]
            elif how == "replace" and i < len(keys):
                keys[i] = f"{tag}{fresh}"
                fresh += 1
            elif how == "move" and len(keys) > 2:
                j = data.draw(st.integers(i, len(keys)), label="block end")
                block, rest = keys[i:j], keys[:i] + keys[j:]
                k = data.draw(st.integers(0, len(rest)), label="to")
                keys = rest[:k] + block + rest[k:]
                moved.add(name)
        new[name] = keys
    return new, moved, removed


def check_upgraded(log, story, new, marks, moved, removed):
    report = log.upgrade_report
    game = Game(log, new)
    for slot, state in marks.items():
        node, old_step = state["node"], len(state["lines"])
        line = story[node][old_step]
        entry = report.bookmarks[slot]
        if node in removed or not new[node]:
            assert entry["status"] == "lost" and slot not in log.bookmarks, entry
            continue
        position = log.bookmarks[slot].position
        assert position.node == node and entry["new"] == position.step
        step = position.step
        if entry["note"] is None:
            # The same line, at its new index.
            assert new[node][step] == line, (slot, entry)
        else:
            # Its line was removed: the nearest earlier surviving line, or the start.
            assert line not in new[node] or node in moved, (slot, entry)
            assert step == 0 or new[node][step] in story[node][:old_step], (slot, entry)
        if line in new[node] and node not in moved:
            assert entry["note"] is None and new[node][step] == line
        if new[node] == story[node]:
            assert (entry["status"], step) == ("kept", old_step)
        assert game.restore(position) == oracle(new, state, step), slot
    for node in removed:
        assert report.nodes.get(node, {"status": "removed"})["status"] == "removed"
    gone = {line for node in story for line in story[node]} - {
        line for node in new for line in new[node]}
    assert not gone & set(log.reached)


@pytest.mark.slow
@FUZZ
@given(data=st.data(), story=stories(), every=st.integers(1, 3), snapshots=st.booleans())
def test_bookmarks_follow_their_lines_across_a_patch(tmp_path_factory, data, story, every,
                                                     snapshots):
    path = tmp_path_factory.mktemp("content") / "p.log"
    # deltas_per_snapshot=0: every commit a snapshot, so both ways of storing content
    # records are replayed.
    with CheckpointLog.open(path, checkpoint_every=every, content=story,
                            deltas_per_snapshot=0 if snapshots else 64) as log:
        marks = play(data, log, story, data.draw(st.integers(1, 25), label="steps"))
    # One patch, or two in a row (the second maps what the first already moved).
    for round in range(data.draw(st.integers(1, 2), label="patches")):
        with CheckpointLog.open(path, writable=False) as log:
            old = {s: m.position for s, m in log.bookmarks.items()}
        new, moved, removed = patch(data, story, f"r{round}.")
        with CheckpointLog.open(path, checkpoint_every=every, content=new) as log:
            check_upgraded(log, story, new, marks, moved, removed)
            for slot, position in old.items():
                if position.node in removed:       # never some other moment
                    with pytest.raises(LostPositionError, match="removed from the content"):
                        log.restore(position, replay=Game(log, new).replay)
            game = Game(log, new)
            marks = {s: game.restore(m.position) for s, m in log.bookmarks.items()}
            # Play goes on under the new content, then the profile reopens unchanged.
            if new and new[sorted(new)[0]]:
                game.enter(sorted(new)[0])
                mark = log.bookmark(f"after{round}")
                # Entering a node again from the same step reuses its record, and the
                # state first recorded there (the log's rule): that is the reference.
                marks[f"after{round}"] = game.restore(mark.position)
            kept = {s: log.bookmarks[s].position for s in log.bookmarks}
        with CheckpointLog.open(path, checkpoint_every=every, content=new) as log:
            assert {s: m.position for s, m in log.bookmarks.items()} == kept
            assert not log.upgrade_report.records
            assert all(e["status"] == "kept" for e in log.upgrade_report.bookmarks.values())
        with CheckpointLog.open(path, writable=False) as log:   # no content: as recorded
            assert {s: m.position for s, m in log.bookmarks.items()} == kept
        story = new


def test_the_patched_story_example_runs():
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "patched_story.py")
    out = subprocess.run([sys.executable, example], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert "node flashback: removed\nnode station: changed\nnode train: changed" in out
    assert "bookmark memory: lost\nbookmark waved: moved 2 -> 3" in out
    assert "restored letter: last line shown: 'Someone has left a letter.'" in out
    assert "restored waved: last line shown: 'A stranger waves.'" in out
    assert "slots now: ['letter', 'waved']" in out


def record_plain(path, story, upto):
    """A profile recorded without content (as every log before content records)."""
    with CheckpointLog.open(path, checkpoint_every=2) as log:
        game = Game(log, story)
        game.enter("a")
        for _ in range(upto):
            game.advance()
        log.bookmark("end")
        return game.state


def test_a_log_recorded_without_content_adopts_it_then_follows_patches(tmp_path):
    path = tmp_path / "plain.log"
    story = {"a": ["a0", "a1", "a2", "a3", "a4"]}
    state = record_plain(path, story, 3)
    with CheckpointLog.open(path, content=lambda node: story.get(node)) as log:
        assert log.upgrade_report.nodes == {"a": {"status": "adopted",
                                                  "hash": log.upgrade_report.nodes["a"]["hash"]}}
        assert log.bookmarks["end"].position.step == 3
    new = {"a": ["a0", "a2", "a3", "a4"]}            # a1 cut
    with CheckpointLog.open(path, content=new) as log:
        entry = log.upgrade_report.bookmarks["end"]
        assert (entry["status"], entry["old"], entry["new"]) == ("moved", 3, 2)
        assert Game(log, new).restore(log.bookmarks["end"].position) == oracle(new, state, 2)


def test_duplicate_keys_and_a_callable_that_raises_key_error(tmp_path):
    path = tmp_path / "dup.log"
    story = {"a": ["x", "x", "y", "x", "y"], "b": ["b0", "b1"]}
    with CheckpointLog.open(path, checkpoint_every=1, content=story) as log:
        game = Game(log, story)
        game.enter("a")
        for _ in range(4):
            game.advance()
        log.bookmark("a4")
        game.enter("b")
        log.bookmark("b0")
    new = {"a": ["x", "y", "x", "y"]}

    def content(node):
        return new[node]                               # KeyError: the node is gone
    with CheckpointLog.open(path, content=content) as log:
        assert log.upgrade_report.lost == ["b0"]
        position = log.bookmarks["a4"].position
        assert new["a"][position.step] == "y"
        assert Game(log, new).restore(position)["lines"] == new["a"][:position.step]


def test_entering_a_node_the_content_lacks_is_refused(tmp_path):
    with CheckpointLog.open(tmp_path / "l.log", content={"a": ["a0"]}) as log:
        with pytest.raises(ValueError, match="'b' is not in the content"):
            log.enter("b")
        assert log.position is None


def test_content_is_checked_before_anything_is_written(tmp_path):
    path = tmp_path / "bad.log"
    record_plain(path, {"a": ["a0", "a1"]}, 1)
    before = path.read_bytes()
    with pytest.raises(TypeError, match="step key"):
        CheckpointLog.open(path, content={"a": [1.5, 2.5]})
    with pytest.raises(TypeError, match="mapping"):
        CheckpointLog.open(path, content=["a"])
    assert path.read_bytes() == before


def test_a_version_1_log_opens_with_content_and_follows_a_patch(tmp_path):
    from test_log_file import write_version_1_log

    path = tmp_path / "v1.log"
    state = write_version_1_log(path)             # node "ch1", bookmark "a" at step 0
    with CheckpointLog.open(path, content={"ch1": ["l0", "l1"]}, writable=False) as log:
        assert log.upgrade_report.nodes["ch1"]["status"] == "adopted"
        assert log.restore(log.bookmarks["a"].position) == state
    with CheckpointLog.open(path, content={"ch1": ["l0", "l1"]}) as log:
        log.step({"hp": 8})
        log.bookmark("b")
    with CheckpointLog.open(path, content={"ch1": ["new", "l0", "l1"]}) as log:
        marks = log.upgrade_report.bookmarks
        assert (marks["a"]["new"], marks["b"]["new"]) == (1, 2)
        assert log.restore(log.bookmarks["b"].position, replay=lambda s, n: (s, n)) == (state, 2)
    with CheckpointLog.open(path, content={"ch2": ["x"]}) as log:
        assert log.upgrade_report.lost == ["a", "b"] and not log.bookmarks
        log.enter("ch2", state={"hp": 9})
        log.bookmark("c")
    with CheckpointLog.open(path, writable=False) as log:
        assert sorted(log.bookmarks) == ["c"] and log.restore(log.bookmarks["c"].position) == {
            "hp": 9}
