"""numpy: dtypes, arrays (every dtype, any order, views sharing their base), scalars,
and random generators mid-sequence.

Registered when the game imports numpy (``base.when_imported``); this module never
imports numpy itself, so numpy stays optional and a load imports nothing.

Records (payload after the type index):

* ``numpy.dtype``      [descr]: ``numpy.lib.format.dtype_to_descr``, a type string or
                       a list of (name, descr[, shape]) tuples
* ``numpy.ndarray``    [dtype, flags, data bytes, *shape]: an array owning its data
                       (flags: 1 Fortran order, 2 read-only)
* ``numpy.object_array`` [flags, ndim, *shape, *items]: object dtype, items in memory
                       order; mutable, so items may refer back to the array
* ``numpy.view``       [root, dtype, flags, offset, ndim, *shape, *strides]: a view of
                       the array ``root`` that owns the memory, so the sharing survives
                       (pickle copies each view); checked on load to lie inside ``root``
* ``numpy.scalar``     [dtype, bytes]
* ``numpy.random.BitGenerator`` [kind, state dict], ``numpy.random.Generator``
  [bit generator], ``numpy.random.RandomState`` [bit generator, has_gauss, gauss]
"""

import re
import sys
from math import prod

from pickle import PickleBuffer

from ...errors import FormatError
from ...format import kernels
from ...format.buffers import BufferRef, OutOfBand, built_on_buffer, note_root
from ...checks.limits import charge
from ...checks.loadcheck import MAX_ITERATOR_GAP, exact
from ..purity import declare
from .base import Adapter, register_adapter, when_imported

MAX_DIMS = 32                 # numpy's own limit is 64; no game needs more than a few
MAX_ELEMENTS = 1 << 48        # a view's element count (views allocate nothing)
MAX_FIELDS = 4096             # fields of one structured dtype
MAX_DESCR_DEPTH = 8           # structured dtypes nested in structured dtypes
FORTRAN, READONLY = 1, 2
IN_PLACE_MIN = 1 << 16        # smaller arrays' data is copied: a view costs as much

# A plain type string: byte order, kind, size, datetime unit. Anything else numpy's
# parser accepts ("i4,f8", "(2,)i4", names with commas) is refused before numpy sees it.
TYPESTR = re.compile(r"[<>|=]?(?:[?bBhHiIlLqQpPefdgFDGO]|[biufcSUVa]\d{1,10}|"
                     r"[mM]8(?:\[\d{0,6}(?:Y|M|W|D|h|m|s|ms|us|ns|ps|fs|as|generic)\])?)\Z")

np = None                     # numpy, once the game imported it


def _ints(values, what, low=0):
    for v in values:
        if type(v) is not int or v < low:
            raise FormatError(f"{what} must be ints >= {low}")
    return tuple(values)


def has_objects(dtype):
    return dtype.hasobject


# -- dtype ---------------------------------------------------------------------------------

class DtypeAdapter(Adapter):
    name = "numpy.dtype"
    build_finished = slice(1, None)      # reads the descr's lists and tuples

    def parts(self, obj):
        if obj.metadata:
            raise TypeError("a numpy dtype with metadata cannot be saved")
        return [np.lib.format.dtype_to_descr(obj)]

    def build(self, vals):
        (descr,) = vals[1:]
        check_descr(descr, 0)
        try:
            dtype = np.lib.format.descr_to_dtype(descr)
        except (TypeError, ValueError) as e:
            raise FormatError(f"a numpy dtype record holds an invalid descr: {e}") from None
        if dtype.hasobject and (dtype.fields is not None or dtype.subdtype is not None):
            raise FormatError("a numpy dtype may hold Python objects only as a whole "
                              "(dtype 'O'), not in a field or sub-array")
        return dtype


