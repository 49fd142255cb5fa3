"""numpy: small arrays and scalars written in batches (format 8; docs/format.md,
"Batches").

An array saved as a copy of its data (``numpy.ndarray`` record), of a plain dtype and
under ``IN_PLACE_MIN`` bytes, is a row of the batch of its (descr, ndim): the type
entry ``["numpy.ndarray", 1, [descr, ndim]]`` says the dtype once, and the row holds
the flags, the data bytes and one int per dimension. A load checks every column and
every size before it allocates an array, then builds the batch with a few numpy calls:
a batch of one shape in C order is joined and split into arrays owning their memory
in one ``map``; any other, array by array as records are.
"""

from itertools import islice, repeat
from math import prod
from operator import mul
from typing import Any

from ...errors import FormatError
from ...format import kernels
from ...format.buffers import BufferRef
from ...format.wire import COLUMN_INLINE
from . import numpy as base
from .base import BatchOnlyPlan

_INTS, _DATA = {int}, {bytes, BufferRef}
_NDIMS = {str(k): k for k in range(base.MAX_DIMS + 1)}
_NAMES_MAX = 256           # distinct dtype objects remembered (their descrs, per ndim)
JOIN_BYTES = 1 << 20       # the data of a batch's arrays joined at most this much at once


class ArrayBatchRows:
    """The save side: ``row(obj)`` -> ``((descr, ndim), [flags, data, *shape])``, or None
    for an array that stays a record (a view kept as one, objects, a dtype other than
    a plain type string, as much data as ``limit`` or more)."""

    def __init__(self) -> None:
        # id(dtype) -> (dtype, names per ndim or None): the dtype is held, so its id is
        # not reused while remembered; a dtype with metadata is its own object
        self.names: dict[int, tuple[Any, Any]] = {}

    def row_for(self, walker: Any) -> Any:
        policy = getattr(walker, "out_of_band", None)     # a SavePolicy: dumps sets it
        offered = base.IN_PLACE_MIN if policy is None else policy.minimum
        names_of, root_of, limit = self.names_of, base.root_of, base.IN_PLACE_MIN
        fortran, readonly = base.FORTRAN, base.READONLY

        def row(obj: Any) -> Any:
            nbytes = obj.nbytes
            if nbytes >= limit or (obj.base is not None and root_of(obj) is not None):
                return None
            by_ndim = names_of(obj.dtype)
            ndim = obj.ndim
            if by_ndim is None or ndim > base.MAX_DIMS:
                return None
            flags = obj.flags
            order = fortran if flags.f_contiguous and not flags.c_contiguous else 0
            if nbytes >= offered and (flags.c_contiguous or flags.f_contiguous):
                # offered out of band: kept in band, the encoder writes its bytes, as
                # a save without a callback would
                data: Any = base.OutOfBand(base.PickleBuffer(base._memory(obj)))
            else:
                data = obj.tobytes("F" if order else "C")
            return by_ndim[ndim], [order if flags.writeable else order | readonly, data,
                                   *obj.shape]
        return row

    def names_of(self, dtype: Any) -> Any:
        found = self.names.get(id(dtype))
        if found is None:
            if len(self.names) >= _NAMES_MAX:
                self.names.clear()
            found = self.names[id(dtype)] = (dtype, _names(dtype))
        return found[1]


def _names(dtype: Any) -> Any:
    """The type-entry fields of each ndim's batch for dtype, or None if its arrays stay
    records: one of the plain types a descr string names, of itemsize >= 1."""
    if dtype.metadata or dtype.hasobject or dtype.fields is not None \
            or dtype.subdtype is not None or dtype.itemsize == 0:
        return None
    try:
        descr = _np().lib.format.dtype_to_descr(dtype)
    except (TypeError, ValueError):
        return None
    if type(descr) is not str or not base.TYPESTR.match(descr):
        return None
    try:
        if _np().lib.format.descr_to_dtype(descr) != dtype:
            return None
    except (TypeError, ValueError):
        return None
    # one tuple per (descr, ndim) for good: the walk groups a column's rows by the
    # names' identity, so equal dtypes (or one remembered again) give the same tuple
    # (the last: a scalar's batch, whose one field is the descr)
    return [_INTERNED.setdefault((descr, str(k)), (descr, str(k)))
            for k in range(base.MAX_DIMS + 1)] + [_INTERNED.setdefault((descr,), (descr,))]


_INTERNED: dict[tuple[str, ...], tuple[str, ...]] = {}


