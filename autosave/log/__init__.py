"""The checkpoint log: one crash-safe file holding a game's whole history.

``file`` is the storage layer (opening and recovery, commits, reading) over ``records``
(the byte layout, docs/log-format.md) and ``ops`` (the system calls, which ``faults``
replaces to inject failures); ``history`` the history tree, checkpoints, bookmarks,
reached data and globals on top of it, rebuilt from the file by ``replay``; ``content``
the fingerprints of the game's content and the upgrade of a history to changed content;
``inspect`` prints a log for ``autosave inspect``.
"""

from ..errors import (LogClosedError, LogForkedError, LogPoisonedError, LogUnusableError,
                      ReadOnlyLogError, StepOrderError)
from .file import LogFile, LogLockedError
from .history import Bookmark, CheckpointLog, NodeRecord, Position

__all__ = ["Bookmark", "CheckpointLog", "LogClosedError", "LogFile", "LogForkedError",
           "LogLockedError", "LogPoisonedError", "LogUnusableError", "NodeRecord", "Position",
           "ReadOnlyLogError", "StepOrderError"]
