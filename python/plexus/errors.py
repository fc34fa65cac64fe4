"""PlexusError and its subclasses: one per plx_result_t failure code.

Every failing plx_ call raises the subclass of its code, carrying
  .code       the plx_result_t value (an int; plexus.Result names them),
  .code_name  its name, e.g. "PLX_ERROR_INVALID_ARGUMENT",
  .message    plx_get_last_error(NULL) read right after the failing call, e.g.
              "plx_broadcast: rank 3: root 9 not in 0..3".
str(error) is the message followed by the code name.

Checks the binding makes itself before calling the library (dtype, contiguity, sizes) raise
InvalidArgumentError too, which is also a ValueError (and DatatypeError, for a dtype, also a
TypeError); their messages start with "plexus.<method>: rank R:".

What to rebuild after each code (plexus.h, "Result codes"):
  nothing (fix the call, the communicator is still usable):
      InvalidArgumentError, InvalidUsageError, UnsupportedError, MismatchError
  the communicator (destroy or abort it, create a new one):
      RemoteError, PlexusTimeoutError, TransportError, AbortedError
  the process:
      PlexusSystemError, InternalError
"""
import enum


class Result(enum.IntEnum):
    """plx_result_t."""
    SUCCESS = 0
    ERROR_INVALID_ARGUMENT = 1
    ERROR_INVALID_USAGE = 2
    ERROR_UNSUPPORTED = 3
    IN_PROGRESS = 4
    ERROR_MISMATCH = 5
    ERROR_REMOTE = 10
    ERROR_TIMEOUT = 11
    ERROR_TRANSPORT = 12
    ERROR_ABORTED = 13
    ERROR_SYSTEM = 20
    ERROR_INTERNAL = 21


def code_name(code):
    """"PLX_ERROR_REMOTE" for 10; "unknown plx_result_t <code>" for a code plexus.h lacks."""
    try:
        return "PLX_" + Result(code).name
    except ValueError:
        return f"unknown plx_result_t {code}"


class PlexusError(Exception):
    """A Plexus call failed: .code (int), .code_name (str), .message (the library's text)."""

    def __init__(self, code, message):
        self.code = int(code)
        self.code_name = code_name(code)
        self.message = message
        super().__init__(f"{message} [{self.code_name}]" if message else self.code_name)

    def __reduce__(self):
        return (type(self), (self.code, self.message))


class InvalidArgumentError(PlexusError, ValueError):
    """PLX_ERROR_INVALID_ARGUMENT: a null pointer, count/rank/root out of range, a bad size."""


class DatatypeError(InvalidArgumentError, TypeError):
    """An array dtype Plexus cannot carry, or send and receive dtypes that differ."""


class InvalidUsageError(PlexusError):
    """PLX_ERROR_INVALID_USAGE: a valid argument in a wrong state."""


class UnsupportedError(PlexusError):
    """PLX_ERROR_UNSUPPORTED: a feature this build or transport lacks."""


class MismatchError(PlexusError):
    """PLX_ERROR_MISMATCH: the ranks called a collective with different arguments."""


class RemoteError(PlexusError):
    """PLX_ERROR_REMOTE: a peer died, aborted or disconnected (the message names it)."""


class PlexusTimeoutError(PlexusError):
    """PLX_ERROR_TIMEOUT: an operation or the rendezvous exceeded PLEXUS_TIMEOUT_MS."""


class TransportError(PlexusError):
    """PLX_ERROR_TRANSPORT: libfabric or UCX reported an error (its text is in the message)."""


class AbortedError(PlexusError):
    """PLX_ERROR_ABORTED: plx_comm_abort() was called on this communicator."""


class PlexusSystemError(PlexusError):
    """PLX_ERROR_SYSTEM: an OS call or allocation failed (errno text in the message)."""


class InternalError(PlexusError):
    """PLX_ERROR_INTERNAL: a Plexus bug; please report it with the message."""


_BY_CODE = {
    Result.ERROR_INVALID_ARGUMENT: InvalidArgumentError,
    Result.ERROR_INVALID_USAGE: InvalidUsageError,
    Result.ERROR_UNSUPPORTED: UnsupportedError,
    Result.ERROR_MISMATCH: MismatchError,
    Result.ERROR_REMOTE: RemoteError,
    Result.ERROR_TIMEOUT: PlexusTimeoutError,
    Result.ERROR_TRANSPORT: TransportError,
    Result.ERROR_ABORTED: AbortedError,
    Result.ERROR_SYSTEM: PlexusSystemError,
    Result.ERROR_INTERNAL: InternalError,
}


def error_for(code, message):
    """The PlexusError subclass instance for a plx_result_t code."""
    return _BY_CODE.get(code, PlexusError)(code, message)


def check(lib, result):
    """Raises the error of a failed plx_ call. Call it right after the call, on the same thread:
    it reads plx_get_last_error(NULL), which the next Plexus call on this thread clears."""
    if result == Result.SUCCESS:
        return
    text = lib.plx_get_last_error(None)
    message = text.decode("utf-8", "replace") if text else ""
    raise error_for(result, message)


def argument_error(method, rank, text):
    """An InvalidArgumentError found by the binding: "plexus.<method>: rank R: <text>"."""
    return InvalidArgumentError(Result.ERROR_INVALID_ARGUMENT,
                                f"plexus.{method}: rank {rank}: {text}")


def datatype_error(method, rank, text):
    """A DatatypeError found by the binding, worded as argument_error."""
    return DatatypeError(Result.ERROR_INVALID_ARGUMENT, f"plexus.{method}: rank {rank}: {text}")
