/*
 * plexus.h - the Plexus collective-communication C ABI.
 *
 * Plexus offers NCCL-shaped collectives over libfabric (efa, shm, tcp) or UCX (PLEXUS_TRANSPORT)
 * on host memory and, in a CUDA build, on device memory (stream-ordered; see "Device buffers and
 * streams" below).
 * This header is valid C99 and C++; every symbol starts with `plx_`.
 *
 * Conventions that hold for every function below:
 *  - Counts are `size_t` numbers of ELEMENTS of the given datatype, never bytes, unless the
 *    parameter name ends in `_bytes`.
 *  - Every function returns a `plx_result_t`, except three lookups that cannot fail:
 *    plx_get_error_string() and plx_get_last_error() return a string, plx_datatype_size() a
 *    size. On failure, outputs are left untouched and plx_get_last_error() returns a message
 *    naming the function, the rank and the argument, e.g. "plx_broadcast: rank 3: root 9 not in
 *    0..7".
 *  - Nothing exits the process and no C++ exception crosses this ABI.
 *  - Collectives come in two forms. plx_allreduce() etc. are blocking: they return once the
 *    caller's output buffer holds the result. plx_iallreduce() etc. return at once with a
 *    request (plx_wait/plx_test/plx_waitall); the buffers must stay valid and untouched until it
 *    completes.
 *    Operations on one communicator run in the order they were called, one at a time, on the
 *    communicator's progress thread (which sleeps on a condition variable when idle); operations
 *    on different communicators run concurrently. One exception: a plx_isend or plx_irecv
 *    outside a group, once posted, no longer holds the communicator: later calls run while it
 *    is in flight (as MPI_Isend/MPI_Irecv), so two ranks may each post an isend and then an
 *    irecv to the other without a group. While such a request is in flight the progress thread
 *    polls it, yielding for 100 us and then sleeping 16 us doubling to 1 ms between passes.
 *  - All ranks of a communicator must call the same collectives in the same order with the same
 *    count, datatype, op and root. Each collective first compares a small signature of its
 *    arguments across the ranks (ceil(log2 n) rounds of 72-byte messages, switched off with
 *    PLEXUS_CHECK_ARGS=0); a difference returns PLX_ERROR_MISMATCH on every rank.
 *  - Counts of 0 are allowed everywhere and move no data (the signature is still compared).
 *  - Thread safety: distinct communicators may be used from distinct threads concurrently. One
 *    communicator must not be used by two threads at once (the order of its calls must be the
 *    same on every rank), except plx_comm_abort(), which may be called from any thread at any
 *    time (it is not async-signal-safe). plx_wait/plx_test/plx_waitall may be called from any
 *    thread (one thread per request at a time).
 *  - Device buffers and streams (every collective and plx_send/plx_recv; the non-blocking
 *    forms take no stream, see below). `stream` is a
 *    `cudaStream_t` of the current device, or NULL. In a CUDA build every buffer may be device
 *    memory (cudaMalloc, as classified by cudaPointerGetAttributes), with a stream or with NULL
 *    (the legacy default stream). Completion is ordered on the stream: the call first waits for
 *    the work queued on the stream before it (cudaStreamSynchronize), and it returns once the
 *    result is written, so later work on the stream sees it. Device buffers go one of three
 *    ways (docs/gpu.md):
 *    . CUDA IPC: on a communicator whose 2..16 ranks all share one host (with peer memory, see
 *      PLEXUS_SHM), plx_allreduce, plx_reduce, plx_broadcast, plx_reduce_scatter and
 *      plx_allgather read their peers' device staging slots directly (plx_comm_last_algorithm
 *      says e.g. "reduce_scatter:cuda_ipc"). There, as NCCL requires, every rank must pass
 *      device buffers to the same call: a rank with host buffers facing ranks with device
 *      buffers gets PLX_ERROR_MISMATCH on every rank (with PLEXUS_CHECK_ARGS=0, a
 *      PLX_ERROR_TIMEOUT). The first such call is collective: it maps every peer's slots, once
 *      per communicator, on the current device (one device per communicator). Several ranks
 *      may share one GPU.
 *    . FI_HMEM: plx_send and plx_recv hand the device buffer to the libfabric provider when it
 *      was opened with FI_HMEM (PLEXUS_FI_HMEM; EFA by default), "send:fi_hmem"/"recv:fi_hmem".
 *      An EFA NIC without GPUDirect RDMA is opened without it (a WARN, once per process); with
 *      PLEXUS_FI_HMEM=2 communicator creation fails instead (PLX_ERROR_UNSUPPORTED, on every
 *      rank alike; docs/efa.md).
 *    . Staged, for everything else: through pinned host staging kept per communicator
 *      (cudaMallocHost, grown to the largest call, freed by plx_comm_destroy) and the host
 *      algorithm. plx_allreduce, plx_reduce, plx_broadcast, plx_send and plx_recv of more than
 *      two chunks (PLEXUS_CHUNK_BYTES, clamped to 64 KiB..16 MiB) are pipelined chunk by chunk
 *      through a ring of three pinned slots, one host call per chunk: every rank must then make
 *      the call blocking, outside a group, on device buffers too (else PLX_ERROR_MISMATCH; for
 *      plx_send/plx_recv, which FI_HMEM sends as the same chunks, the pair does not match).
 *    Host, pinned host and managed memory are host memory: with a stream the call waits for the
 *    stream, then runs on them directly.
 *    Errors: PLX_ERROR_INVALID_ARGUMENT when device and host buffers are mixed in one call, a
 *    device buffer is on another GPU than the current one, or CUDA rejects the stream;
 *    PLX_ERROR_UNSUPPORTED for a non-NULL stream in a build without CUDA, on a machine where
 *    CUDA sees no device, or in a process that has not loaded the CUDA driver, and for a device
 *    buffer in a build without CUDA or on a machine where CUDA sees no device (recognised when
 *    the process has loaded the driver). Each message names the function, the rank and the
 *    argument.
 *    Device buffers in the non-blocking forms and inside plx_group_start/plx_group_end: the call
 *    copies what it reads into pinned host memory of its own (cudaMallocHost, one allocation
 *    per call) and queues the host operation on those copies; when the request or the group
 *    completes, the result is copied back to the device buffer and the pinned memory freed
 *    (see "Non-blocking forms" and "Groups"). These calls never take CUDA IPC, FI_HMEM or the
 *    pipeline and always make one host call of the whole count, so where a blocking call takes
 *    CUDA IPC or is cut into chunks, every rank must make it in the same form (all blocking
 *    outside a group, or all non-blocking/grouped): mixing them is PLX_ERROR_MISMATCH (for
 *    plx_send/plx_recv: no match), as mixing host and device buffers there.
 *  - The algorithm is part of the signature: ranks must agree on PLEXUS_ALGO and
 *    plx_comm_set_algorithm, and the automatic choice is made from parameters that rank 0
 *    measured and shared, so every rank picks the same algorithm.
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
 *   PLX_IN_PROGRESS             plx_test() on a request that has not finished yet.
 *   PLX_ERROR_MISMATCH          the ranks called the same collective with different arguments
 *                               (count, datatype, op, root, or a different collective); every
 *                               rank returns it, the message names both sides, no data moved.
 * Rebuild the communicator (destroy it, create a new one):
 *   PLX_ERROR_REMOTE            a peer died, aborted or disconnected; the message names the rank.
 *   PLX_ERROR_TIMEOUT           an operation or the rendezvous exceeded PLEXUS_TIMEOUT_MS.
 *   PLX_ERROR_TRANSPORT         libfabric or UCX reported an error; the message carries its text
 *                               (fi_strerror(), ucs_status_string()).
 *   PLX_ERROR_ABORTED           plx_comm_abort() was called on this communicator.
 * Restart the process:
 *   PLX_ERROR_SYSTEM            an OS call or allocation failed (errno text in the message).
 *   PLX_ERROR_INTERNAL          a Plexus bug: please report it with the message.
 */
