/*
 * plexus.h - the Plexus collective-communication C ABI.
 *
 * Plexus offers NCCL-shaped collectives over libfabric (efa, shm, tcp) on host memory.
 * This header is valid C99 and C++; every symbol starts with `plx_`.
 *
 * Conventions that hold for every function below:
 *  - Counts are `size_t` numbers of ELEMENTS of the given datatype, never bytes, unless the
 *    parameter name ends in `_bytes`.
 *  - Every function returns a `plx_result_t`. On failure, outputs are left untouched and
 *    plx_get_last_error() returns a message naming the function, the rank and the argument,
 *    e.g. "plx_broadcast: rank 3: root 9 not in 0..7".
 *  - Nothing exits the process and no C++ exception crosses this ABI.
 *  - Collectives are blocking: they return once the caller's output buffer holds the result.
 *    All ranks of a communicator must call the same collectives in the same order with the same
 *    count, datatype, op and root.
 *  - Thread safety: distinct communicators may be used from distinct threads concurrently. One
 *    communicator must not be used by two threads at once, except plx_comm_abort(), which may be
 *    called from any thread (or a signal-safe context is NOT guaranteed) at any time.
 *  - `stream` parameters are reserved for device buffers (a `cudaStream_t` in a CUDA build). Host
 *    work passes NULL; a non-NULL stream returns PLX_ERROR_UNSUPPORTED in this version.
 */
#ifndef PLEXUS_PLEXUS_H
#define PLEXUS_PLEXUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PLX_VERSION_MAJOR 0
#define PLX_VERSION_MINOR 1
#define PLX_VERSION_PATCH 0
/* PLX_VERSION = major*10000 + minor*100 + patch, as returned by plx_get_version(). */
#define PLX_VERSION (PLX_VERSION_MAJOR * 10000 + PLX_VERSION_MINOR * 100 + PLX_VERSION_PATCH)

/*
 * Result codes, grouped by what the caller must rebuild to recover.
 *
 * Nothing to rebuild (fix the call and retry; the communicator is still usable):
 *   PLX_SUCCESS                 the call did what it says.
 *   PLX_ERROR_INVALID_ARGUMENT  a null pointer, a count/rank/root out of range, an unknown
 *                               datatype or op, a malformed unique id.
 *   PLX_ERROR_INVALID_USAGE     a valid argument used in a wrong state (an env var that
 *                               contradicts another). Passing a communicator after
 *                               plx_comm_destroy or plx_comm_abort is undefined behaviour, as
 *                               with any freed handle.
 *   PLX_ERROR_UNSUPPORTED       a feature this build or transport does not provide (e.g. a stream).
 *   PLX_IN_PROGRESS             reserved for non-blocking calls: not finished yet.
 * Rebuild the communicator (destroy it, create a new one):
 *   PLX_ERROR_REMOTE            a peer died, aborted or disconnected; the message names the rank.
 *   PLX_ERROR_TIMEOUT           an operation or the rendezvous exceeded PLEXUS_TIMEOUT_MS.
 *   PLX_ERROR_TRANSPORT         libfabric reported an error; the message carries fi_strerror().
 *   PLX_ERROR_ABORTED           plx_comm_abort() was called on this communicator.
 * Restart the process:
 *   PLX_ERROR_SYSTEM            an OS call or allocation failed (errno text in the message).
 *   PLX_ERROR_INTERNAL          a Plexus bug: please report it with the message.
 */
typedef enum plx_result_t {
  PLX_SUCCESS = 0,
  PLX_ERROR_INVALID_ARGUMENT = 1,
  PLX_ERROR_INVALID_USAGE = 2,
  PLX_ERROR_UNSUPPORTED = 3,
  PLX_IN_PROGRESS = 4,
  PLX_ERROR_REMOTE = 10,
  PLX_ERROR_TIMEOUT = 11,
  PLX_ERROR_TRANSPORT = 12,
  PLX_ERROR_ABORTED = 13,
  PLX_ERROR_SYSTEM = 20,
  PLX_ERROR_INTERNAL = 21
} plx_result_t;

/* Element types. Half types (FLOAT16 = IEEE binary16, BFLOAT16 = bfloat16) are reduced in
 * float32 and rounded back to nearest-even. */
typedef enum plx_datatype_t {
  PLX_INT8 = 0,
  PLX_UINT8 = 1,
  PLX_INT32 = 2,
  PLX_UINT32 = 3,
  PLX_INT64 = 4,
  PLX_UINT64 = 5,
  PLX_FLOAT16 = 6,
  PLX_BFLOAT16 = 7,
  PLX_FLOAT32 = 8,
  PLX_FLOAT64 = 9,
  PLX_NUM_DATATYPES = 10
} plx_datatype_t;

/* Reduction operators. PLX_AVG is the sum divided by the communicator size (for integer types
 * the quotient is truncated toward zero, as NCCL does). */
