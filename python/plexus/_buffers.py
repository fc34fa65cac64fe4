"""The checks and allocations a call makes on its NumPy arrays before it reaches the library.

Each message names the method, this rank and the argument, as the library's own do:
    "plexus.allgather: rank 2: recvbuf has 7 elements, expected 8 (sendbuf 2 x 4 ranks)".
"""
import numpy as np

from . import dtypes, errors


def address(array):
    """The address of array's first element, or None (NULL) for None."""
    return None if array is None else array.ctypes.data


def block_shape(shape, size):
    """Shape of one rank's block of an array of `shape` split among `size` ranks on its first
    axis: the axis dropped when it has exactly `size` entries (the inverse of allgather's
    stacking), divided by `size` when it is a multiple of it, else a flat block."""
    total = int(np.prod(shape, dtype=np.int64))
    if len(shape) >= 1 and shape[0] == size:
        return tuple(shape[1:])
    if len(shape) >= 1 and shape[0] % size == 0:
        return (shape[0] // size,) + tuple(shape[1:])
    return (total // size,)


class Call:
    """One call's argument checks: method name, this rank, communicator size."""

    def __init__(self, method, rank, size):
        self.method = method
        self.rank = rank
        self.size = size

    def fail(self, text):
        return errors.argument_error(self.method, self.rank, text)

    def array(self, name, obj, writeable=False):
        """`obj` as a C-contiguous ndarray (writeable if asked), else TypeError/ValueError."""
        if not isinstance(obj, np.ndarray):
            raise errors.datatype_error(self.method, self.rank,
                                        f"{name} must be a numpy.ndarray, not {type(obj).__name__}")
        if not obj.flags.c_contiguous:
            raise self.fail(f"{name} is not C-contiguous (pass np.ascontiguousarray({name}))")
        if writeable and not obj.flags.writeable:
            raise self.fail(f"{name} is read-only")
        return obj

    def datatype(self, send, recv, datatype):
        """The plx datatype of the call: from sendbuf's dtype (or recvbuf's when sendbuf is
        None), which the other buffer must share."""
        first_name, first = ("sendbuf", send) if send is not None else ("recvbuf", recv)
        value = dtypes.to_datatype(first.dtype, datatype, self.method, self.rank, first_name)
        if send is not None and recv is not None and send.dtype != recv.dtype:
            raise errors.datatype_error(self.method, self.rank, f"recvbuf has dtype {recv.dtype} "
                                        f"but sendbuf has dtype {send.dtype}")
        return value

    def integer(self, name, value):
        """An int argument that fits a C int (its range is the library's to check)."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise errors.datatype_error(self.method, self.rank,
                                        f"{name} must be an int, not {type(value).__name__}")
        if not -2**31 <= int(value) < 2**31:
            raise self.fail(f"{name} {value} does not fit a C int")
        return int(value)

    def expect_size(self, name, array, expected, why):
        if array.size != expected:
            raise self.fail(f"{name} has {array.size} elements, expected {expected} ({why})")

    def divisible(self, name, array):
        """array.size // size, if it divides evenly."""
        if array.size % self.size:
            raise self.fail(f"{name} has {array.size} elements, not a multiple of "
                            f"{self.size} ranks")
        return array.size // self.size

    def output(self, name, recv, shape, dtype):
        """recv checked as a writeable array, or a new one of `shape` when it is None."""
        if recv is None:
            return np.empty(shape, dtype=dtype)
        return self.array(name, recv, writeable=True)
