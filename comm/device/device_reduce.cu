// device_reduce.cu - the kernels of device_reduce.h: one element-wise kernel template, launched
// for 10 datatypes x (4 reduce ops + divide + scale) = 60 instantiations, nothing else.
//
// What happens to one element is in element_ops.cuh (the CPU kernel's arithmetic, written for
// the device); this file moves the elements. The kernel moves data in 16-byte packs when all
// pointers share their offset modulo 16, as NCCL's reduceCopyPacks does (NVIDIA/nccl
// src/device/common_kernel.h), with a peeled scalar head and tail (see device_reduce.h), and the
// host side checks arguments, sizes the grid and launches.
#include "comm/device/device_reduce.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "comm/base/error.h"
#include "comm/device/element_ops.cuh"
#include "comm/reduce/reduce.h"

namespace plexus::comm::device {
namespace {

constexpr int kThreads = 512;       // per block; __launch_bounds__ keeps registers within reach
constexpr int kUnroll = 4;          // 16-byte packs in flight per thread per source and round
constexpr size_t kPackBytes = 16;   // one ld.global.v4.u32
constexpr int kCachedDevices = 64;  // device ordinals whose SM count / occupancy are cached

// ---- the kernel ---------------------------------------------------------------------------------

// Where the elements are: [0, head) scalar, then npacks 16-byte packs, then a scalar tail up to
// count. head == count (npacks == 0) when the pointers' offsets modulo 16 differ.
struct Layout {
  void* dst;
  const void* src[kMaxReduceSources];
  int nsrc;
  size_t count;
  size_t head;
  size_t npacks;
};

template <class S>
union Pack {
  uint4 u;
  S e[kPackBytes / sizeof(S)];
};

template <class S, class Fn>
__device__ __forceinline__ void combine_pack(const Fn& fn, Pack<S>& acc, const Pack<S>& x) {
#pragma unroll
  for (int e = 0; e < static_cast<int>(kPackBytes / sizeof(S)); ++e) {
    acc.e[e] = fn.combine(acc.e[e], x.e[e]);
  }
}

template <class S, class Fn>
__device__ __forceinline__ void finish_pack(const Fn& fn, Pack<S>& acc) {
#pragma unroll
  for (int e = 0; e < static_cast<int>(kPackBytes / sizeof(S)); ++e) acc.e[e] = fn.finish(acc.e[e]);
}

template <class S>
__device__ __forceinline__ const uint4* packs_of(const void* base, size_t head) {
  return reinterpret_cast<const uint4*>(static_cast<const S*>(base) + head);
}

// Reduces `rounds` packs per thread starting at pack p, spaced `stride` apart (coalesced: the
// threads of a warp touch consecutive packs).
template <class S, class Fn, int kRounds>
__device__ __forceinline__ void reduce_packs(const Layout& l, const Fn& fn, size_t p,
                                             size_t stride) {
  Pack<S> acc[kRounds];
  const uint4* s0 = packs_of<S>(l.src[0], l.head);
#pragma unroll
  for (int u = 0; u < kRounds; ++u) acc[u].u = s0[p + u * stride];
  for (int s = 1; s < l.nsrc; ++s) {
    const uint4* src = packs_of<S>(l.src[s], l.head);
    Pack<S> x[kRounds];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) x[u].u = src[p + u * stride];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) combine_pack(fn, acc[u], x[u]);
  }
  uint4* dst = reinterpret_cast<uint4*>(static_cast<S*>(l.dst) + l.head);
#pragma unroll
  for (int u = 0; u < kRounds; ++u) {
    finish_pack(fn, acc[u]);
    dst[p + u * stride] = acc[u].u;
  }
}