def check_descr(descr, depth):
    """A descr is a type string, or a list of (name, descr) / (name, descr, shape)
    tuples with str names (or (title, name) pairs of str) and int shapes."""
    if type(descr) is str:
        if not TYPESTR.match(descr):
            raise FormatError(f"a numpy dtype record holds the type string {descr[:40]!r}, "
                              f"which is not a plain numpy type")
        return
    if type(descr) is not list:
        raise FormatError(f"a numpy dtype descr is a str or a list of fields, the save "
                          f"holds a {type(descr).__name__}")
    if depth >= MAX_DESCR_DEPTH or len(descr) > MAX_FIELDS:
        raise FormatError("a numpy dtype descr nests too deep or has too many fields")
    for field in descr:
        if type(field) is not tuple or len(field) not in (2, 3):
            raise FormatError("a numpy structured dtype field is a (name, descr) or "
                              "(name, descr, shape) tuple")
        name = field[0]
        if not (type(name) is str or (type(name) is tuple and len(name) == 2
                                      and all(type(n) is str for n in name))):
            raise FormatError("a numpy structured dtype field name is a str")
        if len(field) == 3:
            shape = exact(field[2], tuple, "a numpy field's shape")
            if len(shape) > MAX_DIMS or prod(_ints(shape, "a numpy field's shape")) > 1 << 24:
                raise FormatError("a numpy field's shape is too large")
        if type(field[1]) is str and field[1].lstrip("<>|=").startswith("O"):
            raise FormatError("a numpy dtype may hold Python objects only as a whole "
                              "(dtype 'O'), not in a field")
        check_descr(field[1], depth + 1)


def _dtype(value):
    if not isinstance(value, np.dtype):
        raise FormatError(f"a numpy record's dtype must be a numpy dtype, the save holds "
                          f"a {type(value).__name__}")
    return value


def _shape(vals, ndim, what):
    if type(ndim) is not int or not 0 <= ndim <= MAX_DIMS or len(vals) < ndim:
        raise FormatError(f"a {what} record's dimensions are malformed")
    return _ints(vals[:ndim], f"a {what}'s shape")


# -- arrays --------------------------------------------------------------------------------

def root_of(arr):
    """The array owning arr's memory, if it is an ndarray autosave can save whole and
    view into; else None (arr is then saved as a copy of its data)."""
    root = arr
    while True:
        base = root.base
        if type(base) is np.ndarray:
            root = base
        elif type(base).__name__ == "DummyArray" and type(getattr(base, "base", None)) is np.ndarray:
            root = base.base        # numpy.lib.stride_tricks.as_strided
        else:
            break
    if root is arr or not owns_memory(root) or type(root) is not np.ndarray:
        return None
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    if root.dtype.hasobject and not arr.dtype.hasobject:
        return None
    return root


def owns_memory(arr):
    """Whether arr's memory is its own: allocated by numpy, or the buffer a load made
    for it alone (a large array's data, ``kernels.writable``): a root views are saved
    as views of."""
    base = arr.base
    return base is None or base.__class__ in MEMORY_OWNERS


MEMORY_OWNERS = (bytearray, *kernels.OWNERS)


def _flags(arr):
    flags = arr.flags          # a new object at each read of arr.flags
    return ((FORTRAN if flags.f_contiguous and not flags.c_contiguous else 0)
            | (0 if flags.writeable else READONLY))


class ArrayAdapter(Adapter):
    """Arrays owning their data, and views (dispatching to VIEW / OBJECT_ARRAY)."""
    name = "numpy.ndarray"
    reads_parts = False        # its dtype (built whole before it) and its bytes
    # batch_plan(fields): small arrays in batches (format 8), set by numpy_batches

    def parts(self, obj):      # only for arrays of plain data owning their memory
        flags = _flags(obj)
        return [obj.dtype, flags, obj.tobytes("F" if flags & FORTRAN else "C"), *obj.shape]

    def create(self, rec, vals):
        """A record's array, its large data taken from the decoder without another
        copy where nothing else holds it (``kernels.writable``)."""
        if len(vals) < 4 or vals[3].__class__ is not bytes or len(vals[3]) < IN_PLACE_MIN:
            return self.build(vals)
        dtype, flags, shape, order = self.checked(vals)
        arr = np.ndarray(shape, dtype, kernels.writable(vals, rec, 3), order=order)
        if flags & READONLY:
            arr.flags.writeable = False
        return arr

    def build(self, vals):
        dtype, flags, shape, order = self.checked(vals)
        data = vals[3]
        if data.__class__ is BufferRef:
            return _on_buffer(data.view, dtype, shape, order, flags)
        # a copy, so the array owns its memory (views of it may follow); the size
        # checked above is exactly what the constructor reads
        arr = np.ndarray(shape, dtype, data, order=order).copy(order)
        if flags & READONLY:
            arr.flags.writeable = False
        return arr

    def checked(self, vals):
        """(dtype, flags, shape, order) of a record, its data's size checked."""
        if len(vals) < 4:
            raise FormatError("a numpy.ndarray record is too short")
        dtype, flags, data = _dtype(vals[1]), vals[2], vals[3]
        if data.__class__ is not BufferRef:
            exact(data, bytes, "a numpy array's data")
        if flags.__class__ is not int or flags & ~(FORTRAN | READONLY):
            raise FormatError("a numpy array's flags are malformed")
        shape = tuple(vals[4:])
        if len(shape) > MAX_DIMS:
            raise FormatError("a numpy.ndarray record's dimensions are malformed")
        count = 1
        for n in shape:
            if n.__class__ is not int or n < 0:
                raise FormatError("a numpy.ndarray's shape must be ints >= 0")
            count *= n
        if dtype.hasobject:
            raise FormatError("a numpy.ndarray record of raw bytes cannot hold objects")
        size = data.view.nbytes if data.__class__ is BufferRef else len(data)
        if count * dtype.itemsize != size or (dtype.itemsize == 0 and count > MAX_ITERATOR_GAP):
            raise FormatError(f"a numpy array of shape {shape} and dtype {dtype.str} "
                              f"holds {size} bytes of data")
        return dtype, flags, shape, "F" if flags & FORTRAN else "C"