/* In C++ the enums of this header (and plugin.h) have int as their fixed underlying type, so
 * that whatever int a C caller passes (a datatype out of range, a pre-multiplied operator) is a
 * value the argument checks can refuse, not undefined behaviour; in C they are the same plain
 * int-sized enums. */
#ifdef __cplusplus
#define PLX_ENUM_INT : int
#else
#define PLX_ENUM_INT
#endif

typedef enum plx_result_t PLX_ENUM_INT {
  PLX_SUCCESS = 0,
  PLX_ERROR_INVALID_ARGUMENT = 1,
  PLX_ERROR_INVALID_USAGE = 2,
  PLX_ERROR_UNSUPPORTED = 3,
  PLX_IN_PROGRESS = 4,
  PLX_ERROR_MISMATCH = 5,
  PLX_ERROR_REMOTE = 10,
  PLX_ERROR_TIMEOUT = 11,
  PLX_ERROR_TRANSPORT = 12,
  PLX_ERROR_ABORTED = 13,
  PLX_ERROR_SYSTEM = 20,
  PLX_ERROR_INTERNAL = 21
} plx_result_t;

/* Element types. Half types (FLOAT16 = IEEE binary16, BFLOAT16 = bfloat16) are reduced in
 * float32 and rounded back to nearest-even. */
typedef enum plx_datatype_t PLX_ENUM_INT {
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
 * the quotient is truncated toward zero, as NCCL does). PLX_MIN and PLX_MAX propagate NaN on the
 * floating types: an element that is NaN on any rank is NaN in the result, on every algorithm,
 * transport and buffer kind, whatever order the ranks are combined in (as IEEE 754-2019's
 * minimum/maximum and PyTorch's torch.min/torch.max do; C's fmin/fmax would drop it). Values
 * from PLX_NUM_OPS up are pre-multiplied sums made by plx_red_op_create_premul_sum(). */