typedef enum plx_red_op_t {
  PLX_SUM = 0,
  PLX_PROD = 1,
  PLX_MIN = 2,
  PLX_MAX = 3,
  PLX_AVG = 4,
  PLX_NUM_OPS = 5
} plx_red_op_t;

/* Opaque communicator handle. */
typedef struct plx_comm* plx_comm_t;

/* An NCCL-style unique id: created once by plx_get_unique_id() on one process, copied to every
 * rank by the caller's own means (MPI_Bcast, a file, a key-value store), then passed to
 * plx_comm_init_rank(). It holds the rendezvous address; treat it as opaque bytes. */
#define PLX_UNIQUE_ID_BYTES 128
typedef struct plx_unique_id_t {
  char internal[PLX_UNIQUE_ID_BYTES];
} plx_unique_id_t;

/* Name of a result code ("PLX_ERROR_REMOTE: a peer died or disconnected"). Never NULL; unknown
 * codes give "unknown plx_result_t". Thread-safe; the string is static. */
const char* plx_get_error_string(plx_result_t result);

/* The message of the most recent failed Plexus call made by the calling thread (thread-local),
 * e.g. "plx_allreduce: rank 2: datatype 42 not in 0..9". `comm` is accepted for NCCL symmetry
 * and may be NULL. Returns "" when no call has failed on this thread. The pointer stays valid
 * until the next Plexus call on this thread. */
const char* plx_get_last_error(plx_comm_t comm);

/* Writes PLX_VERSION to *version. Returns PLX_ERROR_INVALID_ARGUMENT if version is NULL. */
plx_result_t plx_get_version(int* version);

/*
 * Creates a unique id whose rendezvous server runs in the calling process (a background thread
 * listening on TCP; address from PLEXUS_MASTER_ADDR, else this host's first non-loopback IPv4
 * address, else 127.0.0.1; port from PLEXUS_MASTER_PORT, else one chosen by the kernel).
 * The calling process must stay alive until every rank has joined, and it is normally rank 0.
 * The server also relays peer-loss reports for the communicator's lifetime: if its process
 * exits while the communicator is in use, every rank sees PLX_ERROR_REMOTE naming rank 0.
 * Returns PLX_ERROR_INVALID_ARGUMENT if id is NULL; PLX_ERROR_SYSTEM if the listener cannot be
 * opened (the message names the address and errno text).
 */
plx_result_t plx_get_unique_id(plx_unique_id_t* id);

/*
 * Creates a communicator of `nranks` ranks in which the caller is `rank`; collective over all
 * ranks: it returns once every rank has joined and exchanged transport addresses, or fails.
 * Rendezvous: each rank connects over TCP (Boost.Asio) to the server named in `id`, sends its
 * libfabric endpoint address, and receives the table of all addresses. The TCP connection stays
 * open for the communicator's lifetime as a liveness channel: a peer that dies is reported to
 * every rank as PLX_ERROR_REMOTE naming the lost rank, within PLEXUS_TIMEOUT_MS at most.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT if comm is NULL, nranks < 1, rank not in 0..nranks-1, or the
 * id is malformed; PLX_ERROR_TIMEOUT if not every rank joined within PLEXUS_TIMEOUT_MS;
 * PLX_ERROR_REMOTE if ranks disagree on nranks or two ranks claim the same rank;
 * PLX_ERROR_TRANSPORT if no libfabric provider can be opened (PLEXUS_FI_PROVIDER forces one).
 * *comm is written only on success. Thread-safe for distinct comm outputs.
 */
plx_result_t plx_comm_init_rank(plx_comm_t* comm, int nranks, plx_unique_id_t id, int rank);

/*
 * Creates the world communicator from the launcher's environment. The rank and world size are
 * read from, in order: PLEXUS_RANK/PLEXUS_WORLD_SIZE; torchrun's RANK/WORLD_SIZE;
 * Open MPI's OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE; MPICH/Hydra's PMI_RANK/PMI_SIZE;
 * Slurm's SLURM_PROCID/SLURM_NTASKS. The local rank comes from PLEXUS_LOCAL_RANK, LOCAL_RANK,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID. The rendezvous address is
 * PLEXUS_MASTER_ADDR/PLEXUS_MASTER_PORT, else MASTER_ADDR/MASTER_PORT, else 127.0.0.1:29500;
 * rank 0 runs the rendezvous server. With none of these set, a world of one rank is created.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT if comm is NULL or a variable is malformed (the message
 * names the variable and its value) or the rank is not below the world size; otherwise as
 * plx_comm_init_rank(). *comm is written only on success.
 */
plx_result_t plx_comm_init_from_env(plx_comm_t* comm);

/* Rank of the caller in comm (0..size-1), world size, local rank (index among the ranks on this
 * host) and local size (ranks on this host). Return PLX_ERROR_INVALID_ARGUMENT if comm or the
 * output pointer is NULL. Thread-safe. */