def _on_buffer(view, dtype, shape, order, flags):
    """An array on an out-of-band buffer's memory, without a copy; writeable as saved,
    so a writeable array over read-only memory is a copy (charged to the budget)."""
    arr = np.ndarray(shape, dtype=dtype, buffer=view, order=order)
    if flags & READONLY:
        arr.flags.writeable = False
    elif view.readonly:
        charge(arr.nbytes, arr.nbytes >> 6, f"a copy of a read-only buffer of {arr.nbytes:,} "
                                            f"bytes")
        return arr.copy(order=order)
    note_root(arr)
    return arr


class ObjectArrayAdapter(Adapter):
    # freed by unchecked C recursion, and numpy's frames are big: nested arrays die
    # some 5,000 deep on an 8 MiB stack, so each level counts 3 (limits.py)
    c_dealloc = 3
    name, mutable, has_fill = "numpy.object_array", True, True

    def parts(self, obj):
        order = "F" if _flags(obj) & FORTRAN else "C"
        return [_flags(obj), obj.ndim, *obj.shape, *obj.ravel(order=order)]

    def allocate(self, rec):
        if len(rec) < 3:
            raise FormatError("a numpy.object_array record is too short")
        flags, ndim = rec[1], rec[2]
        if type(flags) is not int or flags & ~(FORTRAN | READONLY):
            raise FormatError("a numpy array's flags are malformed")
        shape = _shape(rec[3:], ndim, "numpy.object_array")
        if len(rec) - 3 - ndim != prod(shape):
            raise FormatError(f"a numpy object array of shape {shape} holds "
                              f"{len(rec) - 3 - ndim} items")
        return np.empty(shape, dtype=object, order="F" if flags & FORTRAN else "C")

    def fill(self, obj, vals):
        ndim = vals[2]
        flat = obj.ravel(order="K")         # a view: obj owns contiguous memory
        for i, item in enumerate(vals[3 + ndim:]):
            flat[i] = item                  # stores the object; calls nothing on it
        if vals[1] & READONLY:
            obj.flags.writeable = False


