"""autosave: save everything a game or simulation holds, load it back exactly and safely.

    @autosave.save_root
    class World: ...

    data = autosave.dumps(world)
    world = autosave.loads(data)
"""

from .errors import (
    ChecksumError,
    CoroutineError,
    CorruptLogError,
    FormatError,
    IncompatibleSaveError,
    LoadError,
    SaveError,
    StaleGeneratedCodeError,
    TruncatedSaveError,
    UntrustedTypeError,
)
from .files import dumps, load, loads, save
from .log import Bookmark, CheckpointLog, LogLockedError, Position
from .registry import allow, asset, assets, save_root, saveable, upgrade
from .schema import transient
from .extend import register
from .adapters.base import Adapter, register_adapter
from .coroutines import coroutine
from .coroutines import adapter as _coroutine_adapter  # noqa: F401  (registers the record type)

__all__ = [
    "save_root", "saveable", "register", "Adapter", "register_adapter", "transient", "upgrade", "asset", "assets", "allow", "coroutine",
    "dumps", "loads", "save", "load",
    "CheckpointLog", "Position", "Bookmark", "LogLockedError",
    "SaveError", "LoadError", "FormatError", "UntrustedTypeError",
    "IncompatibleSaveError", "CorruptLogError", "StaleGeneratedCodeError", "CoroutineError",
    "ChecksumError", "TruncatedSaveError",
]

__version__ = "0.1.0"
