"""Forging saves by hand, following docs/format.md: a type table, records in order and
a root value, references as absolute record indices. What an attacker writes.

    f = Forge()
    l = f.rec("builtins.list", 1, 2, 3)
    f.rec("builtins.tuple", l, l)          # a reference is the Ref the call returned
    data = f.bytes()                       # the last record is the root
"""

import contextlib

import msgpack

from autosave.format.wire import encode


class Ref(list):
    """A reference to record ``index`` (written as a one-element array)."""

    def __init__(self, index):
        super().__init__([index])

    @property
    def index(self):
        return self[0]


class Forge:
    def __init__(self):
        self.types = []
        self.type_index = {}
        self.records = []

    def type(self, name, fields=(), version=1):
        key = (name, tuple(fields), version)
        if key not in self.type_index:
            self.type_index[key] = len(self.types)
            self.types.append([name, version, list(fields)])
        return self.type_index[key]

    def rec(self, name, *payload, fields=(), version=1, cycle=False):
        """Append a record; returns a Ref to it."""
        t = self.type(name, fields, version)
        self.records.append([~t if cycle else t, *payload])
        return Ref(len(self.records) - 1)

    def placeholder(self):
        """Reserve a record index to fill later with ``set`` (for forward references)."""
        self.records.append(None)
        return Ref(len(self.records) - 1)

    def set(self, ref, name, *payload, fields=(), version=1, cycle=False):
        t = self.type(name, fields, version)
        self.records[ref.index] = [~t if cycle else t, *payload]
        return ref

    def glob(self, name):
        return self.rec("autosave.global", name)

    def reduce(self, func, args=(), state=None, listitems=(), dictitems=(), newobj=False):
        """A reduce record: func is a Ref (usually to a global)."""
        a = self.rec("builtins.tuple", *args)
        li = self.rec("builtins.list", *listitems)
        di = self.rec("builtins.list", *dictitems)
        return self.rec("autosave.reduce", func, newobj, a, state, li, di)

    def body(self, root=None):
        if root is None:
            root = Ref(len(self.records) - 1)
        return [self.types, [list(r) for r in self.records], root]

    def bytes(self, root=None):
        types, records, root = self.body(root)
        return encode(types, records, root)


def raw(body, header=b"\x89ASV\x01"):
    """Bytes of an arbitrary body under a format-1 header (no checksum to forge)."""
    return header + msgpack.packb(body, use_bin_type=True, unicode_errors="surrogatepass")


def records_body(data):
    """[types, records, root] of a save with every object a record (its batch objects
    expanded, as ``autosave.format.expand.records_of`` gives them): the body of the same graph
    in format 3, which a test can edit record by record and write back with ``pack``."""
    from autosave.format.expand import records_of
    return list(records_of(data))


def pack(body):
    """msgpack bytes of a body (unset-slot markers and wide ints as the extensions)."""
    from autosave.format.wire import msgpack_pack
    return msgpack_pack(body)


@contextlib.contextmanager
def coroutines_as_records():
    """Saves written meanwhile hold each coroutine and loop iterator as a record
    (``autosave.coroutine``, ``builtins.list_iterator``...: format 6's form, which later
    versions still load) instead of in a batch: what forged records are planted in."""
    from autosave.coroutines.adapter import CoroutineAdapter
    from autosave.model.adapters.iterators import ListIteratorAdapter, RangeIteratorAdapter
    kinds = (CoroutineAdapter, ListIteratorAdapter, RangeIteratorAdapter)
    rows = [kind.batch_row for kind in kinds]
    for kind in kinds:
        kind.batch_row = None
    try:
        yield
    finally:
        for kind, row in zip(kinds, rows):
            kind.batch_row = row