class ViewAdapter(Adapter):
    c_dealloc = 3             # as object arrays: a view frees its base
    name = "numpy.view"
    build_finished = slice(1, 2)            # the root's items (object arrays)

    def parts(self, obj, root):
        offset = (obj.__array_interface__["data"][0]
                  - root.__array_interface__["data"][0])
        return [root, obj.dtype, 0 if obj.flags.writeable else READONLY, offset,
                obj.ndim, *obj.shape, *obj.strides]

    def build(self, vals):
        if len(vals) < 6:
            raise FormatError("a numpy.view record is too short")
        root, dtype, flags, offset, ndim = vals[1:6]
        if type(root) is not np.ndarray or (
                not owns_memory(root) and not built_on_buffer(root)) or not (
                root.flags.c_contiguous or root.flags.f_contiguous):
            raise FormatError("a numpy view's base must be an array owning its memory")
        dtype = _dtype(dtype)
        if type(flags) is not int or flags & ~READONLY or type(offset) is not int:
            raise FormatError("a numpy view's flags and offset are ints")
        shape = _shape(vals[6:], ndim, "numpy.view")
        if len(vals) != 6 + 2 * ndim:
            raise FormatError("a numpy view record holds a shape and strides of its ndim")
        strides = vals[6 + ndim:]
        for s in strides:
            if type(s) is not int or abs(s) > 1 << 62:
                raise FormatError("a numpy view's strides are ints")
        if prod(shape) > MAX_ELEMENTS:
            raise FormatError("a numpy view has too many elements")
        check_inside(root, dtype, shape, strides, offset)
        if root.dtype.hasobject:
            # object pointers: only whole, aligned items of an object base
            size = root.itemsize
            if not dtype.hasobject or dtype != root.dtype or offset % size or any(
                    s % size for s in strides):
                raise FormatError("a view of a numpy object array must be an object view "
                                  "of whole items")
            from_offset = root.reshape(-1, order="A")[offset // size:] if root.size else root
            view = _as_strided(from_offset, shape, strides)
        elif dtype.hasobject:
            raise FormatError("a numpy view of plain data cannot hold Python objects")
        else:
            view = np.ndarray(shape, dtype=dtype, buffer=root, offset=offset, strides=strides)
        if flags & READONLY:
            view.flags.writeable = False
        return view


def _as_strided(arr, shape, strides):
    return sys.modules["numpy.lib.stride_tricks"].as_strided(arr, shape, strides)


def check_inside(root, dtype, shape, strides, offset):
    """Every byte the view can reach lies inside root's memory."""
    if 0 in shape:
        low = high = offset
    else:
        low = offset + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        high = offset + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + dtype.itemsize
    if low < 0 or high > root.nbytes or offset < 0:
        raise FormatError(f"a numpy view reaches bytes {low}..{high} of a base of "
                          f"{root.nbytes} bytes")


class ScalarAdapter(Adapter):
    name = "numpy.scalar"
    reads_parts = False        # its dtype (built whole before it) and a plain value
    batch_inline = True        # its batches' one column holds inline values only
    # batch_row(obj), batch_plan(fields): scalars in batches (format 8), set by
    # numpy_batches

    def parts(self, obj):
        dtype = scalar_dtype(obj)
        if dtype.hasobject:
            raise TypeError("a numpy scalar holding Python objects cannot be saved")
        if dtype.kind in "biuf" and dtype.itemsize <= 8:
            return [dtype, obj.item()]      # exact as a Python bool, int or float
        return [dtype, obj.tobytes()]

    def build(self, vals):
        dtype, raw = vals[1:]
        dtype = _dtype(dtype)
        kind = type(raw)
        if kind is not bytes:
            if dtype.kind not in "biuf" or dtype.itemsize > 8 or kind not in _ITEM_TYPES[dtype.kind]:
                raise FormatError(f"a numpy scalar of dtype {dtype.str} holds a {kind.__name__}")
            return dtype.type(raw)          # out of range: OverflowError, a FormatError
        if dtype.hasobject or len(raw) != dtype.itemsize:
            raise FormatError(f"a numpy scalar of dtype {dtype.str} holds {len(raw)} bytes")
        return np.frombuffer(raw, dtype=dtype)[0].copy()


_ITEM_TYPES = {"b": (bool,), "i": (int,), "u": (int,), "f": (float,)}


def scalar_dtype(obj):
    """The dtype a scalar is saved with: its own, but for an empty bytes_ or str_,
    whose dtype says 0 bytes (S0, U0) while tobytes gives one item (a NUL): saved as
    S1 / U1, which loads to the empty scalar again."""
    dtype = obj.dtype
    if dtype.itemsize == 0 and dtype.kind in "SU":
        return np.dtype((dtype.type, 1)).newbyteorder(dtype.byteorder)
    return dtype


# -- dispatch: one save handler for every ndarray ------------------------------------------

class NdarrayDispatch(Adapter):
    """np.ndarray maps to this on save: it picks the record kind per array."""
    name = "numpy.<ndarray dispatch>"
    batch_name = "numpy.ndarray"     # the type entry of its row batches
    batch_inline = True              # whose columns hold inline values only
    # batch_row_for(walker), batch_row(obj): the rows of small arrays (format 8), set
    # by numpy_batches

    def __init__(self):
        self.types = (np.ndarray,)

    def save_record(self, walker, obj):
        root = None if obj.base is None else root_of(obj)     # most arrays own theirs
        if root is not None:
            made = VIEW.parts(obj, root)
            adapter = VIEW
        elif obj.dtype.hasobject:
            if obj.dtype.fields is not None or obj.dtype.subdtype is not None:
                raise TypeError("a numpy array whose structured dtype holds Python objects "
                                "cannot be saved; use dtype=object for the whole array")
            made, adapter = OBJECT_ARRAY.parts(obj), OBJECT_ARRAY
        else:
            policy = getattr(walker, "out_of_band", None)   # a SavePolicy: dumps sets it
            flat = obj.flags.c_contiguous or obj.flags.f_contiguous
            if flat and policy is not None and obj.nbytes >= policy.minimum:
                return out_of_band(walker, obj)
            if flat and obj.nbytes >= IN_PLACE_MIN and getattr(walker, "encodes_now", False):
                return in_place(walker, obj)
            made, adapter = ARRAY.parts(obj), ARRAY
        walker.keep.append(made)
        return walker.refs(walker.index_of(adapter), made)


def in_place(walker, obj):
    """The array's record with its data as a view of its memory, for an encoder that
    writes it before the game runs again (``walker.encodes_now``): the bytes
    ``tobytes`` would give, without the copy (a large array is then copied once, into
    the save)."""
    return _record_on_memory(walker, obj, memoryview(_memory(obj)))


def out_of_band(walker, obj):
    """The array's record with its data as a marker the encoder offers out of band
    (docs/format.md, "Out-of-band buffers"): the array's own memory, not a copy."""
    return _record_on_memory(walker, obj, OutOfBand(PickleBuffer(_memory(obj))))


def _memory(obj):
    # its memory as flat bytes: numpy exports no buffer of some dtypes (datetime64)
    return obj.reshape(-1, order="A").view(np.uint8)


def _record_on_memory(walker, obj, data):
    """The array's record (``ARRAY.parts`` but for the data) with ``data`` in place of
    a copy of its bytes: set after the walk made the record, which holds it as is."""
    made = [obj.dtype, _flags(obj), b"", *obj.shape]
    walker.keep.append(made)
    rec = walker.refs(walker.index_of(ARRAY), made)
    rec[3] = data
    return rec


# -- random generators ---------------------------------------------------------------------

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


class BitGeneratorAdapter(Adapter):
    name, mutable, has_fill = "numpy.random.BitGenerator", True, True
    fill_finished = slice(2, None)          # reads the state dict

    def __init__(self, random):
        self.kinds = {k: getattr(random, k) for k in BIT_GENERATORS}
        self.types = tuple(self.kinds.values())

    def parts(self, obj):
        return [type(obj).__name__, wide_ints_boxed(obj.state)]

    def allocate(self, rec):
        if len(rec) != 3 or type(rec[1]) is not str or rec[1] not in self.kinds:
            raise FormatError(f"a numpy bit generator record names one of {BIT_GENERATORS}")
        return self.kinds[rec[1]](0)        # seeded: its state is replaced below

    def fill(self, obj, vals):
        state = vals[2]
        check_state(state, 0)
        if state.get("bit_generator") != type(obj).__name__:
            raise FormatError("a numpy bit generator's state is for another kind")
        obj.state = wide_ints_unboxed(state)   # numpy's setter checks the rest


# PCG64 and Philox states hold 128-bit ints; msgpack holds 64. They are written as
# (little-endian two's complement bytes,): a save's states hold no other tuples.
_INT_MIN, _INT_END = -(1 << 63), 1 << 64


def wide_ints_boxed(state):
    out = {}
    for key, value in state.items():
        if type(value) is dict:
            value = wide_ints_boxed(value)
        elif type(value) is int and not _INT_MIN <= value < _INT_END:
            value = (value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True),)
        out[key] = value
    return out