class ArrayBatch(BatchOnlyPlan):
    """The load plan of a type entry ``numpy.ndarray`` with fields ``[descr, ndim]``:
    only batches use one (a record under it is a FormatError). Built whole as the batch
    objects are allocated: inline values only."""
    name = "numpy.ndarray"
    whole = True

    def __init__(self, fields: Any):
        if len(fields) != 2 or fields[1] not in _NDIMS:
            raise FormatError("a numpy.ndarray batch's type entry names its descr and its "
                              "number of dimensions (\"0\" to \"32\")")
        descr = fields[0]
        base.check_descr(descr, base.MAX_DESCR_DEPTH)    # a plain type string only
        try:
            dtype = _np().lib.format.descr_to_dtype(descr)
        except (TypeError, ValueError) as e:
            raise FormatError(f"a numpy.ndarray batch's descr is invalid: {e}") from None
        if dtype.hasobject or dtype.itemsize == 0 or dtype.fields is not None \
                or dtype.subdtype is not None:
            raise FormatError(f"a numpy.ndarray batch's descr {descr!r} is not a plain "
                              f"dtype of items of at least one byte")
        self.dtype, self.ndim = dtype, _NDIMS[fields[1]]
        self.ncolumns = 2 + self.ndim

    def build_batch(self, filler: Any, objs: list[Any], start: int, n: int,
                    batch: list[Any]) -> None:
        columns = []
        for c, column in enumerate(islice(batch, 2, None)):
            if c == 1:          # the data: bins, or out-of-band buffers (BufferRef)
                if column[0] != COLUMN_INLINE or len(column[1]) != n:
                    raise FormatError(f"a numpy.ndarray batch's data are a column of "
                                      f"{n} inline bins")
                columns.append(column[1])
                continue
            values, index, absent = filler.resolve(column, n)
            if index is not None or absent:
                raise FormatError("a numpy.ndarray batch holds inline values only")
            columns.append(values)
        flags, data, dims = columns[0], columns[1], columns[2:]
        if not kernels.kinds(flags) <= _INTS or min(flags) < 0 or max(flags) > 3:
            raise FormatError("a numpy array's flags are malformed")
        kinds = kernels.kinds(data)
        if not kinds <= _DATA:
            raise FormatError("a numpy.ndarray batch's data are bins")
        for dim in dims:
            if not kernels.kinds(dim) <= _INTS or min(dim) < 0:
                raise FormatError("a numpy.ndarray's shape must be ints >= 0")
        objs[start:start + n] = self.arrays(flags, data, dims, n, BufferRef in kinds)

    def arrays(self, flags: list[int], data: list[Any], dims: list[list[int]],
               n: int, buffers: bool) -> list[Any]:
        """The batch's arrays, every size checked first: each owns its memory (or,
        on an out-of-band buffer, uses it as a record's array does)."""
        dtype, np = self.dtype, _np()
        itemsize = dtype.itemsize
        sizes = list(map(_size, data)) if buffers else list(map(len, data))
        one_shape = all(dim.count(dim[0]) == n for dim in dims)
        if one_shape:
            shape = tuple(dim[0] for dim in dims)
            if sizes.count(prod(shape) * itemsize) != n:
                self.mismatch([shape] * n, sizes)
        else:
            shapes = list(zip(*dims))
            if list(map(mul, map(prod, shapes), repeat(itemsize))) != sizes:
                self.mismatch(shapes, sizes)
        try:
            if one_shape and self.ndim and flags.count(0) == n and not buffers:
                # a join, a view, a copy per array (np.array of each row); joined
                # JOIN_BYTES at a time, so the load holds no second copy of the batch
                step = max(1, JOIN_BYTES // max(1, sizes[0]))
                if step >= n:
                    rows = np.frombuffer(b"".join(data), dtype).reshape((n, *shape))
                    return list(map(np.array, rows))
                out: list[Any] = []
                for k in range(0, n, step):
                    part = data[k:k + step]
                    out += map(np.array, np.frombuffer(b"".join(part), dtype).reshape(
                        (len(part), *shape)))
                return out
            shapes = [shape] * n if one_shape else shapes
            return list(map(_array, repeat(dtype), flags, data, shapes))
        except (ValueError, OverflowError) as e:    # numpy's own limits on shapes
            raise FormatError(f"a numpy array's shape is refused by numpy: {e}") from None

    def mismatch(self, shapes: list[tuple[int, ...]], sizes: list[int]) -> None:
        itemsize = self.dtype.itemsize
        for shape, size in zip(shapes, sizes):
            if prod(shape) * itemsize != size:
                raise FormatError(f"a numpy array of shape {shape} and dtype "
                                  f"{self.dtype.str} holds {size} bytes of data")


def _np() -> Any:
    return base.np            # numpy, registered once the game imported it


def _size(data: Any) -> int:
    return data.view.nbytes if data.__class__ is BufferRef else len(data)


def _array(dtype: Any, flags: int, data: Any, shape: tuple[int, ...]) -> Any:
    """One array of a batch, as its record builds it (its size checked)."""
    order = "F" if flags & base.FORTRAN else "C"
    if data.__class__ is BufferRef:
        return base._on_buffer(data.view, dtype, shape, order, flags)
    arr = _np().ndarray(shape, dtype, data, order=order).copy(order)
    if flags & base.READONLY:
        arr.flags.writeable = False
    return arr


ROWS = ArrayBatchRows()


class ScalarBatch(BatchOnlyPlan):
    """The load plan of a type entry ``numpy.scalar`` with fields ``[descr]``: each
    object of its batches is built as its record ``[t, dtype, value]`` would be, a
    column of bools, ints or floats as one array whose items are taken."""
    name = "numpy.scalar"
    whole, ncolumns = True, 1

    def __init__(self, fields: Any):
        if len(fields) != 1:
            raise FormatError("a numpy.scalar batch's type entry names its descr")
        self.dtype = ArrayBatch([fields[0], "0"]).dtype     # the same checks
        kind = self.dtype.kind
        self.items = set(base._ITEM_TYPES[kind]) if kind in "biuf" \
            and self.dtype.itemsize <= 8 else None

    def build_batch(self, filler: Any, objs: list[Any], start: int, n: int,
                    batch: list[Any]) -> None:
        values, index, absent = filler.resolve(batch[2], n)
        if index is not None or absent:
            raise FormatError("a numpy.scalar batch holds inline values only")
        dtype = self.dtype
        try:
            if self.items is not None and kernels.kinds(values) <= self.items:
                # one array of them, then its items: each the scalar dtype.type(value)
                # is (a value out of the dtype's range: OverflowError, as there)
                objs[start:start + n] = list(_np().array(values, dtype))
                return
            # anything else as its record is built, with its checks
            build = base.ScalarAdapter.build
            objs[start:start + n] = [build(base.SCALAR, [None, dtype, v])  # type: ignore[arg-type]
                                     for v in values]
        except OverflowError:
            raise FormatError(f"a numpy scalar of dtype {dtype.str} holds a value out of "
                              f"its range") from None


def scalar_row(adapter: Any, obj: Any) -> Any:
    """A scalar's row: ``((descr,), [value])``, the value its record's; None for a
    scalar of a dtype arrays of which stay records."""
    dtype = base.scalar_dtype(obj)
    names = ROWS.names_of(dtype)
    if names is None:
        return None
    if dtype.kind in "biuf" and dtype.itemsize <= 8:
        return names[-1], [obj.item()]      # exact as a Python bool, int or float
    return names[-1], [obj.tobytes()]


def scalar_plan(adapter: Any, fields: Any) -> ScalarBatch:
    if not fields:
        raise FormatError("a batch of numpy.scalar objects names their descr in its type "
                          "entry")
    return ScalarBatch(fields)


def batch_plan(adapter: Any, fields: Any) -> ArrayBatch:
    """The plan of a type entry ``numpy.ndarray`` with fields ``[descr, ndim]``."""
    if not fields:
        raise FormatError("a batch of numpy.ndarray objects names their descr and number "
                          "of dimensions in its type entry")
    return ArrayBatch(fields)


def batch_row_for(adapter: Any, walker: Any) -> Any:
    """The rows of the small arrays a walk files in batches: a function of an array to
    ``(names, row)``, or None when it stays a record (``rows.RowFiler``)."""
    return ROWS.row_for(walker)


def batch_row(adapter: Any, obj: Any) -> Any:
    return ROWS.row_for(None)(obj)


# the array adapters' batch hooks (numpy.py is imported first, and never imports this)
base.ArrayAdapter.batch_plan = batch_plan                  # type: ignore[attr-defined]
base.NdarrayDispatch.batch_row_for = batch_row_for         # type: ignore[attr-defined]
base.NdarrayDispatch.batch_row = batch_row                 # type: ignore[attr-defined]
base.ScalarAdapter.batch_row = scalar_row                  # type: ignore[attr-defined]
base.ScalarAdapter.batch_plan = scalar_plan                # type: ignore[attr-defined]
