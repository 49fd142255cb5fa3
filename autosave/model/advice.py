"""What a save error advises for things that hold the outside world (files, sockets,
threads, processes, connections) and for functions a load could not find by name.

Every fix named here is one that works when followed (the repository's test suite
follows each one): "register an adapter" is no fix for an open file, whose bytes on disk
are not part of the game's state, and "define it at module level" is no fix for a
function that already is.
"""

import io
import sys

_RESTORE = "autosave.transient and {act} in __autosave_loaded__(self)"

# Each entry: (base classes by module and qualname, what an instance is, how to
# restore one after a load, what to save instead). Named, not imported: a module the
# game did not import has no instances to refuse.
_HANDLES = (
    ("_socket", "socket", "an open socket", "reconnect", "its address"),
    ("ssl", "SSLSocket", "an open socket", "reconnect", "its address"),
    ("mmap", "mmap", "a memory map of a file", "map the file again", "the file's path"),
    ("select", "epoll", "an OS event queue", "make a new one", None),
    ("threading", "Thread", "a thread", "start a new one", None),
    ("multiprocessing.process", "BaseProcess", "a process", "start a new one", None),
    ("subprocess", "Popen", "a running child process", "start it again", "its command line"),
    ("sqlite3", "Connection", "a database connection", "connect again",
     "the database's path"),
    ("sqlite3", "Cursor", "a database cursor", "run the query again", "the query"),
    ("tempfile", "_TemporaryFileWrapper", "an open file", "open it again", "its path"),
    ("tempfile", "SpooledTemporaryFile", "an open file", "open it again", "its path"),
)

# In-memory streams are values, not handles: they save through their own reduce.
_IN_MEMORY = (io.BytesIO, io.StringIO)


def handle_reason(cls):
    """Why instances of ``cls`` cannot be saved, if they hold an OS resource; else None.
    The words follow ``<type name> is`` in the error."""
    if issubclass(cls, io.IOBase) and not issubclass(cls, _IN_MEMORY):
        return _reason("an open file or stream", "open it again", "its path")
    for module, qualname, what, act, instead in _HANDLES:
        base = getattr(sys.modules.get(module), qualname, None)
        if isinstance(base, type) and issubclass(cls, base):
            return _reason(what, act, instead)
    return None


def _reason(what, act, instead):
    saved = f", or save {instead} in a field and use it after loading" if instead else ""
    return (f"{what}: open files, sockets, threads and other handles on the outside world "
            f"cannot be saved, a load could not give them back; mark the field "
            f"{_RESTORE.format(act=act)}{saved}")


class Unsaveable(dict):
    """Exact types a save refuses, with why; ``get`` also finds the handle types above
    and their subclasses (a game's own socket or file class included)."""

    def get(self, cls, default=None):
        found = dict.get(self, cls)
        if found is None:
            found = handle_reason(cls)
        return default if found is None else found


def function_not_found(func, module_name):
    """Why a load could not find ``func`` (a plain function) again, and the fix that
    would work: the message depends on where the function was written."""
    code = func.__code__
    where = f"{func.__qualname__} ({code.co_filename}:{code.co_firstlineno})"
    module = sys.modules.get(module_name)
    module_file = getattr(module, "__file__", None)
    qualname = code.co_qualname
    outer = qualname.split(".<locals>.")[0].split(".")[0]
    if module_file is not None and code.co_filename != module_file:
        return (f"function {where} was made by exec(), eval() or compile(), not written in "
                f"module {module_name!r}, so a load could not find its code; write it in "
                f"the module's source, or mark the field autosave.transient")
    if "<" not in qualname:
        # A def at module level (or in a class) whose name now holds something else.
        return (f"function {where} is written at module level, but "
                f"{module_name}.{qualname} is no longer this function (rebound, or "
                f"replaced by a decorator?), and a load finds it by that name; keep the "
                f"name bound to it, or mark the field autosave.transient")
    if qualname == "<lambda>" or outer.startswith("<"):
        return (f"function {where} is a lambda written in the body of module "
                f"{module_name!r}, outside any def or class, and a load finds such code "
                f"only through a module-level name; assign the lambda to a module-level "
                f"name, write it as a def, or mark the field autosave.transient")
    return (f"function {where} is written inside {module_name}.{outer}, which is no longer "
            f"the function or class of that name (rebound, or replaced by a decorator?), "
            f"and a load finds its code through it; keep {outer} bound to its name, or mark "
            f"the field autosave.transient")


def local_coroutine(module_name, qualname):
    """Why a coroutine whose function is defined inside another function cannot be
    saved. ``@autosave.saveable(name=...)`` takes classes only: the fix is the move."""
    outer = qualname.split(".<locals>.")[0]
    return (f"coroutine function {module_name}.{qualname} is defined inside "
            f"{module_name}.{outer}, so a load could not find it (and its resume points) by "
            f"name; move the @autosave.coroutine function to module level, passing what it "
            f"used from {outer} as arguments (they are saved with the coroutine), or mark "
            f"the field autosave.transient")
