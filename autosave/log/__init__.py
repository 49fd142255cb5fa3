"""The checkpoint log: one crash-safe file holding a game's whole history.

``file`` is the storage layer (blocks, framing, checksums, commits, recovery), specified
in docs/log-format.md; ``history`` the history tree, checkpoints, bookmarks, reached
data and globals on top of it.
"""

from .file import LogFile, LogLockedError
from .history import Bookmark, CheckpointLog, NodeRecord, Position

__all__ = ["Bookmark", "CheckpointLog", "LogFile", "LogLockedError", "NodeRecord", "Position"]