typedef enum plx_red_op_t PLX_ENUM_INT {
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

/* The message of the calling thread's last Plexus call if it failed (thread-local), e.g.
 * "plx_allreduce: rank 2: datatype 42 not in 0..9". Every Plexus call returning a plx_result_t
 * clears it first, so read it right after the failing call; "" when that call succeeded. `comm` is accepted for NCCL symmetry and may be NULL. The pointer stays valid
 * until the next Plexus call on this thread. */
const char* plx_get_last_error(plx_comm_t comm);

/* Writes PLX_VERSION to *version. Returns PLX_ERROR_INVALID_ARGUMENT if version is NULL. */
plx_result_t plx_get_version(int* version);

/* The libfabric versions, each as libfabric's FI_VERSION(major, minor) = major << 16 | minor:
 * *library_version is the loaded library's own (fi_version()), *api_version the API version
 * Plexus asks fi_getinfo for: the library's own when it is 1.18 or later (the efa provider
 * enables device RDMA and FI_HMEM on every EFA generation only from 1.18: libfabric's fi_efa(7)),
 * else 1.17, the version of the headers Plexus is built against. Either pointer may be NULL.
 * Always PLX_SUCCESS. Thread-safe. */
plx_result_t plx_get_libfabric_version(unsigned* library_version, unsigned* api_version);

/* Writes the level of libplexus's log on stderr to *level: 0 WARN, 1 INFO, 2 TRACE, as
 * PLEXUS_DEBUG sets it (read on first use and at each communicator creation; a malformed value
 * counts as WARN and the log says so). Lets plugins log at the library's level without reading
 * PLEXUS_DEBUG themselves. Returns PLX_ERROR_INVALID_ARGUMENT if level is NULL. Thread-safe. */
plx_result_t plx_get_log_level(int* level);

/*
 * Creates a unique id whose rendezvous server runs in the calling process (a background thread
 * listening on TCP; address from PLEXUS_MASTER_ADDR, else this host's first non-loopback IPv4
 * address, else 127.0.0.1; port from PLEXUS_MASTER_PORT, else one chosen by the kernel).
 * The calling process must stay alive until every rank has joined, and it is normally rank 0.
 * The server also relays peer-loss reports for the communicator's lifetime: if its process
 * exits while the communicator is in use, every rank sees PLX_ERROR_REMOTE naming rank 0.
 * The id carries 32 random bytes, the key a rank must prove (an HMAC-SHA256 challenge-response,
 * RFC 2104; the key never crosses the network) before the server admits it: a process without
 * the id cannot join, fail or crash the communicator (docs/security.md). Treat the id as a
 * secret. Returns PLX_ERROR_INVALID_ARGUMENT if id is NULL; PLX_ERROR_SYSTEM if the listener
 * cannot be opened (the message names the address and errno text) or the kernel gives no
 * random bytes.
 */
plx_result_t plx_get_unique_id(plx_unique_id_t* id);

/*
 * Creates a communicator of `nranks` ranks in which the caller is `rank`; collective over all
 * ranks: it returns once every rank has joined and exchanged transport addresses, or fails.
 * Rendezvous: each rank connects over TCP (Boost.Asio) to the server named in `id`, sends its
 * transport endpoint address (libfabric or UCX), and receives the table of all addresses. The
 * TCP connection stays open for the communicator's lifetime as a liveness channel: a peer that
 * dies is reported to every rank as PLX_ERROR_REMOTE naming the lost rank, within
 * PLEXUS_TIMEOUT_MS at most.
 *
 * A rank that fails anywhere in creation (a malformed setting, a transport that will not open)
 * after reaching the server tells it why, and every other rank fails at once with
 * PLX_ERROR_REMOTE "rank R lost during communicator setup (failed while creating its
 * communicator: <its error>)" instead of waiting out PLEXUS_TIMEOUT_MS.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT if comm is NULL, nranks < 1, rank not in 0..nranks-1, or the
 * id is malformed, or the server refused this rank's key ("this rendezvous belongs to another
 * job": a stale id) or did not prove it; PLX_ERROR_TIMEOUT if not every rank joined within
 * PLEXUS_TIMEOUT_MS; PLX_ERROR_REMOTE if ranks disagree on nranks, two ranks claim the same
 * rank, or another rank failed during creation (above); PLX_ERROR_INVALID_USAGE on every rank
 * if the ranks' settings that must agree differ (the transport's provider, PLEXUS_CHUNK_BYTES,
 * PLEXUS_FI_MAX_MSG_BYTES, the eager limit, PLEXUS_HIERARCHICAL_LANES; the message names both
 * ranks' values); PLX_ERROR_TRANSPORT if no transport can be opened (PLEXUS_TRANSPORT,
 * PLEXUS_FI_PROVIDER). *comm is written only on success.
 * Thread-safe for distinct comm outputs.
 */
plx_result_t plx_comm_init_rank(plx_comm_t* comm, int nranks, plx_unique_id_t id, int rank);

/*
 * Creates the world communicator from the launcher's environment. The rank and world size are
 * read from, in order: PLEXUS_RANK/PLEXUS_WORLD_SIZE; torchrun's RANK/WORLD_SIZE;
 * Open MPI's OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE; MPICH/Hydra's PMI_RANK/PMI_SIZE;
 * Slurm's SLURM_PROCID/SLURM_NTASKS. The local rank comes from PLEXUS_LOCAL_RANK, LOCAL_RANK,
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID. The rendezvous address is
 * PLEXUS_MASTER_ADDR/PLEXUS_MASTER_PORT, else MASTER_ADDR/MASTER_PORT, else 127.0.0.1:29500;
 * rank 0 runs the rendezvous server (on the listening socket PLEXUS_RENDEZVOUS_FD names, when
 * a launcher such as plexus-run passed one down and it is listening on that port; else it binds
 * the port). With none of these set, a world of one rank is created.
 * The rendezvous key every rank must prove (as for plx_comm_init_rank) comes from
 * PLEXUS_JOB_TOKEN (16..1024 bytes, the same on every rank; set but empty is refused as a wrong
 * length, never taken as unset; plexus-run sets a random one where it is unset or empty), else
 * from the launcher's job id (TORCHELASTIC_RUN_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE,
 * SLURM_JOB_ID.SLURM_STEP_ID: jobs stay apart, but these are no secret), else a fixed key with a
 * warning; see docs/security.md.
 *
 * Returns PLX_ERROR_INVALID_ARGUMENT if comm is NULL or a variable is malformed (the message
 * names the variable and its value, e.g. a PLEXUS_JOB_TOKEN of the wrong length) or the rank is
 * not below the world size; otherwise as plx_comm_init_rank(). *comm is written only on
 * success.
 */
plx_result_t plx_comm_init_from_env(plx_comm_t* comm);

/* Rank of the caller in comm (0..size-1), world size, local rank (index among the ranks on this
 * host) and local size (ranks on this host). Return PLX_ERROR_INVALID_ARGUMENT if comm or the
 * output pointer is NULL. Thread-safe. */
plx_result_t plx_comm_rank(plx_comm_t comm, int* rank);
plx_result_t plx_comm_size(plx_comm_t comm, int* size);
plx_result_t plx_comm_local_rank(plx_comm_t comm, int* local_rank);
plx_result_t plx_comm_local_size(plx_comm_t comm, int* local_size);

/* Name of the transport the communicator runs on: the libfabric provider ("tcp;ofi_rxm", "shm",
 * "efa", ...) or UCX with its transports ("ucx;tcp", ...). The string lives as long as the
 * communicator. PLX_ERROR_INVALID_ARGUMENT if an argument is NULL. */
plx_result_t plx_comm_transport_name(plx_comm_t comm, const char** name);

/* Frees the communicator after a clean shutdown: waits (bounded by PLEXUS_TIMEOUT_MS) until
 * every rank has also called plx_comm_destroy, so no peer loses in-flight messages. If a peer
 * died, it frees local resources anyway and returns PLX_ERROR_REMOTE; if some rank has not
 * called it within PLEXUS_TIMEOUT_MS, it frees them and returns PLX_ERROR_TIMEOUT. NULL is
 * accepted and returns PLX_SUCCESS. The handle is invalid afterwards whatever the result. */
plx_result_t plx_comm_destroy(plx_comm_t comm);

/* Aborts the communicator: operations in progress on any thread return PLX_ERROR_ABORTED, peers
 * see PLX_ERROR_REMOTE naming this rank, and the resources are freed. Does not wait for peers
 * (up to 1 s for the news to be written). For a communicator made by plx_comm_split the news
 * travels over the world communicator's rendezvous connection: its other members' calls fail
 * with PLX_ERROR_REMOTE "rank R (world rank W) called plx_comm_abort on a split communicator"
 * within about a millisecond, their plx_comm_destroy of it returns at once, and the communicator
 * it was split from stays usable (on every transport). That connection lives as long as the
 * world communicator: once this rank has destroyed it, the news reaches the other members only
 * through the transport (UCX reports the closed endpoint) or, on libfabric, as
 * PLX_ERROR_TIMEOUT after PLEXUS_TIMEOUT_MS; destroy split communicators before their world.
 * NULL returns PLX_SUCCESS. The handle is invalid afterwards. */
plx_result_t plx_comm_abort(plx_comm_t comm);

/* Writes to *async_error the error that ended the communicator in the background (a peer lost,
 * reported on the liveness channel), or PLX_SUCCESS if none. Does not block. Thread-safe.
 * PLX_ERROR_INVALID_ARGUMENT if an argument is NULL. */
plx_result_t plx_comm_get_async_error(plx_comm_t comm, plx_result_t* async_error);

/* ------------------------------------------------------------------------------------------
 * Collectives. Common rules, stated once:
 *  - Returns: PLX_ERROR_INVALID_ARGUMENT for a NULL comm, a NULL buffer the call must read or
 *    write with a count > 0, partly overlapping send and receive buffers (exactly the in-place
 *    layout given per call is allowed), a datatype, op or root out of range, or counts whose
 *    byte size overflows size_t; the stream and device-buffer errors given above;
 *    PLX_ERROR_MISMATCH when the ranks' arguments differ (see above), including when another
 *    rank's own call failed its argument checks (with PLEXUS_CHECK_ARGS=1 a rank whose
 *    collective returns PLX_ERROR_INVALID_ARGUMENT still takes part in the signature
 *    comparison, so the others fail at once naming it, "rank R called allreduce with arguments
 *    it refused ...", and the communicator stays usable everywhere; inside a group the
 *    comparison takes the refused call's place, and plx_group_end then fails on every rank,
 *    with PLX_ERROR_MISMATCH naming it, or PLX_ERROR_INVALID_ARGUMENT where every rank refused
 *    it: the group's sends and receives complete, its collectives before the refused one ran
 *    (on host buffers their results are in place; a failed group's device outputs are
 *    unspecified) and those after it did not);
 *    PLX_ERROR_REMOTE,
 *    PLX_ERROR_TIMEOUT, PLX_ERROR_TRANSPORT or PLX_ERROR_ABORTED as described with the result
 *    codes (output buffers are then unspecified). Argument errors are found before anything is
 *    sent and leave the communicator usable.
 *  - n is the communicator size, r the caller's rank; counts are elements of `datatype`.
 *  - Algorithms: each collective has several (docs/algorithms.md gives each one's source and
 *    cost); the communicator picks one per call from an alpha-beta cost model measured once per
 *    host and cached (PLEXUS_CACHE_DIR), unless PLEXUS_ALGO or plx_comm_set_algorithm() forces
 *    one. PLEXUS_DEBUG=INFO logs every choice and why.
 *  - Floating-point results may differ from a serial sum by reassociation: for a sum of n terms
 *    the error is within (n-1) * eps * sum|x_i| (eps of the datatype; float16/bfloat16 are summed
 *    in float32 and rounded once per step, so (n-1) roundings). All ranks receive bit-identical
 *    results from allreduce.
 * ------------------------------------------------------------------------------------------ */

/*
 * Allreduce: recvbuf[i] = op over ranks of sendbuf[i], i in 0..count-1, on every rank.
 * In place when sendbuf == recvbuf.
 * Algorithms: ring (Patarasuk & Yuan, JPDC 2009: reduce-scatter then allgather around a ring,
 * pipelined in PLEXUS_CHUNK_BYTES slices; 2(n-1)/n * count elements sent per rank), rabenseifner
 * (recursive halving then doubling; Rabenseifner, ICCS 2004), recursive_doubling (log2 n
 * full exchanges, for small counts), double_binary_tree (Sanders, Speck & Traeff 2009) and
 * hierarchical (ranks grouped by host: ring reduce-scatter inside each host, ring allreduce of
 * each block across hosts along its lane, ring allgather inside each host; uneven hosts work;
 * chosen when the communicator spans hosts and the network is the bottleneck) and shm (ranks on
 * one host: each rank reduces its 1/n of the buffer straight from its peers' slots of a shared
 * segment, then copies the others' results; docs/algorithms.md) and shm_oneshot (one host,
 * small counts: every rank stages all of its buffer and reduces every rank's slot itself, in
 * rank order, with one wait where shm needs two: the "one-shot" allreduce of TensorRT-LLM's
 * and PyTorch's symmetric-memory all-reduce) and, for device buffers on one host, cuda_ipc (the
 * same steps as shm on device slots mapped with CUDA IPC; docs/gpu.md).
 */
plx_result_t plx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                           void* stream);

