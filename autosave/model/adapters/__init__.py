"""Built-in and standard-library types: how each is taken apart and put back together.

An adapter handles exact Python types. On save, ``parts(obj)`` returns the record payload
(plain values and objects the walker turns into references). On load it is the record's
*plan*, one of two kinds:

* mutable (``mutable = True``): ``allocate(rec)`` makes an empty object from the raw
  record before anything refers to it, ``fill(obj, vals)`` puts its contents in. Cycles
  through such objects just work.
* value (``mutable = False``): ``build(vals)`` makes the object from its finished parts
  (``vals[build_slice]``), and ``fill`` (if ``has_fill``) completes it afterwards.

``vals`` is the record with references resolved; ``vals[0]`` is the type index.
``build_finished``/``fill_finished`` name the payload whose objects must be *filled*
before that step, because it reads their contents (``__setstate__``, keywords) or, with
``hashes``, hashes them (keys, members: then whatever their hash reaches must be filled,
and objects hashed by identity never wait).
"""

from .base import Adapter, ADAPTERS_BY_NAME, ADAPTERS_BY_TYPE, register_adapter
from . import containers, stdlib, callables, weak, iterators, exceptions  # noqa: F401  (fill the tables)
from . import stdlib_more, itertools_more, numpy, numpy_batches, pygame, libraries  # noqa: F401,E402  (numpy, pygame, ...: once the game imports them)

__all__ = ["Adapter", "ADAPTERS_BY_NAME", "ADAPTERS_BY_TYPE", "register_adapter"]
