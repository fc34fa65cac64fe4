"""Communicator: a plx_comm_t, its creation, lifetime, properties and split.

The collectives on NumPy arrays are in plexus.collectives (a mixin of Communicator).
Counts are never passed: they come from the arrays' sizes (elements, not bytes). Every array
must be a C-contiguous numpy.ndarray of a supported dtype (plexus.dtypes); send and receive
arrays of one call share their dtype; receive arrays must be writeable. When recvbuf is None a
new array is returned; shapes are given per method. In place follows NCCL's pointer rules
(plexus.h): the call is in place when the receive array starts where plexus.h says, e.g.
allreduce(a, a), or allgather(r.reshape(size, -1)[rank], r).

Thread safety (plexus.h): one Communicator must not be used by two threads at once, and all
ranks must call the same collectives in the same order with the same sizes, dtype, op and root;
abort() may be called from any thread at any time. Distinct communicators may be used from
distinct threads concurrently. Blocking calls release the GIL while they wait.
"""
import atexit
import ctypes
import sys
import threading
import warnings

from . import _library, errors
from ._buffers import Call
from .collectives import Collectives
from .request import Request, in_flight_of

_lib = _library.lib


def _check(code):
    """Raises the PlexusError of a failed call; call it right after the call (errors.check)."""
    errors.check(_lib, code)


# Handles created and not yet destroyed or aborted, in creation order: at interpreter exit the
# ones left are aborted, newest (split communicators) first, so a script that never destroys
# its communicator exits at once and its peers see it lost instead of waiting for it.
_live = {}
_live_lock = threading.Lock()


@atexit.register
def _abort_live_at_exit():
    with _live_lock:
        handles = list(_live)
        _live.clear()
    for handle in reversed(handles):
        _lib.plx_comm_abort(handle)


def get_unique_id():
    """Creates a unique id (plx_get_unique_id): 128 bytes to hand to every rank by the
    caller's own means (a file, MPI, a key-value store), then to Communicator.init_rank().

    The rendezvous server runs in this process (address from PLEXUS_MASTER_ADDR or this host's
    first non-loopback IPv4 address; port from PLEXUS_MASTER_PORT or one the kernel picks),
    which must stay alive while the communicator is in use; normally rank 0 calls it. The id
    holds the rendezvous key: treat it as a secret. Raises PlexusSystemError if the listener
    cannot be opened. Thread-safe.
    """
    uid = _library.UniqueId()
    _check(_lib.plx_get_unique_id(ctypes.byref(uid)))
    return bytes(ctypes.string_at(ctypes.addressof(uid), _library.UNIQUE_ID_BYTES))


