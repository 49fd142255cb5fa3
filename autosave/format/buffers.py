"""Out-of-band buffers, as pickle's protocol 5 (docs/format.md, "Out-of-band buffers").

A save asked for them (``dumps(root, buffer_callback=f)``) puts an ``OutOfBand`` marker
where a large array's data bytes would be; the encoder hands it to ``f`` and writes
ext 2 (the length) or, if ``f`` keeps it in band, the bytes. A load given buffers
decodes each ext 2 into a ``BufferRef`` to the caller's memory, which only the numpy
array adapter consumes.
"""

import struct
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pickle import PickleBuffer
from typing import Any

from ..errors import FormatError

OUT_OF_BAND = 2                 # the msgpack extension code
LENGTH = struct.Struct("<Q")
OUT_OF_BAND_MIN = 1 << 16       # smaller arrays are cheaper in band than as a frame


class OutOfBand:
    """A save's marker for a buffer that may go out of band."""
    __slots__ = ("buffer",)

    def __init__(self, buffer: PickleBuffer) -> None:
        self.buffer = buffer


class BufferRef:
    """A load's out-of-band buffer, as a record holds it: its number and memory."""
    __slots__ = ("index", "view")

    def __init__(self, index: int, view: memoryview) -> None:
        self.index, self.view = index, view

    def __repr__(self) -> str:
        return f"<out-of-band buffer {self.index}: {self.view.nbytes} bytes>"


class SavePolicy:
    """What one save offers out of band: arrays of at least ``minimum`` bytes. Given to
    that save's walker alone (``walker.out_of_band``), so a save made during another
    (a hook's) offers nothing."""
    __slots__ = ("minimum",)

    def __init__(self, minimum: int) -> None:
        if type(minimum) is not int or minimum < 1:
            raise ValueError(f"out_of_band_min is an int >= 1, not {minimum!r}")
        self.minimum = minimum


# id -> array of the arrays a load built on its buffers (views of them may follow)
_LOADED: ContextVar[dict[int, Any] | None] = ContextVar("autosave_buffer_roots", default=None)


class loading:
    """Within: the arrays built on out-of-band buffers are noted (``built_on_buffer``).
    (A class, not a generator: entered at every load given buffers.)"""

    __slots__ = ("roots", "token")

    def __enter__(self) -> dict[int, Any]:
        self.roots: dict[int, Any] = {}
        self.token = _LOADED.set(self.roots)
        return self.roots

    def __exit__(self, *exc: object) -> None:
        _LOADED.reset(self.token)


def note_root(array: Any) -> None:
    roots = _LOADED.get()
    if roots is not None:
        roots[id(array)] = array


def built_on_buffer(array: Any) -> bool:
    """True if this load built ``array`` on an out-of-band buffer."""
    roots = _LOADED.get()
    return roots is not None and roots.get(id(array)) is array


def views_of(buffers: Iterable[Any]) -> list[memoryview]:
    """The caller's buffers as flat byte views of their memory, without a copy."""
    if isinstance(buffers, (bytes, bytearray, memoryview)):
        raise TypeError("buffers= takes an iterable of buffers (a list of them), not one "
                        "buffer")
    views = []
    for i, buffer in enumerate(buffers):
        try:
            views.append(PickleBuffer(buffer).raw())
        except TypeError:
            raise TypeError(f"out-of-band buffer {i} is a {type(buffer).__name__}, which "
                            f"does not support the buffer protocol") from None
        except BufferError:
            raise FormatError(f"out-of-band buffer {i} is not contiguous memory") from None
    return views


def encoder_hook(callback: Callable[[PickleBuffer], Any],
                 ext: Callable[[int, bytes], Any], base: Callable[[Any], Any],
                 decided: dict[int, Any]) -> Callable[[Any], Any]:
    """An encoder's hook for what it cannot write itself: OutOfBand markers asked of
    ``callback`` (``ext`` makes the encoder's extension value), the rest to ``base``.
    ``decided`` keeps each answer by marker: an encoding started over (msgspec, then
    msgpack) asks no buffer twice."""
    def hook(value: Any) -> Any:
        if value.__class__ is not OutOfBand:
            return base(value)
        answer = decided.get(id(value))
        if answer is None:
            raw = value.buffer.raw()
            answer = decided[id(value)] = (raw.tobytes() if callback(value.buffer)
                                           else (OUT_OF_BAND, LENGTH.pack(raw.nbytes)))
        return answer if answer.__class__ is bytes else ext(*answer)
    return hook


class Incoming:
    """The buffers given to a load, handed out in order as ext 2 values are decoded."""
    __slots__ = ("views", "used")

    def __init__(self, views: list[memoryview] | None) -> None:
        self.views, self.used = views, 0

    def take(self, data: bytes) -> BufferRef:
        if self.views is None:
            raise FormatError("the save holds out-of-band buffers: load it with "
                              "autosave.loads(data, buffers=[...]), the buffers its "
                              "buffer_callback was given, in order")
        if len(data) != LENGTH.size:
            raise FormatError(f"an out-of-band buffer's extension holds {len(data)} bytes, "
                              f"not {LENGTH.size}")
        (declared,) = LENGTH.unpack(data)
        i = self.used
        if i >= len(self.views):
            raise FormatError(f"the save declares more than the {len(self.views)} "
                              f"out-of-band buffers given")
        view = self.views[i]
        if view.nbytes != declared:
            raise FormatError(f"out-of-band buffer {i} holds {view.nbytes:,} bytes, the save "
                              f"declares {declared:,}")
        self.used += 1
        return BufferRef(i, view)

    def check(self, types: list[Any], records: list[Any], batches: Any = ()) -> None:
        """Every buffer given was declared, and every one stands as an array's data."""
        if self.views is None:
            return
        if self.used != len(self.views):
            raise FormatError(f"the save declares {self.used} out-of-band buffers, "
                              f"{len(self.views)} were given")
        if not self.used:
            return
        arrays = {t for t, entry in enumerate(types)
                  if type(entry) is list and entry and entry[0] == "numpy.ndarray"}
        placed = sum(1 for rec in records if rec[0] in arrays and len(rec) > 3
                     and rec[3].__class__ is BufferRef)
        for batch in batches:      # small arrays' data (version 8): their second column
            if batch[0] in arrays and len(batch) > 3 and batch[3][0] == 0:
                placed += sum(1 for data in batch[3][1] if data.__class__ is BufferRef)
        if placed != self.used:
            raise FormatError(f"{self.used - placed} out-of-band buffer(s) stand outside a "
                              f"numpy.ndarray record's data")
