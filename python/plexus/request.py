"""Request: a non-blocking operation in flight (plx_request_t), and waitall().

A Request holds references to the operation's arrays until it completes, so they cannot be
freed while the library reads or writes them; and the package holds every Request in flight,
so dropping the last reference to one does not free its arrays either (an operation never
completed keeps them until its communicator is destroyed or the process exits).
"""
import ctypes
import threading

from . import _library, errors

_lib = _library.lib

# Every Request not yet completed (strong references: its arrays must outlive the operation).
_in_flight = set()
_in_flight_lock = threading.Lock()


class Request:
    """A non-blocking operation started by Communicator.iallreduce() and the like.

    wait() blocks until it completes and returns its result array (the receive array; None
    for isend, ibarrier and for the rooted calls on the ranks that receive nothing); test()
    never blocks. Once complete, the Request keeps its result and error: wait() and test() may
    be called again and return (or raise) the same. The arrays passed to the operation must not
    be read or written until it completes.

    Thread safety: wait(), test() and waitall() may be called from any thread. Two threads
    waiting on one Request are serialised (the second returns the first's result); test()
    returns False while another thread is completing the request.
    """

    def __init__(self, comm, method, handle, keep_alive, result):
        self._comm = comm
        self._method = method
        self._handle = handle
        self._keep_alive = keep_alive
        self._result = result
        self._error = None
        self._done = False
        self._lock = threading.Lock()
        with _in_flight_lock:
            _in_flight.add(self)

    def __repr__(self):
        state = "done" if self._done else "in flight"
        return f"<plexus.Request {self._method} {state}>"

    @property
    def done(self):
        """True once the request has completed (successfully or not). Does not poll."""
        return self._done

    def _finish(self, code):
        """Records completion with plx_result_t `code` (the handle is freed by then).
        Must run right after the plx_ call that completed it, on the same thread."""
        try:
            errors.check(_lib, code)
        except errors.PlexusError as error:
            self._error = error
        self._handle = None
        self._keep_alive = None
        self._done = True
        with _in_flight_lock:
            _in_flight.discard(self)

    def _outcome(self):
        if self._error is not None:
            raise self._error
        return self._result

    def wait(self):
        """Blocks until the operation completes (sleeping, not spinning; the GIL is released)
        and returns its result array: the recvbuf passed or allocated (for irecv: the buffer
        received into), or None for isend, for ibarrier and on ranks the rooted call gives
        nothing. Raises the operation's PlexusError if it failed (RemoteError,
        PlexusTimeoutError, AbortedError, MismatchError, ...); later calls return or raise the
        same."""
        with self._lock:
            if not self._done:
                self._finish(_lib.plx_wait(self._handle))
        return self._outcome()

    def test(self):
        """Returns True if the operation has completed (then wait() returns at once), False if
        it is still running or another thread is completing it. Never waits for the
        operation. Raises the operation's PlexusError if it completed with a failure."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if not self._done:
                done = ctypes.c_int(0)
                code = _lib.plx_test(self._handle, ctypes.byref(done))
                if not done.value:
                    errors.check(_lib, code)
                    return False
                self._finish(code)
        finally:
            self._lock.release()
        self._outcome()
        return True


def waitall(requests):
    """Waits for every request of the iterable `requests`, in order, and returns the list of
    their results (as Request.wait()). Every request is completed even after an earlier one
    failed, as with plx_waitall and MPI_Waitall; then the first failure is raised (the others
    stay recorded on their Requests: call wait() on each to see them). A request may appear
    more than once and may already be complete. Thread safety: as Request.wait()."""
    requests = list(requests)
    first_error = None
    results = []
    for request in requests:
        if not isinstance(request, Request):
            raise TypeError(f"plexus.waitall: {request!r} is not a plexus.Request")
    for request in requests:
        try:
            results.append(request.wait())
        except errors.PlexusError as error:
            results.append(None)
            if first_error is None:
                first_error = error
    if first_error is not None:
        raise first_error
    return results


def in_flight_of(comm):
    """The Requests of `comm` not yet completed, in no particular order."""
    with _in_flight_lock:
        return [request for request in _in_flight if request._comm is comm]