/*
 * Reduce: the root's recvbuf[i] = op over ranks of sendbuf[i]. recvbuf is used only on the root
 * (others may pass NULL). In place on the root when sendbuf == recvbuf.
 * Algorithms: binomial tree (pipelined in chunks) and ring (ring reduce-scatter, then the
 * segments gathered at the root; Rabenseifner 2004) and hierarchical (inside each host, then
 * along the root's lane across hosts) and shm (one host: the root reads its peers' slots of
 * the shared segment) and, for device buffers on one host, cuda_ipc (the shm steps on device
 * slots mapped with CUDA IPC; docs/gpu.md).
 */
plx_result_t plx_reduce(const void* sendbuf, void* recvbuf, size_t count,
                        plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                        void* stream);

/*
 * Broadcast: every rank's recvbuf receives `count` elements of the root's sendbuf. sendbuf is
 * read only on the root (others may pass NULL); in place on the root when sendbuf == recvbuf.
 * Algorithms: binomial tree, pipelined chain, scatter then ring allgather (van de Geijn), and
 * hierarchical (across hosts along the root's lane, then inside each host) and shm (one host:
 * every rank copies from the root's slot of the shared segment) and, for device buffers on one
 * host, cuda_ipc (the shm steps on device slots mapped with CUDA IPC; docs/gpu.md).
 */
