"""The order of CheckpointLog steps under content patches (docs/log.md).

Step *i* of a node must hold the state before its line *i* runs, or a patch of line *i*
keeps a checkpoint made from the old line and restores it stale. The state a node starts
from goes to ``enter(node, state=...)``; each ``step()`` follows a line. A game that
steps after each line but gives ``enter`` no state (the order that restored stale states
before) is refused at its first step, before anything is recorded; a game that does the
right thing restores, after any patch of one line, exactly what the new script gives."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autosave import CheckpointLog, StepOrderError

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(script, node, state, line):
    """What a line does: the state after it, from the state before and the line's text."""
    return {"node": node, "shown": state["shown"] + [line], "mood": state["mood"] + len(line)}


def start(node):
    return {"node": node, "shown": [], "mood": 0}


def replayer(script):
    def replay(state, steps):
        for _ in range(steps):
            state = run(script, state["node"], state, script[state["node"]][len(state["shown"])])
        return state
    return replay


def truth(script, node, steps):
    """The state the script gives after ``steps`` lines of ``node``."""
    return replayer(script)(start(node), steps)


scripts = st.lists(st.text("abc", min_size=1, max_size=3), min_size=1, max_size=8,
                   unique=True).map(lambda lines: {"scene": lines})


@SETTINGS
@given(script=scripts, data=st.data())
def test_steps_after_each_line_restore_what_the_patched_script_gives(tmp_path_factory,
                                                                    script, data):
    path = tmp_path_factory.mktemp("order") / "p.log"
    lines = script["scene"]
    played = data.draw(st.integers(0, len(lines)), label="lines played")
    every = data.draw(st.integers(1, 3), label="checkpoint_every")
    with CheckpointLog.open(path, checkpoint_every=every, content=script) as log:
        state = start("scene")
        log.enter("scene", state=state)
        for line in lines[:played]:
            state = run(script, "scene", state, line)
            log.step(state)
        log.bookmark("slot")
    edited = data.draw(st.integers(0, len(lines) - 1), label="edited line")
    patched = {"scene": [*lines[:edited], lines[edited] + "!", *lines[edited + 1:]]}
    with CheckpointLog.open(path, checkpoint_every=every, content=patched) as log:
        position = log.bookmarks["slot"].position
        # A bookmark before the edited line moves to the step before it (docs/log-format.md)
        assert position.step == (max(played - 1, 0) if edited == played else played)
        restored = log.restore(position, replay=replayer(patched))
        assert restored == truth(patched, "scene", position.step)


def test_a_first_step_after_a_bare_enter_is_refused_under_content(tmp_path):
    script = {"scene": ["Hello.", "Goodbye."]}
    path = tmp_path / "p.log"
    with CheckpointLog.open(path, content=script) as log:
        log.enter("scene")
        state = run(script, "scene", start("scene"), "Hello.")    # line 0 ran first
        with pytest.raises(StepOrderError, match=r"log.enter\('scene', state="):
            log.step(state)
        assert log.history() == [("scene", 0, -1)]                # nothing recorded
        # The first fix the message gives: the node's start state to enter().
        log.enter("scene", state=start("scene"))
        log.step(state)
        log.bookmark("slot")
    patched = {"scene": ["Hello there.", "Goodbye."]}
    with CheckpointLog.open(path, content=patched) as log:
        restored = log.restore(log.bookmarks["slot"].position, replay=replayer(patched))
        assert restored == truth(patched, "scene", 1) and restored["shown"] == ["Hello there."]


def test_more_steps_than_lines_are_refused_under_content(tmp_path):
    """A step stepped twice (the restored state stepped again, say) shows as one step
    more than the node has lines, once the node is played to its end."""
    script = {"scene": ["a", "b"]}
    with CheckpointLog.open(tmp_path / "p.log", content=script) as log:
        state = start("scene")
        log.enter("scene", state=state)
        for line in script["scene"]:
            state = run(script, "scene", state, line)
            log.step(state)
        with pytest.raises(StepOrderError, match="has 2 lines .* would be step 3"):
            log.step(state)
        assert log.position.step == 2
        # After restore() the restored state is recorded: advance, then step.
        state = log.restore(log.back(1), replay=replayer(script))
        state = run(script, "scene", state, "b")
        assert log.step(state).step == 2


def test_without_content_both_forms_stay_as_they_were(tmp_path):
    with CheckpointLog.open(tmp_path / "p.log", checkpoint_every=2) as log:
        log.enter("a")                                  # the game's first step is step 0
        log.step({"i": 1})
        log.step({"i": 2})
        log.enter("b", state={"i": 0})                  # step 0: the state it starts from
        log.step({"i": 1})
        assert log.history() == [("a", 0, 1), ("b", 0, 1)]
        assert log.restore(log.back(1)) == {"i": 0}


def test_entering_again_with_a_state_reuses_the_first_step(tmp_path):
    script = {"a": ["x"], "b": ["y"]}
    with CheckpointLog.open(tmp_path / "p.log", content=script) as log:
        log.enter("a", state={"i": 0})
        log.enter("b", state={"i": 0})
        first = log.position
        log.restore(log.back(1))
        log.enter("b", state={"i": 0})                  # the same entry, reached again
        assert log.position == first and len(log.records) == 2


def test_a_start_state_that_cannot_be_saved_leaves_no_start(tmp_path):
    import autosave

    with CheckpointLog.open(tmp_path / "p.log", content={"a": ["x"]}) as log:
        with pytest.raises(autosave.SaveError):
            log.enter("a", state={"gen": (i for i in ())})
        with pytest.raises(StepOrderError):             # no step 0 to follow
            log.step({"i": 1})
        log.enter("a", state={"i": 0})
        assert log.step({"i": 1}).step == 1
