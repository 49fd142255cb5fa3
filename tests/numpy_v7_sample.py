"""The numpy state saved in tests/data/format7/arrays.sav by a version 7 autosave
(before small arrays were batched): ``python tests/numpy_v7_sample.py OUT`` with that
build made it. A version 8 reader loads it to ``state()``."""

import sys


def state():
    import numpy as np
    small = np.arange(6, dtype=np.int16).reshape(2, 3)
    ro = np.arange(4.0)
    ro.flags.writeable = False
    return {
        "floats": [np.arange(3.0) + k for k in range(5)],
        "ints": small,
        "view": small[:, 1],
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "readonly": ro,
        "zero_d": np.array(7, dtype=">i4"),
        "empty": np.zeros((0, 3)),
        "big_endian": np.arange(3, dtype=">f8"),
        "dates": np.array(["2020-01-01", "2021-06-30"], dtype="M8[D]"),
        "structured": np.zeros(2, dtype=[("x", "<f4"), ("n", "<i2")]),
        "bools": np.array([True, False, True]),
    }


if __name__ == "__main__":
    import autosave
    with open(sys.argv[1], "wb") as f:
        f.write(autosave.dumps(state()))