template <class S, class Fn>
__global__ void __launch_bounds__(kThreads) elementwise_kernel(const Layout l, const Fn fn) {
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;

  // Packs: whole rounds of kUnroll, then single packs.
  size_t p = first;
  for (; p + (kUnroll - 1) * stride < l.npacks; p += kUnroll * stride) {
    reduce_packs<S, Fn, kUnroll>(l, fn, p, stride);
  }
  for (; p < l.npacks; p += stride) reduce_packs<S, Fn, 1>(l, fn, p, stride);

  // Scalars: the head [0, head) and the tail [head + npacks * elements per pack, count).
  const size_t tail_begin = l.head + l.npacks * (kPackBytes / sizeof(S));
  const size_t nscalar = l.head + (l.count - tail_begin);
  S* dst = static_cast<S*>(l.dst);
  for (size_t j = first; j < nscalar; j += stride) {
    const size_t i = j < l.head ? j : tail_begin + (j - l.head);
    S acc = static_cast<const S*>(l.src[0])[i];
    for (int s = 1; s < l.nsrc; ++s) acc = fn.combine(acc, static_cast<const S*>(l.src[s])[i]);
    dst[i] = fn.finish(acc);
  }
}

// ---- host side ----------------------------------------------------------------------------------

const char* datatype_name(plx_datatype_t datatype) {
  static const char* const names[] = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                      "uint64",  "float16",  "bfloat16", "float32", "float64"};
  const auto i = static_cast<unsigned>(datatype);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

// Maps a CUDA error to a Plexus code and records "<function>: <call>: <name>: <text>".
plx_result_t cuda_failure(const char* function, const char* call, cudaError_t err) {
  (void)cudaGetLastError();  // leave this runtime's last-error slot clean (non-sticky errors)
  plx_result_t code = PLX_ERROR_SYSTEM;
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
      err == cudaErrorNotSupported || err == cudaErrorCompatNotSupportedOnDevice ||
      err == cudaErrorNoKernelImageForDevice || err == cudaErrorUnsupportedPtxVersion) {
    code = PLX_ERROR_UNSUPPORTED;
  } else if (err == cudaErrorInvalidResourceHandle || err == cudaErrorInvalidValue) {
    code = PLX_ERROR_INVALID_ARGUMENT;
  }
  return set_error(code, std::string(function) + ": " + call + ": " + cudaGetErrorName(err) +
                             ": " + cudaGetErrorString(err));
}

// SM count of `device`, cached per ordinal.
cudaError_t sm_count(int device, int* count) {
  static std::atomic<int> cache[kCachedDevices];
  if (device >= 0 && device < kCachedDevices) {
    *count = cache[device].load(std::memory_order_relaxed);
    if (*count > 0) return cudaSuccess;
  }
  cudaError_t err = cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  if (*count < 1) *count = 1;
  if (device >= 0 && device < kCachedDevices) cache[device].store(*count, std::memory_order_relaxed);
  return cudaSuccess;
}

// Resident blocks per SM of one kernel instantiation on `device`, cached per ordinal.
template <class S, class Fn>
cudaError_t blocks_per_sm(int device, int* blocks) {
  static std::atomic<int> cache[kCachedDevices];
  if (device >= 0 && device < kCachedDevices) {
    *blocks = cache[device].load(std::memory_order_relaxed);
    if (*blocks > 0) return cudaSuccess;
  }
  cudaError_t err =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, elementwise_kernel<S, Fn>, kThreads, 0);
  if (err != cudaSuccess) return err;
  if (*blocks < 1) *blocks = 1;
  if (device >= 0 && device < kCachedDevices) cache[device].store(*blocks, std::memory_order_relaxed);
  return cudaSuccess;
}

template <class S, class Fn>
plx_result_t launch(const char* function, const Layout& l, const Fn& fn, void* stream) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return cuda_failure(function, "cudaGetDevice", err);
  int sms = 0;
  err = sm_count(device, &sms);
  if (err != cudaSuccess) return cuda_failure(function, "cudaDeviceGetAttribute", err);
  int per_sm = 0;
  err = blocks_per_sm<S, Fn>(device, &per_sm);
  if (err != cudaSuccess) {
    return cuda_failure(function, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", err);
  }
  // Enough blocks for one pack (or scalar) per thread, at most one resident wave.
  const size_t nscalar = l.count - l.npacks * (kPackBytes / sizeof(S));
  const size_t units = l.npacks > nscalar ? l.npacks : nscalar;
  const size_t wanted = (units + kThreads - 1) / kThreads;
  const size_t wave = static_cast<size_t>(sms) * static_cast<size_t>(per_sm);
  const unsigned grid = static_cast<unsigned>(wanted < wave ? wanted : wave);  // <= 2^31 - 1
  elementwise_kernel<S, Fn>
      <<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(l, fn);
  err = cudaGetLastError();
  if (err != cudaSuccess) return cuda_failure(function, "kernel launch", err);
  return PLX_SUCCESS;
}

