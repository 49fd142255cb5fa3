"""A small branching story, played, then patched — a line inserted, a line edited, a
scene cut — and the player's profile reopened under the new script.

    python examples/patched_story.py

The game tells the log its content: per node, one key per line (here the line itself;
a real game would use a hash or a line id). Each bookmark follows its line to where the
patch put it, the one in the cut scene is reported lost, and restoring gives the state
the *new* script gives at that line.
"""

import os
import tempfile

from autosave import CheckpointLog
from autosave.errors import LostPositionError

V1 = {
    "station": ["Rain on the platform.", "A stranger waves.", "You wave back.",
                "The train arrives."],
    "train": ["The carriage is empty.", "Someone left a letter.", "You open it.",
              "It is addressed to you."],
    "flashback": ["Ten years earlier.", "The same station.", "The same stranger."],
}
# The patch: a line inserted early in "station", a typo-level edit of a line in
# "train", and the "flashback" scene cut.
V2 = {
    "station": ["Rain on the platform.", "Thunder, far away.", "A stranger waves.",
                "You wave back.", "The train arrives."],
    "train": ["The carriage is empty.", "Someone has left a letter.", "You open it.",
              "It is addressed to you."],
}


class Story:
    """The log holds, at step i of a node, the state *before* line i runs: the state a
    node starts from goes to ``enter``, and each line's result to ``step`` once it ran."""

    def __init__(self, log, script):
        self.log, self.script, self.state = log, script, None

    def enter(self, node):
        self.state = {"node": node, "shown": []}
        self.log.enter(node, state=self.state)          # step 0: before the first line

    def next(self):
        line = self.script[self.state["node"]][len(self.state["shown"])]
        self.state = {**self.state, "shown": self.state["shown"] + [line]}
        self.log.step(self.state)

    def replay(self, state, steps):
        shown = list(state["shown"])
        for _ in range(steps):
            shown.append(self.script[state["node"]][len(shown)])
        return {**state, "shown": shown}


def main():
    path = os.path.join(tempfile.mkdtemp(), "profile.log")
    with CheckpointLog.open(path, checkpoint_every=2, content=V1) as log:
        story = Story(log, V1)
        story.enter("station")
        story.next()
        story.next()
        log.bookmark("waved", "about to wave back")
        story.next()
        story.enter("flashback")
        story.next()
        log.bookmark("memory", "in the flashback")
        story.enter("train")
        story.next()
        story.next()
        log.bookmark("letter", "about to open the letter")
        old = {slot: mark.position for slot, mark in log.bookmarks.items()}

    # Version 2 of the game: the profile is upgraded when it is opened.
    with CheckpointLog.open(path, checkpoint_every=2, content=V2) as log:
        report = log.upgrade_report
        for node, change in sorted(report.nodes.items()):
            print(f"node {node}: {change['status']}")
        for slot, change in sorted(report.bookmarks.items()):
            moved = f" {change['old']} -> {change['new']}" if change["status"] == "moved" else ""
            print(f"bookmark {slot}: {change['status']}{moved}")
        story = Story(log, V2)
        for slot in sorted(log.bookmarks):
            state = log.restore(log.bookmarks[slot].position, replay=story.replay)
            print(f"restored {slot}: last line shown: {state['shown'][-1]!r}")
        try:
            log.restore(old["memory"], replay=story.replay)
        except LostPositionError as e:
            print(f"the flashback bookmark is lost: {type(e).__name__}")
        print("slots now:", sorted(log.bookmarks))


if __name__ == "__main__":
    main()