def wide_ints_unboxed(state):
    out = {}
    for key, value in state.items():
        if type(value) is dict:
            value = wide_ints_unboxed(value)
        elif type(value) is tuple:
            value = int.from_bytes(value[0], "little", signed=True)
        out[key] = value
    return out


def check_state(state, depth):
    """A bit generator state: dicts of str keys holding ints, strs, uint32 arrays."""
    if type(state) is not dict or depth > 3:
        raise FormatError("a numpy bit generator state is a dict of plain values")
    for key, value in state.items():
        if type(key) is not str:
            raise FormatError("a numpy bit generator state has str keys")
        if type(value) is dict:
            check_state(value, depth + 1)
        elif type(value) is np.ndarray:
            if value.dtype.hasobject:
                raise FormatError("a numpy bit generator state holds no objects")
        elif type(value) is tuple:
            if len(value) != 1 or type(value[0]) is not bytes or len(value[0]) > 64:
                raise FormatError("a numpy bit generator state's wide int is (bytes,)")
        elif type(value) not in (int, str, float):
            raise FormatError(f"a numpy bit generator state holds a {type(value).__name__}")


class GeneratorAdapter(Adapter):
    name = "numpy.random.Generator"

    def __init__(self, random):
        self.random = random
        self.types = (random.Generator,)

    def parts(self, obj):
        return [obj.bit_generator]

    def build(self, vals):
        (bitgen,) = vals[1:]
        if type(bitgen) not in BITGEN.types:
            raise FormatError("a numpy Generator record holds a bit generator")
        return self.random.Generator(bitgen)


