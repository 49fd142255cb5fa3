"""autosave for Ray (the ``autosave[ray]`` extra; docs/distributed.md).

* ``setup_hook(modules, allow)`` for ``ray.init(runtime_env={"worker_process_setup_hook":
  ...})``: each worker imports the game's modules, applies ``autosave.allow(...)`` and
  registers autosave as Ray's serializer of the game's classes and coroutines
  (``register()``, which the driver calls too).
* ``put(obj)`` / ``get(ref)``: an object stored as autosave bytes in Ray's object store,
  raw (Ray stores ``bytes`` as they are), so ``get`` runs no pickle; large arrays are
  laid out beside the save, aligned, and rebuilt on that memory.
* Actors checkpoint with ``autosave.RunCheckpoint`` and restore in ``__init__``
  (docs/distributed.md, "Ray actors").
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Iterable
from typing import Any

try:
    import ray
except ImportError as e:
    raise ImportError(f"autosave.ray needs Ray: pip install 'autosave[ray]' ({e})") from e

from .claims import claimed_classes, import_game
from .errors import FormatError
from .files import dumps, loads

_worker: Any = None             # Ray's worker module and a raw object's metadata type,
_RAW = b""                      # where this Ray keeps them (else get uses ray.get)
try:
    _worker = importlib.import_module("ray._private.worker")
    _RAW = importlib.import_module("ray._private.ray_constants").OBJECT_METADATA_TYPE_RAW
except (ImportError, AttributeError):
    _worker = None

MAGIC = b"\x89ASVRAY\n"
COUNT = struct.Struct("<Q")
SIZE = struct.Struct("<Q")
ALIGN = 64                      # each buffer starts at a multiple of this in the blob
MAX_BUFFERS = 1 << 20


def _to_bytes(obj: object) -> bytes:
    return dumps(obj)


def _from_bytes(data: bytes) -> Any:
    return loads(data)


def register() -> None:
    """Make Ray save the game's classes and coroutines (imported so far) with autosave
    when they travel inside Ray's own messages (task arguments, results, actor calls).
    Ray registers per exact class and per process: call it after importing the
    game's modules (``setup_hook`` does, in workers)."""
    for cls in claimed_classes():
        ray.util.register_serializer(cls, serializer=_to_bytes, deserializer=_from_bytes)


def setup(modules: Iterable[str] = (), allow: Iterable[str] = ()) -> None:
    """Import ``modules`` (ImportError if one is missing), trust ``allow``, register."""
    import_game(modules, allow)
    register()


def setup_hook(modules: Iterable[str] = (), allow: Iterable[str] = ()) -> Callable[[], None]:
    """The ``worker_process_setup_hook`` of a runtime_env: ``setup(modules, allow)`` in
    each worker process as it starts. A function, not a partial: Ray names the hook
    by its ``__name__``."""
    modules, allow = list(modules), list(allow)

    def autosave_setup() -> None:
        setup(modules, allow)
    return autosave_setup


# -- raw put/get ----------------------------------------------------------------------
#
# The blob: MAGIC, the buffer count (u64), each buffer's size (u64), the save's size
# (u64), the save, then each buffer at the next multiple of ALIGN.

def _padding(offset: int) -> int:
    return -offset % ALIGN