plx_result_t plx_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, int root, plx_comm_t comm, void* stream);

/*
 * Reduce-scatter: sendbuf holds n * recvcount elements; rank r's recvbuf[i] =
 * op over ranks of sendbuf[r * recvcount + i]. In place when
 * recvbuf == sendbuf + r * recvcount elements.
 * Algorithms: ring (n-1 steps, pipelined), recursive_halving (Thakur et al. 2005) and
 * hierarchical (inside each host, then along lanes across hosts) and shm (one host: each rank
 * reduces its block from its peers' slots of the shared segment) and, for device buffers on one
 * host, cuda_ipc (the shm steps on device slots mapped with CUDA IPC; docs/gpu.md).
 */
plx_result_t plx_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                void* stream);

/*
 * Allgather: recvbuf holds n * sendcount elements; block j (elements j*sendcount ..) is rank
 * j's sendbuf, on every rank. In place when sendbuf == recvbuf + r * sendcount elements.
 * Algorithms: ring (pipelined), bruck (Bruck et al., IEEE TPDS 8(11), 1997) and hierarchical
 * (along lanes across hosts, then inside each host; Traeff & Hunold's full-lane scheme) and
 * shm (one host: every rank copies its peers' blocks from the shared segment) and, for device
 * buffers on one host, cuda_ipc (the shm steps on device slots mapped with CUDA IPC;
 * docs/gpu.md).
 */
plx_result_t plx_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream);

/*
 * All-to-all: sendbuf and recvbuf hold n * count elements; block j of rank r's sendbuf lands in
 * block r of rank j's recvbuf. In place when sendbuf == recvbuf (staged internally).
 * Algorithms: pairwise exchange (n-1 steps; Thakur, Rabenseifner & Gropp, IJHPCA 2005), bruck
 * (ceil(log2 n) steps, small blocks; Bruck et al., IEEE TPDS 1997) and shm (ranks on one host:
 * every rank stages the blocks it sends in a shared segment and copies its own out of each
 * peer's; docs/algorithms.md).
 */
plx_result_t plx_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                          plx_datatype_t datatype, plx_comm_t comm, void* stream);

/*
 * All-to-all with counts: sendcounts[j] elements from sendbuf + sdispls[j] go to rank j and land
 * at recvbuf + rdispls[r] there, where rank j's recvcounts[r] must equal them. All four arrays
 * have n entries, in elements. Not in place (sendbuf == recvbuf is PLX_ERROR_INVALID_ARGUMENT).
 * The counts themselves are not compared across ranks: a pair that disagrees fails with
 * PLX_ERROR_TRANSPORT (message truncated) or PLX_ERROR_TIMEOUT.
 * Algorithm: pairwise exchange.
 */
plx_result_t plx_alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                           void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream);

/*
 * Gather: the root's recvbuf (n * sendcount elements) receives rank j's sendbuf in block j.
 * recvbuf is used only on the root. In place on the root when
 * sendbuf == recvbuf + root * sendcount elements. Algorithms: linear and binomial tree.
 */
plx_result_t plx_gather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        plx_datatype_t datatype, int root, plx_comm_t comm, void* stream);

/*
 * Scatter: block j of the root's sendbuf (n * recvcount elements) lands in rank j's recvbuf.
 * sendbuf is used only on the root. In place on the root when
 * recvbuf == sendbuf + root * recvcount elements. Algorithms: linear and binomial tree.
 */
plx_result_t plx_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm, void* stream);

/*
 * Point-to-point, as NCCL's ncclSend/ncclRecv: the k-th plx_send from rank a to rank b matches
 * the k-th plx_recv on b from a; count and datatype must agree (a longer message than the
 * receive fails with PLX_ERROR_TRANSPORT). A blocking send may wait for its receive, so a rank
 * that must send and receive at once (a ring exchange, or to itself) puts both between
 * plx_group_start() and plx_group_end(). PLX_ERROR_INVALID_ARGUMENT for a peer not in
 * 0..n-1 or a NULL buffer with count > 0. No signature is compared. As with MPI_Sendrecv, a
 * send's buffer must not overlap a receive's buffer of the same group (the result is undefined).
 * Device buffers: a blocking call outside a group of more than two chunks (PLEXUS_CHUNK_BYTES,
 * clamped to 64 KiB..16 MiB) goes as one message per chunk, staged or over FI_HMEM, so its peer
 * must make the matching blocking call on device buffers too, outside a group; a peer passing
 * host buffers, or a non-blocking or grouped call, expects one message and does not match.
 * Up to two chunks every form sends one message.
 */
plx_result_t plx_send(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream);
plx_result_t plx_recv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream);

