"""The adapter protocol and the dispatch tables keyed by type and by stable name."""

ADAPTERS_BY_TYPE = {}   # exact Python type -> adapter (save side)
ADAPTERS_BY_NAME = {}   # stable type name -> adapter (load side)

ALL = slice(1, None)


class Adapter:
    name = ""                 # stable type name in the save's type table
    types = ()                # exact types this adapter saves
    mutable = False
    has_fill = False
    build_slice = ALL         # payload the build step needs built
    build_finished = None     # payload slice whose objects must be filled before build
    fill_finished = None      # payload slice whose objects must be filled before fill
    hashes = False            # ...because it hashes them (keys, members), rather than
                              # reading their contents (__setstate__, keyword arguments)
    create = None             # optional fn(rec, vals) -> filled object: allocate and fill
                              # in one step, used when nothing about the record must wait
    has_loaded_hook = False
    c_dealloc = False         # CPython frees it by unchecked C recursion (autosave.limits)
    hash_kind = 0             # 0: hashing it visits nothing else; 1: hashes its parts by
                              # unchecked C recursion; 2: hashes its parts otherwise

    def parts(self, obj):
        """The record payload of ``obj``: values and objects, in order."""
        raise NotImplementedError

    def allocate(self, rec):
        raise NotImplementedError

    def build(self, vals):
        raise NotImplementedError

    def fill(self, obj, vals):
        raise NotImplementedError

    def __repr__(self):
        return f"<adapter {self.name}>"


def register_adapter(adapter):
    if adapter.name in ADAPTERS_BY_NAME:
        raise ValueError(f"an adapter named {adapter.name!r} already exists")
    ADAPTERS_BY_NAME[adapter.name] = adapter
    for t in adapter.types:
        ADAPTERS_BY_TYPE[t] = adapter
    return adapter
