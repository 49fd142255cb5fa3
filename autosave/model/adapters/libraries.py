"""Reconstructors of third-party packages: the module-level functions their
``__reduce__`` names, each registered with the check its arguments must pass
(autosave/model/reconstructors.py). Registered once the game has imported the package; this
module never imports one itself.

* ``numpy.ma.core._mareconstruct(subtype, baseclass, baseshape, basetype)``: an empty
  masked array of a MaskedArray class, filled by its ``__setstate__``.
* ``mesa.discrete_space.grid.unpickle_gridcell(parent, fields)``: a grid cell of the
  class a grid makes with ``type()`` (so it has no name to be found by), with its slots.
* pandas: ``BlockManager(blocks, axes)``, ``_unpickle_block(values, placement, ndim)``,
  the index makers ``_new_Index(cls, d)`` (and the datetime, timedelta and interval
  ones), and ``__pyx_unpickle_NDArrayBacked(cls, checksum, state)`` for the arrays a
  frame's columns hold (categorical, tz-aware datetimes, strings). An index's keyword
  table takes the keys pandas writes, and no dtype by name (parsing one may import).

A masked array or a mesa grid still needs its package allowed (``allow("numpy")``,
``allow("mesa")``): the classes the arguments name are resolved under package trust.
"""

import sys

from ...errors import FormatError
from ..reconstructors import register
from .base import when_imported

MAX_SHAPE = 1 << 20           # a masked array's placeholder base: numpy writes (0,)


def _check_mareconstruct(args):
    np = sys.modules["numpy"]
    ma = sys.modules["numpy.ma.core"]
    if len(args) != 4:
        raise FormatError("numpy.ma's reconstructor takes four arguments")
    subtype, baseclass, baseshape, basetype = args
    if not (isinstance(subtype, type) and issubclass(subtype, ma.MaskedArray)):
        raise FormatError("numpy.ma's reconstructor builds a MaskedArray class")
    if not (isinstance(baseclass, type) and issubclass(baseclass, np.ndarray)
            and not issubclass(baseclass, np.memmap)):
        raise FormatError("numpy.ma's reconstructor's base is an ndarray class")
    if type(baseshape) is not tuple or not all(type(n) is int and 0 <= n for n in baseshape):
        raise FormatError("numpy.ma's reconstructor's shape is a tuple of sizes")
    total = 1
    for n in baseshape:
        total *= n
    if total > MAX_SHAPE or len(baseshape) > 32:
        raise FormatError("numpy.ma's reconstructor's placeholder shape is too large")
    if not (type(basetype) is str and len(basetype) <= 8 or type(basetype) is np.dtype):
        raise FormatError("numpy.ma's reconstructor's type is a type code or a dtype")


def _register_numpy_ma():
    register(sys.modules["numpy.ma.core"]._mareconstruct, _check_mareconstruct,
             callables=(0, 1), source="autosave")


def _check_gridcell(args):
    cell = sys.modules["mesa.discrete_space.cell"].Cell
    if len(args) != 2:
        raise FormatError("mesa's grid-cell reconstructor takes two arguments")
    parent, fields = args
    if not (isinstance(parent, type) and issubclass(parent, cell)):
        raise FormatError("mesa's grid-cell reconstructor builds a Cell class")
    if type(fields) is not tuple or len(fields) != 2:
        raise FormatError("a mesa grid cell's state is a (dict, slots) pair")
    slots = fields[1]
    if type(slots) is not dict or not all(
            type(k) is str and k.isidentifier() and (k == "__dict__" or not k.startswith("__"))
            for k in slots):
        raise FormatError("a mesa grid cell's slots are a dict of attribute names")


def _register_mesa_grid():
    register(sys.modules["mesa.discrete_space.grid"].unpickle_gridcell, _check_gridcell,
             callables=(0,), source="autosave")


def _pandas(module, name):
    return getattr(sys.modules[module], name)


def _is_index(value):
    return isinstance(value, _pandas("pandas.core.indexes.base", "Index"))


_INDEX_KEYS = frozenset(("data", "name", "names", "levels", "codes", "labels", "sortorder",
                         "start", "stop", "step", "dtype", "freq", "tz", "left", "right",
                         "closed"))


