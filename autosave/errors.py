"""Every error autosave raises. Each message says what went wrong and where."""

import os
import sys
import warnings


class SaveError(Exception):
    """Something reachable from the root cannot be saved.

    ``path`` is the object path from the root, e.g. ``root.squads[3].leader.ai``; the
    message shows a path of thousands of steps with its middle elided.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        self.reason = message
        shown = path
        if path and len(path) > 240:
            shown = f"{path[:120]}...({len(path) - 200:,} characters)...{path[-80:]}"
        super().__init__(f"{shown}: {message}" if path else message)


class CoroutineError(TypeError):
    """A generator function cannot be made resumable by ``@autosave.coroutine``.

    Raised when the function is decorated (or by ``autosave-codegen``), never while a
    game runs. ``filename`` and ``lineno`` point at the construct; ``reason`` says why.
    """

    def __init__(self, reason: str, filename: str | None = None, lineno: int | None = None,
                 function: str | None = None) -> None:
        self.reason, self.filename, self.lineno, self.function = reason, filename, lineno, function
        where = f"{filename}:{lineno}: " if filename and lineno else (f"{filename}: " if filename else "")
        what = f"@autosave.coroutine {function}: " if function else "@autosave.coroutine: "
        super().__init__(f"{where}{what}{reason}")


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


class ChecksumError(FormatError):
    """A save's bytes differ from the ones written: its checksum does not match."""


class TruncatedSaveError(FormatError):
    """A save ends before the length its header announces (an interrupted copy or write)."""


class CompatError(Exception):
    """Base of the input errors of ``autosave compat`` (exit status 2): the judgement
    could not be made, as opposed to a judgement of "breaking"."""


class BaselineError(CompatError):
    """A baseline snapshot is missing, unreadable, malformed, of an unknown manifest
    format, or could not be read from the git ref named."""


class CompatConfigError(CompatError):
    """An ``--allow`` entry or the ``[tool.autosave.compat]`` section is malformed or
    names an unknown rule."""


class CorpusError(CompatError):
    """A save corpus path does not exist or holds no saves."""


class SnapshotError(CompatError):
    """The package under judgement cannot be imported or described."""


class LogUnusableError(Exception):
    """This CheckpointLog (or LogFile) object refuses the call; the file itself is fine.

    Its kinds say why: read-only, closed, poisoned by a failed write, or used from a
    process other than the one that opened it."""


class ReadOnlyLogError(LogUnusableError, PermissionError):
    """A mutation of a checkpoint log opened read-only."""


class LogClosedError(LogUnusableError):
    """A call on a checkpoint log after ``close()``."""


class LogPoisonedError(LogUnusableError):
    """A flush failed after its data reached the kernel (a failed fsync or superblock
    write): what the kernel holds is unknown, so this writer refuses every mutation.
    Close and reopen the log; it opens at the newest commit that is durable."""


class LogForkedError(LogUnusableError):
    """A checkpoint log writer used from a process other than the one that opened it
    (after ``fork()``); the child must open the log itself."""


class LostPositionError(LoadError):
    """A position (a bookmark's, the last one) in a node that the game's current content
    no longer has: restoring it would give some other moment, so it is refused."""


class StepOrderError(ValueError):
    """A ``CheckpointLog`` step that would record the wrong state for its line: under
    content, the state a node starts from must be given to ``enter(node, state=...)``,
    and a node has no more steps than lines + 1 (docs/log.md)."""


class UnreachableUpgradeWarning(UserWarning):
    """An ``@autosave.upgrade`` hook that can never run: registered ``from_version`` N
    for a class still at version N (or older). Bump the class's version past it."""


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_GENERATED = ("_autosave_generated.py", "_autosave_coroutines.py")
_IMPORTLIB = os.path.join("importlib", "__init__.py")


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """Warn at the game's line that led here: the first frame outside autosave, the
    import machinery and generated modules (a fixed stacklevel would name importlib
    when the warning comes from an import autosave made)."""
    frame, level = sys._getframe(1), 2
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_HERE) or name.startswith("<frozen ")
                or name.endswith(_IMPORTLIB) or os.path.basename(name) in _GENERATED):
            break
        # warnings itself does not count importlib's bootstrap frames in stacklevel
        if not ("importlib" in name and "_bootstrap" in name):
            level += 1
        frame = frame.f_back  # type: ignore[assignment]  # the loop ends at the top frame
    warnings.warn(message, category, stacklevel=level)
