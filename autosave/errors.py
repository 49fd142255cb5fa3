"""Every error autosave raises. Each message says what went wrong and where."""


class SaveError(Exception):
    """Something reachable from the root cannot be saved.

    ``path`` is the object path from the root, e.g. ``root.squads[3].leader.ai``.
    """

    def __init__(self, message, path=None):
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


class LoadError(Exception):
    """Base of every error raised while loading a save or a log."""


class FormatError(LoadError):
    """The bytes are not a well-formed autosave file (truncated, corrupt, forged)."""


class UntrustedTypeError(LoadError):
    """The save names a type or function outside the allowed namespaces."""


class IncompatibleSaveError(LoadError):
    """The save is well formed but cannot be mapped onto the current classes."""


class CorruptLogError(LoadError):
    """Committed data inside a checkpoint log failed its checksum."""


class StaleGeneratedCodeError(Exception):
    """Generated save code no longer matches its class (raised with AUTOSAVE_STRICT=1;
    otherwise the class is saved by reflection with a warning)."""