def _check_new_index(args):
    if len(args) != 2:
        raise FormatError("a pandas index maker takes a class and a keyword table")
    cls, table = args
    if not (isinstance(cls, type) and issubclass(cls, _pandas("pandas.core.indexes.base",
                                                                "Index"))):
        raise FormatError("a pandas index maker builds an Index class")
    if type(table) is not dict or not all(type(k) is str and k in _INDEX_KEYS for k in table):
        raise FormatError(f"a pandas index's keywords are among {sorted(_INDEX_KEYS)}")
    if type(table.get("dtype")) is str:
        raise FormatError("a pandas index's dtype is a dtype, not a name to parse")
    for key in ("start", "stop", "step", "sortorder"):
        if table.get(key) is not None and type(table[key]) is not int:
            raise FormatError(f"a pandas index's {key} is an int")


def _check_block_manager(args):
    if len(args) != 2:
        raise FormatError("a pandas BlockManager takes blocks and axes")
    blocks, axes = args
    block = _pandas("pandas._libs.internals", "Block")
    if type(blocks) not in (tuple, list) or not all(isinstance(b, block) for b in blocks):
        raise FormatError("a pandas BlockManager's blocks are blocks")
    if type(axes) not in (tuple, list) or not all(_is_index(a) for a in axes):
        raise FormatError("a pandas BlockManager's axes are indexes")


def _check_unpickle_block(args):
    if len(args) != 3:
        raise FormatError("a pandas block takes values, a placement and ndim")
    values, placement, ndim = args
    np = sys.modules["numpy"]
    extension = _pandas("pandas.core.arrays.base", "ExtensionArray")
    if not isinstance(values, (np.ndarray, extension)):
        raise FormatError("a pandas block's values are an array")
    if not (type(placement) is slice and all(v is None or type(v) is int for v in (
            placement.start, placement.stop, placement.step))
            or isinstance(placement, (np.ndarray, _pandas("pandas._libs.internals",
                                                            "BlockPlacement")))):
        raise FormatError("a pandas block's placement is a slice or positions")
    if ndim not in (1, 2) or type(ndim) is not int:
        raise FormatError("a pandas block is of one or two dimensions")


def _check_ndarray_backed(args):
    if len(args) != 3:
        raise FormatError("a pandas array maker takes a class, a checksum and a state")
    cls, checksum, state = args
    if not (isinstance(cls, type)
            and issubclass(cls, _pandas("pandas._libs.arrays", "NDArrayBacked"))):
        raise FormatError("a pandas array maker builds an NDArrayBacked class")
    if type(checksum) is not int or state is not None:
        raise FormatError("a pandas array maker takes a checksum and no state")


def _check_string_dtype(args):
    if not 1 <= len(args) <= 2:
        raise FormatError("a pandas StringDtype takes a storage and a missing value")
    storage = args[0]
    # "pyarrow" storage imports pyarrow unless the game already did
    if storage != "python" and not (storage == "pyarrow" and "pyarrow" in sys.modules):
        raise FormatError(f"a pandas StringDtype's storage is 'python' or an imported "
                          f"'pyarrow', the save holds {str(storage)[:20]!r}")
    if len(args) == 2:
        na = args[1]
        if not (type(na) is float and na != na
                or na is _pandas("pandas._libs.missing", "NA") or na is None):
            raise FormatError("a pandas StringDtype's missing value is NaN, NA or None")


def _register_pandas():
    for module, name, check, callables in (
            ("pandas.core.indexes.base", "_new_Index", _check_new_index, (0,)),
            ("pandas.core.indexes.datetimes", "_new_DatetimeIndex", _check_new_index, (0,)),
            ("pandas.core.indexes.timedeltas", "_new_TimedeltaIndex", _check_new_index,
             (0,)),
            ("pandas.core.indexes.interval", "_new_IntervalIndex", _check_new_index, (0,)),
            ("pandas.core.internals.managers", "BlockManager", _check_block_manager, ()),
            ("pandas._libs.internals", "_unpickle_block", _check_unpickle_block, ()),
            ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked", _check_ndarray_backed,
             (0,)),
            ("pandas.core.arrays.string_", "StringDtype", _check_string_dtype, ())):
        if module in sys.modules:
            register(_pandas(module, name), check, callables=callables, source="autosave")


when_imported("numpy.ma.core", _register_numpy_ma)
when_imported("pandas.core.internals.managers", _register_pandas)
when_imported("mesa.discrete_space.grid", _register_mesa_grid)
