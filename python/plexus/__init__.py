"""plexus: NumPy collectives over libplexus (the Plexus C ABI, include/plexus/plexus.h).

Pure Python over ctypes; no compiled extension. Under a launcher (plexus-run, mpirun,
torchrun, srun):

    import numpy as np
    import plexus

    with plexus.Communicator.from_env() as comm:     # destroyed at the end of the block
        x = (comm.rank + 1) * np.arange(8, dtype=np.float32)
        total = comm.allreduce(x)                    # new array, op=plexus.SUM
        comm.allreduce(x, x, op=plexus.MAX)          # in place: recvbuf is sendbuf
        blocks = comm.allgather(x)                   # shape (comm.size, 8)
        mine = comm.reduce_scatter(blocks)           # shape (8,): block comm.rank, summed
        comm.broadcast(x, x, root=0)
        req = comm.iallreduce(x)                     # non-blocking: a plexus.Request
        y = req.wait()
        sub = comm.split(color=comm.rank % 2)        # even and odd ranks
        sub.destroy()

or without a launcher: rank 0 calls plexus.get_unique_id(), hands the 128 bytes to the others,
and every rank calls plexus.Communicator.init_rank(nranks, unique_id, rank).

Calls (methods of Communicator; each i-form returns a Request):
    allreduce/iallreduce(sendbuf, recvbuf=None, op=SUM)
    reduce/ireduce(sendbuf, recvbuf=None, op=SUM, root=0)
    broadcast/ibroadcast(sendbuf, recvbuf=None, root=0)
    reduce_scatter/ireduce_scatter(sendbuf, recvbuf=None, op=SUM)
    allgather/iallgather(sendbuf, recvbuf=None)
    alltoall/ialltoall(sendbuf, recvbuf=None)
    gather/igather(sendbuf, recvbuf=None, root=0)
    scatter/iscatter(sendbuf, recvbuf=None, root=0)
    send/isend(sendbuf, peer), recv/irecv(recvbuf, peer)
    barrier/ibarrier(), split(color, key=None), destroy(), abort()
Each returns recvbuf (allocated when None; None on ranks a rooted call gives nothing);
Request.wait() returns the same, Request.test() -> bool, plexus.waitall(requests) -> list.
In place follows NCCL's pointer rules: allreduce(a, a); allgather(r.reshape(size, -1)[rank], r);
reduce_scatter(s, s.reshape(size, -1)[rank]). Arrays: C-contiguous, dtypes int8, uint8, int32,
uint32, int64, uint64, float16, float32, float64, and bfloat16 as uint16 arrays of its bits with
datatype=plexus.BFLOAT16.

Errors: every failing library call raises a PlexusError subclass carrying .code, .code_name
and the library's message (plexus.errors); checks made here before the call (dtype, sizes,
contiguity) raise InvalidArgumentError, a ValueError (DatatypeError: also a TypeError). Those
are raised on the rank that made the mistake before anything is sent, so they take no part in
the library's cross-rank argument comparison: the other ranks' call waits for this one (until
PLEXUS_TIMEOUT_MS) unless every rank made the same mistake, as the tests do.

Thread safety: one Communicator is used by one thread at a time (abort() from any thread);
distinct communicators from distinct threads; Requests may be waited for from any thread.

The library is found in the build tree (build/python/plexus -> build/lib), beside an installed
package (<prefix>/lib, <prefix>/lib/<multiarch>) or by the system loader (plexus._library).
"""
import ctypes as _ctypes

from . import _library, errors
from ._library import UNDEFINED
from .communicator import Communicator, get_unique_id
from .dtypes import Datatype, SUPPORTED_DTYPES
from .errors import (AbortedError, DatatypeError, InternalError, InvalidArgumentError,
                     InvalidUsageError, MismatchError, PlexusError, PlexusSystemError,
                     PlexusTimeoutError, RemoteError, Result, TransportError, UnsupportedError)
from .ops import Op
from .request import Request, waitall

SUM, PROD, MIN, MAX, AVG = Op.SUM, Op.PROD, Op.MIN, Op.MAX, Op.AVG
INT8, UINT8, INT32, UINT32 = Datatype.INT8, Datatype.UINT8, Datatype.INT32, Datatype.UINT32
INT64, UINT64, FLOAT16 = Datatype.INT64, Datatype.UINT64, Datatype.FLOAT16
BFLOAT16, FLOAT32, FLOAT64 = Datatype.BFLOAT16, Datatype.FLOAT32, Datatype.FLOAT64


def library_version():
    """libplexus's version as (major, minor, patch), from plx_get_version(). Thread-safe."""
    version = _ctypes.c_int()
    errors.check(_library.lib, _library.lib.plx_get_version(_ctypes.byref(version)))
    return (version.value // 10000, version.value // 100 % 100, version.value % 100)


__all__ = [
    "Communicator", "Request", "waitall", "get_unique_id", "library_version", "UNDEFINED",
    "Op", "SUM", "PROD", "MIN", "MAX", "AVG",
    "Datatype", "SUPPORTED_DTYPES", "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64",
    "FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64",
    "Result", "PlexusError", "InvalidArgumentError", "DatatypeError", "InvalidUsageError",
    "UnsupportedError", "MismatchError", "RemoteError", "PlexusTimeoutError", "TransportError",
    "AbortedError", "PlexusSystemError", "InternalError",
]
