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
    LostPositionError,
    IncompatibleSaveError,
    LoadError,
    SaveError,
    StaleGeneratedCodeError,
    TruncatedSaveError,
    UntrustedTypeError,
)
from .files import copy, dump, dumps, load, loads, save
from .log import (Bookmark, CheckpointLog, LogClosedError, LogForkedError, LogLockedError,
                  LogPoisonedError, LogUnusableError, Position, ReadOnlyLogError,
                  StepOrderError)
from .runs import CheckpointError, RunCheckpoint, ShardReceipt
from .model.registry import allow, asset, assets, save_root, saveable, upgrade
from .model.schema import renamed_from, transient
from .model.reconstructors import reconstructor
from .model.extend import register
from .model.adapters.base import Adapter, register_adapter
from .coroutines import coroutine, label        # also registers the coroutine record type

__all__ = [
    "save_root", "saveable", "transient", "renamed_from", "upgrade", "asset", "assets", "allow", "coroutine",
    "label",
    "register", "Adapter", "register_adapter", "reconstructor",
    "dumps", "loads", "save", "load", "dump", "copy",
    "CheckpointLog", "Position", "Bookmark", "LogLockedError", "LogUnusableError",
    "LogClosedError", "LogPoisonedError", "LogForkedError", "ReadOnlyLogError",
    "StepOrderError", "RunCheckpoint", "ShardReceipt", "CheckpointError",
    "SaveError", "LoadError", "FormatError", "UntrustedTypeError",
    "IncompatibleSaveError", "CorruptLogError", "LostPositionError", "StaleGeneratedCodeError",
    "CoroutineError",
    "ChecksumError", "TruncatedSaveError",
]

__version__ = "0.1.0"


def __dir__():
    # The public face only: the package's modules (walk, rebuild, ...) are private.
    return sorted([*__all__, "__version__"])