class Communicator(Collectives):
    """A Plexus communicator. Create one with Communicator.from_env() (under plexus-run,
    mpirun, torchrun, srun) or Communicator.init_rank(); end it with destroy() (collective),
    abort(), or a `with` block.

    Properties rank, size, local_rank, local_size and transport are read once at creation.
    Thread safety: see the module docstring; methods of one Communicator must not run on two
    threads at once, except abort().
    """

    def __init__(self, handle, parent=None):
        """Wraps a live plx_comm_t; use from_env(), init_rank() or split() instead."""
        self._handle = handle
        self._parent = parent
        self._state_lock = threading.Lock()
        with _live_lock:
            _live[handle] = None
        values = []
        for query in ("plx_comm_rank", "plx_comm_size", "plx_comm_local_rank",
                      "plx_comm_local_size"):
            value = ctypes.c_int()
            _check(getattr(_lib, query)(handle, ctypes.byref(value)))
            values.append(value.value)
        self._rank, self._size, self._local_rank, self._local_size = values
        name = ctypes.c_char_p()
        _check(_lib.plx_comm_transport_name(handle, ctypes.byref(name)))
        self._transport = name.value.decode("utf-8", "replace")

    # -- creation and lifetime ---------------------------------------------------------------

    @classmethod
    def from_env(cls):
        """The world communicator from the launcher's environment (plx_comm_init_from_env).
        Collective over the world: returns once every rank has joined.

        Rank and size from PLEXUS_RANK/PLEXUS_WORLD_SIZE (plexus-run), RANK/WORLD_SIZE
        (torchrun), OMPI_COMM_WORLD_RANK/SIZE (Open MPI's mpirun), PMI_RANK/PMI_SIZE, or
        SLURM_PROCID/SLURM_NTASKS; the rendezvous at PLEXUS_MASTER_ADDR:PLEXUS_MASTER_PORT,
        else MASTER_ADDR:MASTER_PORT, else 127.0.0.1:29500, served by rank 0. With none set,
        a world of one rank. Raises InvalidArgumentError for a malformed variable,
        PlexusTimeoutError if not every rank joined in PLEXUS_TIMEOUT_MS, RemoteError if
        another rank failed during creation, TransportError if no transport opens.
        Thread-safe.
        """
        handle = _library.comm_t()
        _check(_lib.plx_comm_init_from_env(ctypes.byref(handle)))
        return cls(handle.value)

    @classmethod
    def init_rank(cls, nranks, unique_id, rank):
        """Communicator of `nranks` ranks in which the caller is `rank` (plx_comm_init_rank),
        joined through `unique_id` (the 128 bytes of get_unique_id(), the same on every rank).
        Collective: returns once all ranks joined. Raises InvalidArgumentError (also a
        ValueError) for a unique_id that is not 128 bytes, nranks < 1, rank out of 0..nranks-1
        or a stale id; PlexusTimeoutError, RemoteError, TransportError as from_env().
        Thread-safe.
        """
        if not isinstance(unique_id, (bytes, bytearray, memoryview)):
            raise errors.datatype_error("Communicator.init_rank", rank, "unique_id must be "
                                        f"bytes, not {type(unique_id).__name__}")
        unique_id = bytes(unique_id)
        if len(unique_id) != _library.UNIQUE_ID_BYTES:
            raise errors.argument_error("Communicator.init_rank", rank, f"unique_id has "
                                        f"{len(unique_id)} bytes, expected "
                                        f"{_library.UNIQUE_ID_BYTES}")
        call = Call("Communicator.init_rank", rank, nranks)
        nranks, rank = call.integer("nranks", nranks), call.integer("rank", rank)
        uid = _library.UniqueId.from_buffer_copy(unique_id)
        handle = _library.comm_t()
        _check(_lib.plx_comm_init_rank(ctypes.byref(handle), nranks, uid, rank))
        return cls(handle.value)

    def _take_handle(self):
        """The handle, now marked gone (None if it already was)."""
        with self._state_lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            with _live_lock:
                _live.pop(handle, None)
        return handle

    def destroy(self):
        """Frees the communicator after a clean shutdown (plx_comm_destroy): collective, it
        waits (up to PLEXUS_TIMEOUT_MS) until every rank has called it. Requests of this
        communicator still in flight are waited for first (their errors stay on the
        Requests). Destroy communicators made by split() before the one they came from.
        Idempotent: later calls do nothing. Raises RemoteError if a peer died or
        PlexusTimeoutError if a rank never called it; the communicator is freed either way.
        """
        if self._handle is None:
            return
        for request in in_flight_of(self):
            try:
                request.wait()
            except errors.PlexusError:
                pass
        handle = self._take_handle()
        if handle is not None:
            _check(_lib.plx_comm_destroy(handle))

    def abort(self):
        """Aborts the communicator (plx_comm_abort) without waiting for peers: operations in
        progress return AbortedError here (Requests still in flight too: their wait() raises
        it), peers see RemoteError naming this rank. Callable from any thread at any time;
        idempotent. The communicator is unusable afterwards (its methods raise
        InvalidUsageError)."""
        handle = self._take_handle()
        if handle is not None:
            _check(_lib.plx_comm_abort(handle))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        """Leaving a `with` block destroys the communicator, or aborts it when an exception
        is leaving (so that peers learn at once instead of waiting for this rank)."""
        if exc_type is None:
            self.destroy()
        else:
            self.abort()
        return False

    def __del__(self):
        # Never a collective call here: the garbage collector runs at different points on
        # different ranks. A communicator still live is aborted at interpreter exit.
        try:
            if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
                warnings.warn(f"plexus: {self!r} was never destroyed; it is aborted at exit",
                              ResourceWarning, stacklevel=2)
        except Exception:  # a half-torn-down interpreter: nothing to report to
            pass

    def __repr__(self):
        if getattr(self, "_handle", None) is None:
            return "<plexus.Communicator destroyed>"
        return (f"<plexus.Communicator rank {self._rank} of {self._size} "
                f"on {self._transport!r}>")

    # -- properties ---------------------------------------------------------------------------

    @property
    def rank(self):
        """This process's rank, 0..size-1."""
        return self._rank

    @property
    def size(self):
        """Number of ranks."""
        return self._size

    @property
    def local_rank(self):
        """Index of this rank among the ranks on this host."""
        return self._local_rank

    @property
    def local_size(self):
        """Number of ranks on this host."""
        return self._local_size

    @property
    def transport(self):
        """The transport's name: a libfabric provider ("tcp;ofi_rxm", "shm", "efa") or UCX."""
        return self._transport

    @property
    def handle(self):
        """The plx_comm_t as an int (for other ctypes code), or None once destroyed."""
        return self._handle

    def _live_handle(self, method):
        handle = self._handle
        if handle is None:
            raise errors.InvalidUsageError(errors.Result.ERROR_INVALID_USAGE,
                                           f"plexus.{method}: the communicator was destroyed "
                                           "or aborted")
        return handle

    def _start(self, name, args, keep_alive, result, nonblocking):
        """Calls plx_<name> (blocking, NULL stream) or plx_i<name> (returning a Request)."""
        handle = self._live_handle(("i" if nonblocking else "") + name)
        if nonblocking:
            request = _library.request_t()
            _check(getattr(_lib, "plx_i" + name)(*args, handle, ctypes.byref(request)))
            return Request(self, "i" + name, request.value, keep_alive, result)
        _check(getattr(_lib, "plx_" + name)(*args, handle, None))
        return result

    # -- communicator operations ----------------------------------------------------------

    def split(self, color, key=None):
        """New communicator of the ranks passing the same `color` (plx_comm_split, as
        MPI_Comm_split), ordered by `key` (default: this rank) then rank. Collective over this
        communicator. color plexus.UNDEFINED opts out and returns None. Raises
        InvalidArgumentError on every rank if any rank passed a color < 0 other than
        UNDEFINED. The new communicator must be destroyed on its own, before this one.
        Thread safety: as every call on this communicator."""
        call = Call("split", self._rank, self._size)
        color = call.integer("color", color)
        key = self._rank if key is None else call.integer("key", key)
        handle = self._live_handle("split")
        new = _library.comm_t()
        _check(_lib.plx_comm_split(handle, color, key, ctypes.byref(new)))
        return None if new.value is None else Communicator(new.value, parent=self)

    def barrier(self):
        """Returns once every rank has entered the barrier (plx_barrier). Raises RemoteError,
        PlexusTimeoutError, AbortedError as every collective."""
        _check(_lib.plx_barrier(self._live_handle("barrier")))

    def ibarrier(self):
        """Non-blocking barrier: a Request whose wait() returns None once every rank entered."""
        handle = self._live_handle("ibarrier")
        request = _library.request_t()
        _check(_lib.plx_ibarrier(handle, ctypes.byref(request)))
        return Request(self, "ibarrier", request.value, None, None)
