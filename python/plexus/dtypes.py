"""NumPy dtypes <-> plx_datatype_t.

    int8 uint8 int32 uint32 int64 uint64 float16 float32 float64  map one to one;
    bfloat16 (PLX_BFLOAT16) has no NumPy dtype: pass its bit patterns as a uint16 array and
    datatype=plexus.BFLOAT16 explicitly. A uint16 array without it is refused (Plexus has no
    16-bit integer type), as are bool, int16, complex, object, structured and byte-swapped arrays.
Half types are reduced in float32 and rounded back to nearest-even (plexus.h).
"""
import enum

import numpy as np

from . import errors


class Datatype(enum.IntEnum):
    """plx_datatype_t."""
    INT8 = 0
    UINT8 = 1
    INT32 = 2
    UINT32 = 3
    INT64 = 4
    UINT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9


_NATURAL = {
    np.dtype(np.int8): Datatype.INT8,
    np.dtype(np.uint8): Datatype.UINT8,
    np.dtype(np.int32): Datatype.INT32,
    np.dtype(np.uint32): Datatype.UINT32,
    np.dtype(np.int64): Datatype.INT64,
    np.dtype(np.uint64): Datatype.UINT64,
    np.dtype(np.float16): Datatype.FLOAT16,
    np.dtype(np.float32): Datatype.FLOAT32,
    np.dtype(np.float64): Datatype.FLOAT64,
}

SUPPORTED_DTYPES = tuple(_NATURAL)


def to_datatype(dtype, datatype=None, method="datatype", rank="?", argument="array"):
    """The Datatype for arrays of `dtype`; `datatype`, when given, must agree with it
    (BFLOAT16 goes with uint16 only). Raises DatatypeError naming method, rank and argument."""
    dtype = np.dtype(dtype)
    if datatype is not None:
        try:
            if isinstance(datatype, bool):  # an int to Python, never a datatype
                raise ValueError(datatype)
            datatype = Datatype(datatype)
        except ValueError:
            raise errors.datatype_error(method, rank, f"datatype {datatype!r} is no plexus "
                                        "datatype (plexus.INT8 .. plexus.FLOAT64)") from None
        if datatype == Datatype.BFLOAT16:
            if dtype != np.dtype(np.uint16):
                raise errors.datatype_error(method, rank, f"{argument} has dtype {dtype}; "
                                            "datatype=BFLOAT16 takes uint16 arrays of bit patterns")
            return datatype
    natural = _NATURAL.get(dtype)
    if natural is None:
        hint = ("; for bfloat16 bit patterns pass datatype=plexus.BFLOAT16"
                if dtype == np.dtype(np.uint16) else "")
        names = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        raise errors.datatype_error(method, rank, f"{argument} has dtype {dtype}, not one of "
                                    f"{names}{hint}")
    if datatype is not None and datatype != natural:
        raise errors.datatype_error(method, rank, f"{argument} has dtype {dtype} but datatype="
                                    f"{datatype.name} was passed")
    return natural


def to_dtype(datatype):
    """The NumPy dtype that carries `datatype` (uint16 for BFLOAT16)."""
    datatype = Datatype(datatype)
    if datatype == Datatype.BFLOAT16:
        return np.dtype(np.uint16)
    for dtype, value in _NATURAL.items():
        if value == datatype:
            return dtype
    raise AssertionError(datatype)