plx_result_t plx_comm_rank(plx_comm_t comm, int* rank);
plx_result_t plx_comm_size(plx_comm_t comm, int* size);
plx_result_t plx_comm_local_rank(plx_comm_t comm, int* local_rank);
plx_result_t plx_comm_local_size(plx_comm_t comm, int* local_size);

/* Name of the libfabric provider the communicator runs on ("tcp;ofi_rxm", "shm", "efa", ...).
 * The string lives as long as the communicator. PLX_ERROR_INVALID_ARGUMENT if an argument is NULL. */
plx_result_t plx_comm_transport_name(plx_comm_t comm, const char** name);

/* Frees the communicator after a clean shutdown: waits (bounded by PLEXUS_TIMEOUT_MS) until
 * every rank has also called plx_comm_destroy, so no peer loses in-flight messages. If a peer
 * died, it frees local resources anyway and returns PLX_ERROR_REMOTE; if some rank has not
 * called it within PLEXUS_TIMEOUT_MS, it frees them and returns PLX_ERROR_TIMEOUT. NULL is
 * accepted and returns PLX_SUCCESS. The handle is invalid afterwards whatever the result. */
plx_result_t plx_comm_destroy(plx_comm_t comm);

/* Aborts the communicator: operations in progress on any thread return PLX_ERROR_ABORTED, peers
 * see PLX_ERROR_REMOTE naming this rank, and the resources are freed. Does not wait for peers.
 * NULL returns PLX_SUCCESS. The handle is invalid afterwards. */
plx_result_t plx_comm_abort(plx_comm_t comm);

/* Writes to *async_error the error that ended the communicator in the background (a peer lost,
 * reported on the liveness channel), or PLX_SUCCESS if none. Does not block. Thread-safe.
 * PLX_ERROR_INVALID_ARGUMENT if an argument is NULL. */
plx_result_t plx_comm_get_async_error(plx_comm_t comm, plx_result_t* async_error);

/*
 * Allreduce: recvbuf[i] = op over ranks r of sendbuf_r[i], for i in 0..count-1, on every rank.
 * In place when sendbuf == recvbuf. Buffers must not otherwise overlap.
 *
 * Algorithm: ring allreduce = reduce-scatter then allgather over a ring of ranks, chunked into
 * slices of PLEXUS_CHUNK_BYTES and pipelined (Patarasuk & Yuan, "Bandwidth optimal all-reduce
 * algorithms for clusters of workstations", JPDC 2009). Each rank sends 2(n-1)/n * count elements.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT for a NULL comm, a NULL buffer with count > 0, buffers that
 * partly overlap, or a datatype or op out of range; PLX_ERROR_UNSUPPORTED for a non-NULL stream; PLX_ERROR_REMOTE,
 * PLX_ERROR_TIMEOUT, PLX_ERROR_TRANSPORT or PLX_ERROR_ABORTED as described above (recvbuf is then
 * unspecified). count == 0 returns PLX_SUCCESS without communicating.
 */
plx_result_t plx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                           void* stream);

/*
 * Broadcast: every rank's recvbuf receives `count` elements of the root's sendbuf. sendbuf is
 * read only on the root (others may pass NULL); in place on the root when sendbuf == recvbuf.
 *
 * Algorithm: pipelined chain (ring) broadcast for large messages and a binomial tree for small
 * ones (see docs/algorithms.md); each non-root rank receives count elements once.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT for a NULL comm, root not in 0..size-1, a NULL recvbuf (or
 * a NULL sendbuf on the root) with count > 0, partly overlapping buffers on the root, or a
 * datatype out of range; otherwise as
 * plx_allreduce().
 */
plx_result_t plx_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, int root, plx_comm_t comm, void* stream);

/*
 * Barrier: returns once every rank of comm has entered it.
 * Algorithm: dissemination barrier (Hensgen, Finkel & Manber 1988), ceil(log2 n) rounds of
 * zero-byte messages. Returns PLX_ERROR_INVALID_ARGUMENT for a NULL comm; otherwise as
 * plx_allreduce().
 */
plx_result_t plx_barrier(plx_comm_t comm);

/* Writes the table of every PLEXUS_* environment variable libplexus reads to `out`: per
 * variable its name, type (integer, bytes, string, level), default and a one-paragraph help text,
 * in the order of the table in comm/core/config.cpp. docs/tuning.md is kept in step with it by a
 * test. Returns PLX_ERROR_INVALID_ARGUMENT if out is NULL; PLX_ERROR_SYSTEM if writing fails.
 * Thread-safe. */
plx_result_t plx_print_config(FILE* out);

/* Size in bytes of one element of datatype, or 0 if datatype is out of range. */
size_t plx_datatype_size(plx_datatype_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLEXUS_H */
