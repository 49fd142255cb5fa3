"""dumps/loads and save/load: the pipeline walk -> format -> bytes, and back."""

import gc
import os
import tempfile
from contextlib import contextmanager

from .direct import DirectWalker
from .format import decode, encode
from .generated import GENERATED
from .rebuild import load_records
from .walk import Walker


@contextmanager
def collector_paused():
    """Pause the cyclic GC: a save or load makes hundreds of thousands of small lists
    that live until it returns, and collecting them over and over would cost more
    than the work itself. Nothing they make is garbage until then."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def dumps(root):
    """Everything reachable from ``root``, as bytes. Raises SaveError with the object path."""
    with collector_paused():
        if GENERATED.activate():
            try:
                return encode(*DirectWalker().run(root))
            except Exception:
                # Too deep, an int wider than 64 bits, or something that cannot be
                # saved: the reflective walk gives the same bytes, or the error with
                # its object path.
                pass
        types, records, root_value = Walker().run(root)
        try:
            return encode(types, records, root_value)
        except OverflowError:
            # An int beyond 64 bits somewhere: walk again, boxing big ints as records.
            types, records, root_value = Walker(wide_ints=True).run(root)
            return encode(types, records, root_value)


def loads(data):
    """The root saved in ``data``. Raises only LoadError kinds on bad input."""
    with collector_paused():
        return load_records(*decode(data, index=True))


def save(path, root):
    """Write a save atomically: a crash leaves the old file or the new one, never neither."""
    data = dumps(root)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".autosave-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(directory)
    return len(data)


def load(path):
    """Load a file written by ``save``."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return loads(data)
    except Exception as e:
        e.add_note(f"while loading {os.fspath(path)}")
        raise


def fsync_directory(directory):
    """Make a rename or a new file in ``directory`` durable (where the OS allows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