class RandomStateAdapter(Adapter):
    name = "numpy.random.RandomState"
    build_finished = slice(1, 2)            # the bit generator's state is set first

    def __init__(self, random):
        self.random = random
        self.types = (random.RandomState,)

    def parts(self, obj):
        state = obj.get_state(legacy=False)
        return [obj._bit_generator, state["has_gauss"], state["gauss"]]

    def build(self, vals):
        bitgen, has_gauss, gauss = vals[1:]
        if type(bitgen) not in BITGEN.types or type(has_gauss) is not int or type(gauss) is not float:
            raise FormatError("a numpy RandomState record holds a bit generator, an int "
                              "and a float")
        rs = self.random.RandomState(bitgen)
        state = bitgen.state
        state.update(has_gauss=has_gauss, gauss=gauss)
        rs.set_state(state)
        return rs


ARRAY = VIEW = OBJECT_ARRAY = SCALAR = DTYPE = BITGEN = DISPATCH = None


def register_numpy():
    global np, ARRAY, VIEW, OBJECT_ARRAY, SCALAR, DTYPE, DISPATCH
    np = sys.modules["numpy"]
    DTYPE = DtypeAdapter()
    DTYPE.types = tuple({type(np.dtype(c)) for c in "?bBhHiIlLqQefdgFDGOSUVmM"}
                        | {type(np.dtype([("a", "i1")]))}
                        | {v for v in vars(np.dtypes).values()
                           if isinstance(v, type) and issubclass(v, np.dtype)})
    ARRAY, VIEW, OBJECT_ARRAY = ArrayAdapter(), ViewAdapter(), ObjectArrayAdapter()
    SCALAR = ScalarAdapter()
    SCALAR.types = tuple(t for t in set(np.sctypeDict.values()) if t is not np.object_)
    DISPATCH = NdarrayDispatch()
    for adapter in (DTYPE, ARRAY, VIEW, OBJECT_ARRAY, SCALAR):
        register_adapter(adapter)
    from .base import ADAPTERS_BY_TYPE
    ADAPTERS_BY_TYPE[np.ndarray] = DISPATCH
    # saved bound methods (autosave/model/purity.py): arrays and scalars compute, but write
    # files with tofile and dump
    for cls in (np.ndarray, np.generic):
        declare(cls, impure=("tofile", "dump"))


def register_random():
    global BITGEN
    random = sys.modules["numpy.random"]
    BITGEN = register_adapter(BitGeneratorAdapter(random))
    register_adapter(GeneratorAdapter(random))
    register_adapter(RandomStateAdapter(random))
    for cls in (random.Generator, random.RandomState, random.BitGenerator):
        declare(cls)


when_imported("numpy", register_numpy, ("numpy.dtype", "numpy.ndarray", "numpy.view",
                                        "numpy.object_array", "numpy.scalar"))
when_imported("numpy.random", register_random, ("numpy.random.BitGenerator",
                                                "numpy.random.Generator",
                                                "numpy.random.RandomState"))