def pack(obj: object) -> bytes:
    """The bytes ``put`` stores: the save, its out-of-band buffers after it, aligned."""
    buffers: list[Any] = []
    data = dumps(obj, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    head = b"".join([MAGIC, COUNT.pack(len(raws)), *(SIZE.pack(r.nbytes) for r in raws),
                     SIZE.pack(len(data))])
    parts: list[Any] = [head, data]
    offset = len(head) + len(data)
    for raw in raws:
        pad = _padding(offset)
        parts += [bytes(pad), raw]
        offset += pad + raw.nbytes
    return b"".join(parts)


def unpack(blob: bytes | memoryview) -> Any:
    """The object of ``pack``'s bytes, its arrays built on them (read in place)."""
    view = memoryview(blob)
    if bytes(view[:len(MAGIC)]) != MAGIC:
        raise FormatError("not an object stored by autosave.ray.put")
    at = len(MAGIC)
    try:
        (count,) = COUNT.unpack_from(view, at)
        if count > MAX_BUFFERS:
            raise FormatError(f"an autosave.ray object declares {count:,} buffers")
        at += COUNT.size
        sizes = [SIZE.unpack_from(view, at + SIZE.size * i)[0] for i in range(count)]
        at += SIZE.size * count
        (length,) = SIZE.unpack_from(view, at)
    except struct.error:
        raise FormatError("an autosave.ray object is truncated in its header") from None
    at += SIZE.size
    data, at = view[at:at + length], at + length
    buffers = []
    for size in sizes:
        at += _padding(at)
        buffers.append(view[at:at + size])
        at += size
    if len(data) != length or at != len(view) or any(
            len(b) != s for b, s in zip(buffers, sizes)):
        raise FormatError(f"an autosave.ray object of {len(view):,} bytes does not hold "
                          f"the sizes its header declares")
    return loads(data, buffers=buffers)


def put(obj: object, *, share_arrays: bool = False, **options: Any) -> ray.ObjectRef:
    """Store ``obj`` in Ray's object store as autosave bytes, raw: Ray pickles nothing,
    and ``get`` runs only ``autosave.loads``. ``options`` go to ``ray.put``.

    ``share_arrays``: the save's out-of-band arrays go into the store as numpy arrays,
    in Ray's own zero-copy form, beside the save's bytes; ``get`` then builds them on
    the store's memory, without the copies the raw form costs, but Ray unpickles its
    envelope of each array (numpy's reconstructor, written by Ray's ``put``)."""
    if not share_arrays:
        return ray.put(pack(obj), **options)
    np = importlib.import_module("numpy")
    buffers: list[Any] = []
    data = dumps(obj, buffer_callback=buffers.append)
    arrays = [np.frombuffer(b.raw(), dtype=np.uint8) for b in buffers]
    return ray.put([MAGIC, data, arrays], **options)


def get(ref: ray.ObjectRef, *, timeout: float | None = None) -> Any:
    """The object ``put`` stored, loaded by ``autosave.loads``. A raw object is read in
    place in Ray's store: its read-only arrays are built on the store's memory, its
    writeable ones copied once (the store's memory is shared and must not change)."""
    view = _stored_raw(ref, timeout)
    if view is not None:
        return unpack(view)
    stored = ray.get(ref, timeout=timeout)
    if isinstance(stored, bytes):
        return unpack(stored)
    if (type(stored) is list and len(stored) == 3 and stored[0] == MAGIC
            and type(stored[1]) is bytes and type(stored[2]) is list):
        return loads(stored[1], buffers=stored[2])
    raise FormatError(f"not an object stored by autosave.ray.put: Ray returned a "
                      f"{type(stored).__name__}")


def _stored_raw(ref: Any, timeout: float | None) -> memoryview | None:
    """The memory of a raw (``bytes``) object in this node's store, read-only, without
    the copy into a ``bytes`` that ``ray.get`` makes of it; None where that memory is
    not to be had this way (Ray not started here, another Ray whose worker differs,
    an object that is not raw: an error, a pickled value), and ``ray.get`` then reads
    the object, raising Ray's own errors.

    Ray's ``get`` of ``bytes`` copies them out of the store (``Buffer.to_pybytes``);
    the store's buffer itself is what Ray's zero-copy numpy arrays are built on. Its
    memoryview is writeable, but the object is shared by every reader on the node and
    Ray's own arrays over it are read-only: so is this view, and ``loads`` copies a
    writeable array out of it once (docs/distributed.md)."""
    worker = _worker.global_worker if _worker else None
    core = getattr(worker, "core_worker", None)
    # not connected: Ray not started, or a Ray client (ray://), whose get is remote
    if core is None or not getattr(worker, "connected", False) or \
            not isinstance(ref, ray.ObjectRef):
        return None
    timeout_ms = -1 if timeout is None or timeout == -1 else int(timeout * 1000)  # as Ray
    try:
        fetched = core.get_objects([ref], timeout_ms)
        (data, metadata, *_), = fetched
    except (AttributeError, TypeError, ValueError):    # Ray's internals changed: its get
        return None
    if data is None or not metadata or metadata.split(b",")[0] != _RAW:
        return None
    return memoryview(data).toreadonly()