/*
 * Barrier: returns once every rank of comm has entered it.
 * Algorithm: dissemination barrier (Hensgen, Finkel & Manber 1988), ceil(log2 n) rounds of
 * zero-byte messages. Returns PLX_ERROR_INVALID_ARGUMENT for a NULL comm; otherwise as above.
 */
plx_result_t plx_barrier(plx_comm_t comm);

/* ------------------------------------------------------------------------------------------
 * Pre-multiplied sum (NCCL's ncclRedOpCreatePreMulSum): an op that multiplies each rank's input
 * by `*scalar` (one element of `datatype`, host memory, read now) and then sums. Usable with
 * allreduce, reduce and reduce_scatter on comm, for that datatype only. Half types multiply in
 * float32 and round once, then sum as PLX_SUM does.
 * plx_red_op_create_premul_sum: PLX_ERROR_INVALID_ARGUMENT for a NULL op, scalar or comm or a
 * datatype out of range. plx_red_op_destroy: PLX_ERROR_INVALID_ARGUMENT for an op that is not a
 * live pre-multiplied sum of comm. Not thread-safe with calls on the same comm.
 * ------------------------------------------------------------------------------------------ */
plx_result_t plx_red_op_create_premul_sum(plx_red_op_t* op, const void* scalar,
                                          plx_datatype_t datatype, plx_comm_t comm);
plx_result_t plx_red_op_destroy(plx_red_op_t op, plx_comm_t comm);

/* ------------------------------------------------------------------------------------------
 * Non-blocking forms. Each takes the arguments of its blocking form (less the stream) and
 * returns at once with *request set; the operation runs on the communicator's progress thread
 * in call order. Argument errors are returned at once (no request is made). The buffers must
 * not be touched until plx_wait() or plx_waitall() returns or plx_test() reports completion;
 * for plx_ialltoallv this includes the four count and displacement arrays.
 * Device buffers (a CUDA build; every buffer of the call on the current device, as for the
 * blocking forms): having no stream, the call first waits for all earlier work of this process
 * on the current device (cudaDeviceSynchronize), copies the bytes it reads into pinned host
 * memory owned by this call, and queues the operation on the pinned copies before it returns;
 * the completing call (plx_wait, plx_test reporting done, plx_waitall, or plx_group_end for a
 * call inside a group) copies the result back to the device buffer (on the legacy default
 * stream, waited for, with the call's device made current on the completing thread) and frees
 * the pinned memory, so the result is in place on the device when it returns. A failure while
 * staging is returned at once (no request is made; the pinned memory is freed); a failure of
 * the copy back is the request's result (PLX_ERROR_SYSTEM or PLX_ERROR_INVALID_ARGUMENT with
 * CUDA's error, naming the function, rank and recvbuf). After a failed operation nothing is
 * copied back; its pinned memory is freed, except after a failure that may leave the transport
 * writing into it (a timeout, a lost peer: not PLX_ERROR_ABORTED, PLX_ERROR_MISMATCH or an
 * argument or usage error), where it is leaked on purpose, with a warning in the log.
 * ------------------------------------------------------------------------------------------ */
typedef struct plx_request* plx_request_t;

plx_result_t plx_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                            plx_request_t* request);
plx_result_t plx_ireduce(const void* sendbuf, void* recvbuf, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                         plx_request_t* request);
plx_result_t plx_ibroadcast(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, int root, plx_comm_t comm,
                            plx_request_t* request);
plx_result_t plx_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                 plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                 plx_request_t* request);
plx_result_t plx_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request);
plx_result_t plx_ialltoall(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request);
plx_result_t plx_ialltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                            void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request);
plx_result_t plx_igather(const void* sendbuf, void* recvbuf, size_t sendcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm,
                         plx_request_t* request);
plx_result_t plx_iscatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                          plx_datatype_t datatype, int root, plx_comm_t comm,
                          plx_request_t* request);
plx_result_t plx_isend(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request);
plx_result_t plx_irecv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request);
plx_result_t plx_ibarrier(plx_comm_t comm, plx_request_t* request);

/* Waits for the request to finish, completes it (a device buffer's copy back, see above), frees
 * it, and returns the operation's result (with plx_get_last_error() set on failure). The wait
 * sleeps; it does not spin. A NULL request returns PLX_ERROR_INVALID_ARGUMENT; a request of a
 * still open group (of this thread or another) returns PLX_ERROR_INVALID_USAGE (call
 * plx_group_end first). The request is invalid afterwards. */
plx_result_t plx_wait(plx_request_t request);

/* Never waits for the operation. If the request has finished: completes it (for device buffers
 * this includes the copy back, a bounded wait for a device copy), frees it, sets *done = 1 and
 * returns its result. Otherwise (still running, or being completed by another thread) sets
 * *done = 0 and returns PLX_SUCCESS (the request stays valid). PLX_ERROR_INVALID_ARGUMENT if
 * request or done is NULL; PLX_ERROR_INVALID_USAGE (and *done = 0) for a request of a still
 * open group, which would never finish before plx_group_end. */
plx_result_t plx_test(plx_request_t request, int* done);

/* plx_wait on each of requests[0..count-1] in order, as MPI_Waitall (MPI standard, "Multiple
 * Completions"), except that the first failure is returned instead of per-request statuses.
 * count is a number of requests; 0 returns PLX_SUCCESS at once, and requests may then be NULL.
 * Every non-NULL request is completed (for device buffers, its copy back) and freed and its
 * entry set to NULL (NULL entries are skipped), even after an earlier one failed. Returns
 * PLX_SUCCESS, or the first failure, with a message "plx_waitall: requests[i]: ...".
 * PLX_ERROR_INVALID_ARGUMENT if requests is NULL with count > 0 or a request appears twice in
 * it; PLX_ERROR_INVALID_USAGE if a request belongs to a still open group, of this thread or
 * another (in both refusals nothing is waited for or freed). Thread safety: as plx_wait, any
 * thread may call it, but no other thread may wait on or test any of these requests meanwhile.
 * The array stays the caller's. */
