// device_reduce.h - the reduction kernels of comm/reduce/reduce.h, on a GPU, stream-ordered.
//
// These are the arithmetic of the device-buffer collectives (issue 6): an intra-node allreduce
// reads its peers' buffers (mapped with CUDA IPC) and reduces them with reduce_sources; PLX_AVG
// ends with divide_by; a pre-multiplied sum starts with scale_by.
//
// Semantics are those of comm/reduce/reduce.h, bit for bit, for every plx_datatype_t and op:
//  - Counts are elements of `datatype`; every buffer holds `count` elements.
//  - PLX_AVG reduces as PLX_SUM; the caller divides the final sum once with divide_by.
//  - Integer SUM and PROD wrap modulo 2^bits (two's complement for signed types).
//  - FLOAT16/BFLOAT16 give the values of "widen to float32, combine, round back to nearest even
//    once per element per combine": the conversions are those of comm/reduce/half.h, except that
//    float16 SUM, PROD and scale_by use native binary16 add/mul, which round once and give the
//    same values (see device_reduce.cu). float32/float64 add, multiply and divide with correctly
//    rounded operations that are never fused into an FMA, and subnormals are kept: a device
//    result equals the CPU kernel's bits. Exception: when an IEEE result is NaN, a GPU gives the
//    canonical NaN where x86 keeps an operand's payload; it is a NaN on both. MIN/MAX move no
//    arithmetic, so their NaNs match bit for bit too.
//  - MIN/MAX are `b < a ? b : a` and `a < b ? b : a`, as on the CPU.
//  - reduce_sources(dst, {s0, s1, ..., s(k-1)}) is the left fold ((s0 op s1) op s2) ... op s(k-1),
//    rounded after every op: exactly what k-1 calls of the CPU reduce_copy/reduce_into give.
//    k == 1 copies s0.
//  - dst may equal a source exactly; other overlaps are not allowed.
//
// Memory: every pointer must be readable (sources) or writable (dst) by a kernel on the current
// device: its own cudaMalloc memory, managed memory, mapped pinned host memory, or a peer GPU's
// buffer opened with cudaIpcOpenMemHandle (or reachable through peer access). This layer does not
// classify pointers (memory_kind.h does, once per collective); a host pointer here faults the
// kernel, which CUDA reports on the stream as a sticky error.
//
// Stream order: each call launches one kernel on `stream` (a cudaStream_t, or nullptr for the
// legacy default stream), which must belong to the current device, and returns without waiting.
// Scalars (divisor, scale factor) are read on the host during the call.
//
// Vectorisation (after NCCL's reduceCopyPacks, NVIDIA/nccl src/device/common_kernel.h, and its
// per-type functors in src/device/reduce_kernel.h): when every pointer has the same offset
// modulo 16 bytes, a few scalar elements run first and the rest moves in 16-byte packs
// (ld.global.v4 / st.global.v4), four packs per thread per round, in a grid-stride loop sized
// from the device's SM count and the kernel's occupancy; the last partial pack runs as scalars.
// Pointers with different offsets run as scalars throughout. Indices are size_t: counts above
// 2^32 are fine.
//
// Errors (set_error() writes the message, naming the function, the argument or the CUDA error):
//   PLX_ERROR_INVALID_ARGUMENT  datatype or op out of range, a null pointer with count > 0,
//                               nsources not in 1..kMaxReduceSources, divisor 0, a null scalar,
//                               a pointer not aligned to the element size, or CUDA rejecting the
//                               stream (cudaErrorInvalidResourceHandle / cudaErrorInvalidValue).
//   PLX_ERROR_UNSUPPORTED       built without CUDA, no driver, or no GPU.
//   PLX_ERROR_SYSTEM            any other CUDA error at launch (including a sticky error left by
//                               an earlier fault in this process).
// count == 0 returns PLX_SUCCESS and launches nothing, whatever the pointers. Thread-safe: calls
// from several threads on several streams are independent.
#pragma once

#include <cstddef>

#include "plexus/plexus.h"

namespace plexus::comm::device {

// Most sources one reduce_sources call reads (the peers of one node's intra-node reduction).
constexpr int kMaxReduceSources = 16;

// dst[i] = a[i] op b[i] for i in 0..count-1 (dst may be a or b).
plx_result_t reduce_copy(void* dst, const void* a, const void* b, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, void* stream);

// dst[i] = sources[0][i] op sources[1][i] op ... op sources[nsources-1][i], folded left (see the
// file comment), for 1 <= nsources <= kMaxReduceSources. The pointer array is read on the host
// during the call; dst may equal one of the sources.
plx_result_t reduce_sources(void* dst, const void* const* sources, int nsources, size_t count,
                            plx_datatype_t datatype, plx_red_op_t op, void* stream);

// buf[i] = buf[i] / divisor: the second half of PLX_AVG. Integers divide in 64 bits and
// truncate toward zero; floats divide in their own precision (half types in float32, rounded
// once). divisor >= 1; 1 launches nothing.
plx_result_t divide_by(void* buf, size_t count, plx_datatype_t datatype, size_t divisor,
                       void* stream);

// dst[i] = src[i] * scalar, where scalar is a HOST pointer to one element of datatype (read
// during the call): the input scaling of a pre-multiplied sum. Integers wrap; half types multiply
// in float32 and round once. dst may equal src exactly.
plx_result_t scale_by(void* dst, const void* src, size_t count, plx_datatype_t datatype,
                      const void* scalar, void* stream);

}  // namespace plexus::comm::device