plx_result_t check_datatype(const char* function, plx_datatype_t datatype) {
  if (static_cast<unsigned>(datatype) >= PLX_NUM_DATATYPES) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": datatype " +
                         std::to_string(static_cast<int>(datatype)) + " not in 0.." +
                         std::to_string(PLX_NUM_DATATYPES - 1));
  }
  return PLX_SUCCESS;
}

plx_result_t check_pointer(const char* function, const char* name, const void* ptr, size_t count,
                           plx_datatype_t datatype) {
  if (ptr == nullptr) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + name +
                                                     " is null with count " +
                                                     std::to_string(count));
  }
  const size_t bytes = datatype_bytes(datatype);
  if (reinterpret_cast<uintptr_t>(ptr) % bytes != 0) {
    char address[32];
    snprintf(address, sizeof(address), "%p", ptr);
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": " + name + " " + address +
                         " is not aligned to the " + std::to_string(bytes) + "-byte elements of " +
                         datatype_name(datatype));
  }
  return PLX_SUCCESS;
}

// Splits [0, count) into scalar head, packs and scalar tail (see Layout).
Layout make_layout(void* dst, const void* const* sources, int nsources, size_t count,
                   size_t elem_bytes) {
  Layout l{};
  l.dst = dst;
  l.nsrc = nsources;
  l.count = count;
  const uintptr_t offset = reinterpret_cast<uintptr_t>(dst) % kPackBytes;
  bool same_offset = true;
  for (int s = 0; s < nsources; ++s) {
    l.src[s] = sources[s];
    same_offset = same_offset && reinterpret_cast<uintptr_t>(sources[s]) % kPackBytes == offset;
  }
  if (same_offset) {
    const size_t head = (kPackBytes - offset) % kPackBytes / elem_bytes;
    l.head = head < count ? head : count;
    l.npacks = (count - l.head) / (kPackBytes / elem_bytes);
  } else {
    l.head = count;
    l.npacks = 0;
  }
  return l;
}

template <class Conv>
plx_result_t launch_reduce(const char* function, const Layout& l, plx_red_op_t op, void* stream) {
  using S = typename Conv::Stored;
  switch (op) {
    case PLX_SUM:
    case PLX_AVG: return launch<S>(function, l, Reducer<Conv, Sum>{}, stream);
    case PLX_PROD: return launch<S>(function, l, Reducer<Conv, Prod>{}, stream);
    case PLX_MIN: return launch<S>(function, l, Reducer<Conv, Min>{}, stream);
    case PLX_MAX: return launch<S>(function, l, Reducer<Conv, Max>{}, stream);
    default: return PLX_ERROR_INTERNAL;  // checked by the caller
  }
}

template <class Conv>
plx_result_t launch_divide(const char* function, const Layout& l, size_t divisor, void* stream) {
  using D = Divider<Conv>;
  return launch<typename Conv::Stored>(function, l, D{static_cast<typename D::Quotient>(divisor)},
                                       stream);
}

template <class Conv>
plx_result_t launch_scale(const char* function, const Layout& l, const void* scalar,
                          void* stream) {
  using S = typename Conv::Stored;
  Scaler<Conv> scaler{};
  memcpy(&scaler.scalar, scalar, sizeof(S));
  return launch<S>(function, l, scaler, stream);
}