plx_result_t plx_waitall(size_t count, plx_request_t* requests);

/* ------------------------------------------------------------------------------------------
 * Groups, as NCCL's ncclGroupStart/ncclGroupEnd: between plx_group_start() and the matching
 * plx_group_end() on the same thread, blocking calls only check their arguments and queue the
 * operation (they return PLX_SUCCESS or an argument error). plx_group_end() then posts every
 * queued send and receive of each communicator at once, runs the queued collectives of each
 * communicator in order (communicators concurrently), and returns when all are done, with the
 * first failure. Non-blocking calls in a group return requests that finish with the group.
 * A stream passed in a group is waited for when the call is queued. Device buffers (a CUDA
 * build) are taken as in the non-blocking forms: when queued, the call waits for its stream
 * (a non-blocking call: for the device), copies what it reads into pinned memory of its own and
 * queues the operation on it; plx_group_end, once the operations have run, copies each result
 * back to its device buffer, in call order, on the call's stream (the legacy default stream for
 * a non-blocking call; waited for), and frees the pinned memory, so the results are in place
 * when it returns; a failed copy back is its result (and that of the call's request, if any).
 * A non-NULL stream in a build or process without CUDA is still PLX_ERROR_UNSUPPORTED, inside a
 * group too.
 * Groups nest; only the outermost plx_group_end() runs them. plx_group_end() without a start is
 * PLX_ERROR_INVALID_USAGE. plx_comm_split, plx_comm_destroy and plx_comm_abort may not be called
 * inside a group (PLX_ERROR_INVALID_USAGE).
 * ------------------------------------------------------------------------------------------ */
plx_result_t plx_group_start(void);
plx_result_t plx_group_end(void);

/* ------------------------------------------------------------------------------------------
 * Communicator split (MPI_Comm_split semantics): collective over comm. Ranks passing the same
 * color form one new communicator, ordered by key and then by their rank in comm; color
 * PLX_UNDEFINED opts out (*newcomm = NULL). Colors must be >= 0 or PLX_UNDEFINED: a bad color
 * on any rank returns PLX_ERROR_INVALID_ARGUMENT on every rank (the message names the rank).
 * The new communicator has its own transport endpoint (no cross-talk with comm or any other
 * communicator), inherits comm's cost model, algorithm overrides, timeout, chunk size and
 * hierarchical lane schedule (PLEXUS_HIERARCHICAL_LANES is not read again), and learns of a
 * lost peer through comm's liveness channel while comm lives. It must be destroyed (or aborted)
 * on its own; its plx_comm_destroy waits for the other members (a barrier, bounded by the
 * timeout). *newcomm is written only on success.
 * ------------------------------------------------------------------------------------------ */
#define PLX_UNDEFINED (-1)
plx_result_t plx_comm_split(plx_comm_t comm, int color, int key, plx_comm_t* newcomm);

/* ------------------------------------------------------------------------------------------
 * Algorithm control. spec has the PLEXUS_ALGO syntax: "collective:algorithm" pairs separated by
 * commas, e.g. "allreduce:ring,broadcast:chain"; collectives not named (and NULL or "") use the
 * cost model. Collectives: allreduce, reduce, broadcast, reduce_scatter, allgather, alltoall,
 * alltoallv, gather, scatter, barrier; algorithms as in docs/algorithms.md. It applies to later
 * calls on comm and must be made alike on every rank (else PLX_ERROR_MISMATCH follows, since the
 * algorithm is part of the signature). PLX_ERROR_INVALID_ARGUMENT for a malformed spec (the
 * message names the bad token and lists what is valid); comm is unchanged then.
 * plx_comm_last_algorithm: "collective:algorithm" of the last collective that ran on comm
 * (e.g. "allreduce:ring"), "" before the first; valid until the next call on comm.
 * ------------------------------------------------------------------------------------------ */
plx_result_t plx_comm_set_algorithm(plx_comm_t comm, const char* spec);
plx_result_t plx_comm_last_algorithm(plx_comm_t comm, const char** name);

/* ------------------------------------------------------------------------------------------
 * Predicted time of a collective on a group of comm's ranks, from comm's cost model (the
 * alpha-beta-gamma model of Hockney and of Thakur, Rabenseifner & Gropp, IJHPCA 2005, with the
 * parameters measured for comm; docs/algorithms.md gives each algorithm's formula), without
 * running or sending anything: planners price the collectives of groups they have not made yet
 * (the engine's placement planner, docs/placement.md).
 *  - collective: "allreduce", "reduce", "broadcast", "reduce_scatter", "allgather", "alltoall",
 *    "alltoallv", "gather", "scatter", "barrier" (the names of PLEXUS_ALGO), or "sendrecv": one
 *    message between the two members (nranks must be 2).
 *  - count: elements of datatype, as the collective's call takes them (reduce_scatter and
 *    allgather: one rank's block; alltoall: the block sent to each rank; sendrecv: the message).
 *  - ranks: nranks distinct ranks of comm (0..size-1) that would run it as one communicator
 *    split from comm, on the hosts comm has them on; NULL with nranks = comm's size: all of comm.
 *    Each host's network links are the NICs its members send on (several rails: up to one per
 *    rank).
 *  - *seconds: the prediction for the algorithm the cost model would choose for that group
 *    (honouring comm's algorithm overrides, PLEXUS_ALGO or plx_comm_set_algorithm); 0 for one
 *    rank. A prediction, not a measurement: docs/algorithms.md says how close each is.
 * Errors: PLX_ERROR_INVALID_ARGUMENT for a NULL comm, collective or seconds, an unknown
 * collective, a bad datatype, nranks not in 1..size, ranks NULL with nranks != size, a rank out
 * of range or listed twice, sendrecv with nranks != 2, or count * element size overflowing
 * size_t (the message names the argument and the caller's rank). Local: no communication, may
 * be called on any rank alone. Thread safety: safe with calls on comm from other threads except
 * plx_comm_set_algorithm, plx_comm_destroy and plx_comm_abort.
 * ------------------------------------------------------------------------------------------ */
