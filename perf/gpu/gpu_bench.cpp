// plexus-gpu-bench - the GPU reduction kernel's bandwidth beside the device's own copy bandwidth.
//
//   plexus-gpu-bench [-b 16M] [-e 1G] [-n 20] [-w 3] [-d float32,bfloat16,float16] [--device 0]
//
// For each datatype and each size from -b to -e (doubling), it times dst = a + b
// (comm::device::reduce_copy, PLX_SUM) and cudaMemcpyAsync(dst, a, size, device to device) on one
// stream, each launch between two cudaEvents, and prints the median of -n runs after -w warmups:
//   reduce GB/s = 3 x size / time  (two buffers read, one written)
//   copy GB/s   = 2 x size / time  (one read, one written)
//   ratio       = reduce GB/s / copy GB/s   (issue 6 asks for >= 85%)
// 1 GB = 10^9 bytes. Before timing a size it checks every element of one reduction against the
// CPU kernel (comm/reduce/reduce.h). Exit codes: 0 measured, 1 a wrong element or a failed
// CUDA/Plexus call, 2 bad usage or no GPU (the message says why).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "comm/base/error.h"
#include "comm/device/device_reduce.h"
#include "comm/reduce/reduce.h"
#include "perf/harness/options.h"

namespace {

struct Options {
  std::string min_size = "16M";
  std::string max_size = "1G";
  int iters = 20;
  int warmup = 3;
  std::vector<std::string> datatypes = {"float32", "bfloat16", "float16"};
  int device = 0;
};

// "16M" -> 16 << 20 (K, M, G are powers of 2^10; lower case too); 0 on a malformed size.
size_t parse_size(const std::string& text) {
  return plexus::bench::parse_bytes(text).value_or(0);  // the parser plexus-bench uses
}

const char* datatype_name(plx_datatype_t datatype) {
  return datatype == PLX_FLOAT32 ? "float32" : datatype == PLX_BFLOAT16 ? "bfloat16" : "float16";
}

bool datatype_from_name(const std::string& name, plx_datatype_t* datatype) {
  if (name == "float32") *datatype = PLX_FLOAT32;
  else if (name == "bfloat16") *datatype = PLX_BFLOAT16;
  else if (name == "float16") *datatype = PLX_FLOAT16;
  else return false;
  return true;
}

#define BENCH_CUDA(expr)                                                                  \
  do {                                                                                    \
    const cudaError_t bench_err_ = (expr);                                                \
    if (bench_err_ != cudaSuccess) {                                                      \
      fmt::print(stderr, "plexus-gpu-bench: {}: {}: {}\n", #expr, cudaGetErrorName(bench_err_), \
                 cudaGetErrorString(bench_err_));                                         \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

// Median time in microseconds of `iters` runs of `op` on `stream`, each between two events.
template <class Op>
int time_median_us(cudaStream_t stream, int warmup, int iters, Op op, double* median_us) {
  cudaEvent_t start = nullptr, stop = nullptr;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  std::vector<double> us;
  int rc = 0;
  for (int i = 0; i < warmup + iters && rc == 0; ++i) {
    if (cudaEventRecord(start, stream) != cudaSuccess || !op() ||
        cudaEventRecord(stop, stream) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess) {
      rc = 1;
      break;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) rc = 1;
    if (i >= warmup) us.push_back(ms * 1000.0);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (rc != 0 || us.empty()) {
    fmt::print(stderr, "plexus-gpu-bench: timing failed: {}\n",
               cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  std::sort(us.begin(), us.end());
  *median_us = us[us.size() / 2];
  return 0;
}

// Every element of dst (count elements, all from the same a and b pattern) must equal the CPU
// kernel's a + b.
int check(const uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t count,
          plx_datatype_t datatype) {
  const size_t bytes = plexus::comm::datatype_bytes(datatype);
  std::vector<uint8_t> ha(bytes), hb(bytes), want(bytes);
  BENCH_CUDA(cudaMemcpy(ha.data(), a, bytes, cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(hb.data(), b, bytes, cudaMemcpyDeviceToHost));
  plexus::comm::reduce_copy(want.data(), ha.data(), hb.data(), 1, datatype, PLX_SUM);
  const size_t chunk_elems = (size_t{64} << 20) / bytes;
  std::vector<uint8_t> expected(chunk_elems * bytes), got(chunk_elems * bytes);
  for (size_t i = 0; i < chunk_elems; ++i) std::memcpy(&expected[i * bytes], want.data(), bytes);
  for (size_t begin = 0; begin < count; begin += chunk_elems) {
    const size_t n = std::min(chunk_elems, count - begin);
    BENCH_CUDA(cudaMemcpy(got.data(), dst + begin * bytes, n * bytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), expected.data(), n * bytes) == 0) continue;
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(&got[i * bytes], want.data(), bytes) != 0) {
        fmt::print(stderr, "plexus-gpu-bench: {} element {} of {} is wrong\n",
                   datatype_name(datatype), begin + i, count);
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"plexus-gpu-bench: GPU reduction kernel bandwidth vs device-to-device copy"};
  app.add_option("-b,--minbytes", o.min_size, "smallest buffer size (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", o.max_size, "largest buffer size");
  app.add_option("-n,--iters", o.iters, "timed iterations per size (median)")->check(CLI::Range(1, 10000));
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations first")->check(CLI::Range(0, 1000));
  app.add_option("-d,--datatype", o.datatypes, "float32, bfloat16, float16")->delimiter(',');
  app.add_option("--device", o.device, "CUDA device ordinal");
  CLI11_PARSE(app, argc, argv);
  const size_t min_bytes = parse_size(o.min_size), max_bytes = parse_size(o.max_size);
  if (min_bytes < 16 || max_bytes < min_bytes) {
    fmt::print(stderr, "plexus-gpu-bench: sizes -b {} -e {}: need 16 <= min <= max\n",
               o.min_size, o.max_size);
    return 2;
  }
  std::vector<plx_datatype_t> datatypes;
  for (const std::string& name : o.datatypes) {
    plx_datatype_t dt;
    if (!datatype_from_name(name, &dt)) {
      fmt::print(stderr, "plexus-gpu-bench: datatype {} not one of float32, bfloat16, float16\n",
                 name);
      return 2;
    }
    datatypes.push_back(dt);
  }

  int devices = 0;
  const cudaError_t count_err = cudaGetDeviceCount(&devices);
  if (count_err != cudaSuccess || devices == 0) {
    fmt::print(stderr, "plexus-gpu-bench: no CUDA device: cudaGetDeviceCount: {}\n",
               count_err != cudaSuccess
                   ? std::string(cudaGetErrorName(count_err)) + ": " + cudaGetErrorString(count_err)
                   : std::string("0 devices visible"));
    return 2;
  }
  if (o.device < 0 || o.device >= devices) {
    fmt::print(stderr, "plexus-gpu-bench: --device {} not in 0..{}\n", o.device, devices - 1);
    return 2;
  }
  BENCH_CUDA(cudaSetDevice(o.device));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, o.device));

  uint8_t *a = nullptr, *b = nullptr, *dst = nullptr;
  BENCH_CUDA(cudaMalloc(&a, max_bytes));
  BENCH_CUDA(cudaMalloc(&b, max_bytes));
  BENCH_CUDA(cudaMalloc(&dst, max_bytes));
  BENCH_CUDA(cudaMemset(a, 0x3c, max_bytes));  // f32 ~0.0115, bf16 ~0.0115, f16 ~1.06
  BENCH_CUDA(cudaMemset(b, 0x41, max_bytes));  // f32 ~12.1, bf16 ~12.1, f16 ~2.63
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  BENCH_CUDA(cudaDeviceSynchronize());

  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  fmt::print("# plexus-gpu-bench {}  device {}: {} ({} SMs, {} MiB)\n", when, o.device, prop.name,
             prop.multiProcessorCount, prop.totalGlobalMem >> 20);
  fmt::print("# reduce: dst = a + b (device::reduce_copy), 3 x size bytes; copy: cudaMemcpyAsync "
             "device to device, 2 x size bytes; median of {} after {} warmups; GB = 1e9 bytes\n",
             o.iters, o.warmup);
  fmt::print("# {:>8} {:>10} {:>11} {:>12} {:>10} {:>10} {:>7}\n", "type", "size(MiB)",
             "reduce(us)", "reduce(GB/s)", "copy(us)", "copy(GB/s)", "ratio");
  double worst_ratio = 1e9;
  for (plx_datatype_t dt : datatypes) {
    const size_t elem = plexus::comm::datatype_bytes(dt);
    for (size_t size = min_bytes; size <= max_bytes; size *= 2) {
      const size_t count = size / elem;
      auto reduce = [&] {
        return plexus::comm::device::reduce_copy(dst, a, b, count, dt, PLX_SUM, stream) ==
               PLX_SUCCESS;
      };
      auto copy = [&] {
        return cudaMemcpyAsync(dst, a, count * elem, cudaMemcpyDeviceToDevice, stream) ==
               cudaSuccess;
      };
      BENCH_CUDA(cudaMemsetAsync(dst, 0, count * elem, stream));  // ordered before the check
      if (!reduce()) {
        fmt::print(stderr, "plexus-gpu-bench: {}\n", plexus::last_error());
        return 1;
      }
      BENCH_CUDA(cudaStreamSynchronize(stream));
      if (check(dst, a, b, count, dt) != 0) return 1;
      double reduce_us = 0, copy_us = 0;
      if (time_median_us(stream, o.warmup, o.iters, reduce, &reduce_us) != 0) return 1;
      if (time_median_us(stream, o.warmup, o.iters, copy, &copy_us) != 0) return 1;
      const double bytes = static_cast<double>(count * elem);
      const double reduce_gbs = 3 * bytes / (reduce_us * 1e3);
      const double copy_gbs = 2 * bytes / (copy_us * 1e3);
      const double ratio = reduce_gbs / copy_gbs;
      worst_ratio = std::min(worst_ratio, ratio);
      fmt::print("  {:>8} {:>10} {:>11.1f} {:>12.1f} {:>10.1f} {:>10.1f} {:>6.1f}%\n",
                 datatype_name(dt), size >> 20, reduce_us, reduce_gbs, copy_us, copy_gbs, 100 * ratio);
    }
  }
  fmt::print("# lowest reduce/copy ratio: {:.1f}% (issue 6 target: >= 85%)\n", 100 * worst_ratio);
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(dst);
  return 0;
}
