"""Finding and loading libplexus.so.0, and the ctypes signatures of the C ABI it exports.

The library is looked for, in order:
  1. the build tree: <package>/../../lib/libplexus.so.0 (build/python/plexus -> build/lib);
  2. an installed layout, the package in <prefix>/lib/python3/dist-packages/plexus:
     <prefix>/lib/libplexus.so.0, then <prefix>/lib/<multiarch>/libplexus.so.0;
  3. the system loader: ctypes.CDLL("libplexus.so.0") (LD_LIBRARY_PATH, ld.so.cache).
The first that loads wins; if none does, importing plexus raises ImportError naming every path
tried and why it failed. Only include/plexus/plexus.h is used: no private symbol.
"""
import ctypes
import os
import sysconfig

SONAME = "libplexus.so.0"

# Opaque handles are pointers; enums (plx_result_t, plx_datatype_t, plx_red_op_t) are ints.
comm_t = ctypes.c_void_p
request_t = ctypes.c_void_p
result_t = ctypes.c_int
UNIQUE_ID_BYTES = 128  # PLX_UNIQUE_ID_BYTES
UNDEFINED = -1  # PLX_UNDEFINED


class UniqueId(ctypes.Structure):
    """plx_unique_id_t: 128 opaque bytes, passed by value to plx_comm_init_rank."""
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


def candidate_paths(package_dir):
    """The file paths tried before the system loader, in order (see the module docstring)."""
    build_lib = os.path.join(package_dir, os.pardir, os.pardir, "lib")
    # <prefix>/lib/python3/dist-packages/plexus -> <prefix>
    prefix = os.path.join(package_dir, os.pardir, os.pardir, os.pardir, os.pardir)
    paths = [os.path.join(build_lib, SONAME), os.path.join(prefix, "lib", SONAME)]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        paths.append(os.path.join(prefix, "lib", multiarch, SONAME))
    normalized = []
    for path in paths:
        path = os.path.normpath(path)
        if path not in normalized:
            normalized.append(path)
    return normalized


def load(package_dir):
    """Returns the loaded ctypes.CDLL with its signatures declared, or raises ImportError."""
    tried = []
    for path in candidate_paths(package_dir):
        if not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return declare(ctypes.CDLL(path))
        except OSError as error:
            tried.append(f"{path} ({error})")
    try:
        return declare(ctypes.CDLL(SONAME))
    except OSError as error:
        tried.append(f"{SONAME} through the system loader ({error})")
    raise ImportError("plexus: cannot load libplexus; tried:\n  " + "\n  ".join(tried))


def _fn(lib, name, argtypes, restype=result_t):
    function = getattr(lib, name)
    function.argtypes = argtypes
    function.restype = restype


def declare(lib):
    """Declares argtypes/restype of every plx_ function the package calls; returns lib."""
    vp, cvp, sz, i = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
    pint = ctypes.POINTER(ctypes.c_int)
    preq = ctypes.POINTER(request_t)
    _fn(lib, "plx_get_error_string", [result_t], ctypes.c_char_p)
    _fn(lib, "plx_get_last_error", [comm_t], ctypes.c_char_p)
    _fn(lib, "plx_get_version", [pint])
    _fn(lib, "plx_datatype_size", [i], sz)
    _fn(lib, "plx_get_unique_id", [ctypes.POINTER(UniqueId)])
    _fn(lib, "plx_comm_init_rank", [ctypes.POINTER(comm_t), i, UniqueId, i])
    _fn(lib, "plx_comm_init_from_env", [ctypes.POINTER(comm_t)])
    for query in ("plx_comm_rank", "plx_comm_size", "plx_comm_local_rank", "plx_comm_local_size"):
        _fn(lib, query, [comm_t, pint])
    _fn(lib, "plx_comm_transport_name", [comm_t, ctypes.POINTER(ctypes.c_char_p)])
    _fn(lib, "plx_comm_destroy", [comm_t])
    _fn(lib, "plx_comm_abort", [comm_t])
    _fn(lib, "plx_comm_split", [comm_t, i, i, ctypes.POINTER(comm_t)])
    _fn(lib, "plx_barrier", [comm_t])
    # Each collective's arguments before the comm: (buffers..., count, datatype, [op], [root]).
    # The blocking form ends with (comm, stream), the non-blocking plx_i<name> form with
    # (comm, plx_request_t*).
    collectives = {
        "allreduce": [cvp, vp, sz, i, i], "reduce": [cvp, vp, sz, i, i, i],
        "broadcast": [cvp, vp, sz, i, i], "reduce_scatter": [cvp, vp, sz, i, i],
        "allgather": [cvp, vp, sz, i], "alltoall": [cvp, vp, sz, i],
        "gather": [cvp, vp, sz, i, i], "scatter": [cvp, vp, sz, i, i],
        "send": [cvp, sz, i, i], "recv": [vp, sz, i, i],
    }
    for name, leading in collectives.items():
        _fn(lib, "plx_" + name, leading + [comm_t, vp])
        _fn(lib, "plx_i" + name, leading + [comm_t, preq])
    _fn(lib, "plx_ibarrier", [comm_t, preq])
    _fn(lib, "plx_wait", [request_t])
    _fn(lib, "plx_test", [request_t, pint])
    _fn(lib, "plx_waitall", [sz, preq])
    return lib


lib = load(os.path.dirname(os.path.abspath(__file__)))