plx_result_t plx_comm_predict_time(plx_comm_t comm, const char* collective, size_t count,
                                   plx_datatype_t datatype, const int* ranks, int nranks,
                                   double* seconds);

/* ------------------------------------------------------------------------------------------
 * Registered buffers (after NCCL's ncclMemAlloc / ncclCommRegister user-buffer registration).
 * Host memory from plx_mem_alloc can be mapped by the other ranks of the host; once a range of
 * it is registered on a communicator, collectives there may read and write it from the peers'
 * processes directly instead of copying through staging buffers.
 *
 * Five collectives use them, on a communicator whose ranks all share one host with peer memory
 * (PLEXUS_SHM=1, the default), for calls that run the one-host "shm" algorithm, of at least
 * 256 KiB (allreduce) or 1 MiB (the others), counting the larger of sendbuf and recvbuf
 * (plx_comm_last_algorithm then says "<collective>:shm_registered"), the blocking calls and the
 * plx_i* ones alike:
 *   allreduce       when on EVERY rank sendbuf and recvbuf lie in registered ranges: each rank
 *                   reduces its 1/n straight from all the sendbufs into all the recvbufs (about
 *                   2x less memory traffic than the staged path);
 *   broadcast       when the root's sendbuf is registered (the other ranks' buffers need not
 *                   be): every other rank copies it straight into its recvbuf;
 *   allgather       when every rank's sendbuf is registered: each rank copies every peer's
 *                   block straight into its recvbuf;
 *   reduce_scatter  when every rank's sendbuf is registered: each rank reduces its block
 *                   straight from all the sendbufs into its recvbuf;
 *   alltoall        when every rank's sendbuf is registered and no rank runs in place: each
 *                   rank copies its block of every peer's sendbuf into its recvbuf.
 * Each byte is then copied once instead of into a staging slot and out again. A rank writes only
 * its own recvbuf, except in the allreduce. When a needed buffer is not registered on some rank,
 * or a peer cannot map it (another pid namespace), every rank takes the staged path: no error,
 * the same values up to rounding (the reducing paths add the ranks' terms in different orders,
 * so float results may differ in the last bits between them; within one call every rank gets
 * the same bits). Every rank learns whether all are registered from the argument check
 * (PLEXUS_CHECK_ARGS); without it, large unregistered calls cost one short barrier more. The
 * first call on new buffers maps them in every peer (about a page-table walk of the buffers):
 * register buffers once and reuse them, as with NCCL. Other collectives ignore registrations,
 * as do communicators spanning hosts or without peer memory (PLEXUS_SHM=0); the transport does
 * not matter. plx_comm_set_algorithm and PLEXUS_ALGO know no "shm_registered": force
 * "<collective>:shm", which takes the registered path whenever it can. Buffers of one rank must
 * not overlap each other except exactly as the collective's in-place form.
 *
 * plx_mem_alloc: *ptr = `bytes` bytes (rounded up to whole pages) of zeroed host memory, an
 *   anonymous memfd mapped MAP_SHARED, its pages allocated at once (nothing is left behind when
 *   the process ends). Each allocation holds one file descriptor until plx_mem_free (mind
 *   `ulimit -n`: allocate few large buffers, as with cudaMalloc). Being MAP_SHARED, the memory
 *   stays shared with a child after fork() (not copied on write as malloc memory is).
 *   PLX_ERROR_INVALID_ARGUMENT: ptr NULL, bytes 0 or more than the host's physical memory.
 *   PLX_ERROR_SYSTEM: memfd_create, allocating the pages or mmap failed (errno text, e.g. too
 *   many open files, no space). Thread-safe.
 * plx_mem_free: frees memory from plx_mem_alloc (NULL: nothing, PLX_SUCCESS); registrations of
 *   it stop applying, also to a later allocation at the same address (deregister them too).
 *   Peers that mapped it unmap it at their next call on buffers they have not mapped yet (or at
 *   plx_comm_destroy), so its pages return to the system only then. PLX_ERROR_INVALID_ARGUMENT:
 *   ptr not from plx_mem_alloc or already freed. Thread-safe.
 * plx_comm_register: registers [buff, buff + bytes) on comm; *handle identifies it for
 *   plx_comm_deregister. Local (not collective), may be called from any thread, also while
 *   calls on comm are in flight (they see it or not, consistently per call). The range must lie
 *   inside one plx_mem_alloc allocation: else PLX_ERROR_INVALID_ARGUMENT naming the rank and the
 *   address, as for comm, buff or handle NULL or bytes 0. Ranges may overlap.
 * plx_comm_deregister: removes a registration; PLX_ERROR_INVALID_ARGUMENT when handle is not a
 *   live registration of comm. plx_comm_destroy drops every registration of comm.
 * ------------------------------------------------------------------------------------------ */
plx_result_t plx_mem_alloc(void** ptr, size_t bytes);
plx_result_t plx_mem_free(void* ptr);
plx_result_t plx_comm_register(plx_comm_t comm, void* buff, size_t bytes, void** handle);
plx_result_t plx_comm_deregister(plx_comm_t comm, void* handle);

/* Writes the table of every PLEXUS_* environment variable to `out`: those libplexus reads, then
 * (marked "read by ...") those its tools, the engine, the Python package and the tests read. Per
 * variable its name, type (integer, bytes, string, level), default and a one-paragraph help text,
 * in the order of the table in topology/settings/config_table.cpp. docs/tuning.md is kept in step with it
 * by a test. Returns PLX_ERROR_INVALID_ARGUMENT if out is NULL; PLX_ERROR_SYSTEM if writing fails.
 * Thread-safe. */
plx_result_t plx_print_config(FILE* out);

/* Size in bytes of one element of datatype, or 0 if datatype is out of range. */
size_t plx_datatype_size(plx_datatype_t datatype);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_PLEXUS_H */