// One case per datatype, calling fn<Conv>(args...).
#define PLX_BY_DATATYPE(datatype, fn, ...)                               \
  switch (datatype) {                                                    \
    case PLX_INT8: return fn<Native<int8_t>>(__VA_ARGS__);               \
    case PLX_UINT8: return fn<Native<uint8_t>>(__VA_ARGS__);             \
    case PLX_INT32: return fn<Native<int32_t>>(__VA_ARGS__);             \
    case PLX_UINT32: return fn<Native<uint32_t>>(__VA_ARGS__);           \
    case PLX_INT64: return fn<Native<int64_t>>(__VA_ARGS__);             \
    case PLX_UINT64: return fn<Native<uint64_t>>(__VA_ARGS__);           \
    case PLX_FLOAT16: return fn<Float16>(__VA_ARGS__);                   \
    case PLX_BFLOAT16: return fn<BFloat16>(__VA_ARGS__);                 \
    case PLX_FLOAT32: return fn<Native<float>>(__VA_ARGS__);             \
    case PLX_FLOAT64: return fn<Native<double>>(__VA_ARGS__);            \
    default: return PLX_ERROR_INTERNAL; /* checked by the caller */      \
  }

// reduce_sources and reduce_copy, with the public name for messages.
plx_result_t reduce(const char* function, void* dst, const void* const* sources, int nsources,
                    size_t count, plx_datatype_t datatype, plx_red_op_t op, void* stream) {
  PLX_CHECK(check_datatype(function, datatype));
  if (static_cast<unsigned>(op) >= PLX_NUM_OPS) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": op " + std::to_string(static_cast<int>(op)) +
                         " not in 0.." + std::to_string(PLX_NUM_OPS - 1) +
                         " (pre-multiplied sums run scale_by, then PLX_SUM)");
  }
  if (nsources < 1 || nsources > kMaxReduceSources) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": nsources " + std::to_string(nsources) +
                         " not in 1.." + std::to_string(kMaxReduceSources));
  }
  if (count == 0) return PLX_SUCCESS;
  if (sources == nullptr) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": sources is null with count " +
                         std::to_string(count));
  }
  PLX_CHECK(check_pointer(function, "dst", dst, count, datatype));
  for (int s = 0; s < nsources; ++s) {
    const std::string name = "sources[" + std::to_string(s) + "]";
    PLX_CHECK(check_pointer(function, name.c_str(), sources[s], count, datatype));
  }
  const Layout l = make_layout(dst, sources, nsources, count, datatype_bytes(datatype));
  PLX_BY_DATATYPE(datatype, launch_reduce, function, l, op, stream)
}

}  // namespace

plx_result_t reduce_sources(void* dst, const void* const* sources, int nsources, size_t count,
                            plx_datatype_t datatype, plx_red_op_t op, void* stream) {
  return reduce("device::reduce_sources", dst, sources, nsources, count, datatype, op, stream);
}

plx_result_t reduce_copy(void* dst, const void* a, const void* b, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, void* stream) {
  const void* sources[2] = {a, b};
  return reduce("device::reduce_copy", dst, sources, 2, count, datatype, op, stream);
}

plx_result_t divide_by(void* buf, size_t count, plx_datatype_t datatype, size_t divisor,
                       void* stream) {
  const char* function = "device::divide_by";
  PLX_CHECK(check_datatype(function, datatype));
  if (divisor == 0) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     std::string(function) + ": divisor 0 not in 1..SIZE_MAX");
  }
  if (count == 0 || divisor == 1) return PLX_SUCCESS;  // x / 1 == x for every type
  PLX_CHECK(check_pointer(function, "buf", buf, count, datatype));
  const void* sources[1] = {buf};
  const Layout l = make_layout(buf, sources, 1, count, datatype_bytes(datatype));
  PLX_BY_DATATYPE(datatype, launch_divide, function, l, divisor, stream)
}

plx_result_t scale_by(void* dst, const void* src, size_t count, plx_datatype_t datatype,
                      const void* scalar, void* stream) {
  const char* function = "device::scale_by";
  PLX_CHECK(check_datatype(function, datatype));
  if (scalar == nullptr) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, std::string(function) + ": scalar is null");
  }
  if (count == 0) return PLX_SUCCESS;
  PLX_CHECK(check_pointer(function, "dst", dst, count, datatype));
  PLX_CHECK(check_pointer(function, "src", src, count, datatype));
  const void* sources[1] = {src};
  const Layout l = make_layout(dst, sources, 1, count, datatype_bytes(datatype));
  PLX_BY_DATATYPE(datatype, launch_scale, function, l, scalar, stream)
}

}  // namespace plexus::comm::device
