"""The save bytes of the checkpoints a log object rebuilt or wrote last, so that a
restore rebuilds a delta chain from its newest link held, not from its whole
checkpoint (docs/log-format.md, "Rebuilt checkpoints")."""

from collections import OrderedDict


class Rebuilt:
    """The save bytes of the checkpoints a log object rebuilt or wrote last
    (docs/log-format.md, "Rebuilt checkpoints"): at most ``entries`` saves and
    ``memory`` bytes, the newest kept. Each entry remembers what rebuilding it from
    its whole checkpoint charges to the budget (memory, work, the largest save held)
    and the log size it was rebuilt under; it is used only under a log at least as
    large and charged that again, so whether a chain is refused never depends on
    what is held here."""

    def __init__(self, entries: int = 4, memory: int = 256 << 20) -> None:
        self.entries, self.memory = entries, memory
        self._held: OrderedDict[int, tuple[bytes, int, int, int, int]] = OrderedDict()
        self._bytes = 0

    def worth(self, size: int) -> bool:
        return self.entries > 0 and size <= self.memory

    def get(self, offset: int, log_size: int) -> tuple[bytes, int, int, int] | None:
        entry = self._held.get(offset)
        if entry is None or entry[4] > log_size:
            return None
        self._held.move_to_end(offset)
        return entry[:4]

    def put(self, offset: int, data: bytes, memory: int, work: int, peak: int,
            log_size: int) -> None:
        if not self.worth(len(data)):
            return
        old = self._held.pop(offset, None)
        if old is not None:
            self._bytes -= len(old[0])
        self._held[offset] = (data, memory, work, peak, log_size)
        self._bytes += len(data)
        while len(self._held) > self.entries or self._bytes > self.memory:
            self._bytes -= len(self._held.popitem(last=False)[1][0])

    def clear(self) -> None:
        self._held.clear()
        self._bytes = 0
