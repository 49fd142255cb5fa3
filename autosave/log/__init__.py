"""The checkpoint log: one crash-safe file holding a game's whole history.

``file`` is the storage layer (blocks, framing, checksums, commits, recovery), specified
in docs/log-format.md.
"""

from .file import LogFile, LogLockedError

__all__ = ["LogFile", "LogLockedError"]
