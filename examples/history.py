"""autosave's checkpoint log: a whole play history in one crash-safe file.

    python examples/history.py

A tiny branching story. Every step of play goes into the log; a checkpoint (the full
game state) is written every few steps; save slots are bookmarks into the history, so
saving is instant. Loading a slot restores the nearest checkpoint and replays the few
steps after it. Playing on from an earlier point makes a branch: the old one is kept.
"""

import os
import tempfile

import attrs

import autosave


@autosave.save_root
@attrs.define
class Story:
    line: int = 0
    courage: int = 0
    log: list = attrs.Factory(list)

    def advance(self, choice="wait"):
        self.line += 1
        if choice == "fight":
            self.courage += 1
        self.log.append(f"line {self.line}: {choice}")


def replay(story, steps):
    """Re-run `steps` steps from a checkpoint. Deterministic here; a real game replays
    its script (without calling log.step)."""
    for _ in range(steps):
        story.advance()
    return story


def main():
    path = os.path.join(tempfile.mkdtemp(), "profile.log")
    story = Story()
    with autosave.CheckpointLog.open(path, checkpoint_every=4) as log:
        log.enter("chapter1", state=story)   # step 0: the state the chapter starts from
        for _ in range(6):
            story.advance()
            log.step(story)
        log.bookmark("before-the-gate", description="At the gate")   # instant: a pointer
        for _ in range(3):
            story.advance("fight")
            log.step(story)
        log.reached.add("ending/brave")
        log.globals["endings_seen"] = 1
        print("played:", log.history(), "courage", story.courage)

        # Load the slot: checkpoint at line 4, then 2 replayed steps. The restored
        # state is already recorded at the bookmark: advance, then step.
        story = log.restore(log.bookmarks["before-the-gate"].position, replay=replay)
        print("loaded slot at line", story.line, "courage", story.courage)
        story.advance("flee")
        log.step(story)                                       # a new branch
        print("after choosing differently:", log.history())

    with autosave.CheckpointLog.open(path) as log:            # everything was flushed
        print("reopened: slots", list(log.bookmarks), "reached", sorted(log.reached),
              "globals", log.globals)
    print(f"inspect it with:  autosave inspect {path}")


if __name__ == "__main__":
    main()
