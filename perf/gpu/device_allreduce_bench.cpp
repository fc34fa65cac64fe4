// plexus-gpu-allreduce - plx_allreduce (or -c reduce_scatter, allgather) on device buffers, one
// rank per process, ranks sharing the GPUs of one host (issue 6): on one host with peer memory it
// runs through CUDA IPC (comm/device/ipc_collective.cpp); with PLEXUS_SHM=0, through pinned host
// staging.
//
//   plexus-run -n 4 -- plexus-gpu-allreduce [-b 1M] [-e 256M] [-n 20] [-w 5] [-d float32]
//                                           [-o sum] [-c allreduce] [--device-per-rank]
//
// Sizes are nccl-tests': the bytes of the whole vector (allreduce), of sendbuf (reduce_scatter)
// or of recvbuf (allgather); a rank's block is size / n.
// Every rank uses device 0 (or device local_rank % count with --device-per-rank). For each size
// from -b to -e (doubling): the input written on the stream, -w warmup calls, -n timed calls
// (each returns once the result is in place, so the wall time of the loop is the time), then one
// more call whose result is copied back and checked element by element against the closed form
// (rank r's element i of sendbuf is (r + i) % 7, so sums are exact in every datatype for up to
// 16 ranks). Rank 0 prints nccl-tests-style rows, with times the maximum over ranks:
//   algbw = size / time,  busbw = algbw * 2 (n - 1) / n for allreduce, algbw * (n - 1) / n for
//   reduce_scatter and allgather   (1 GB = 10^9 bytes)
// Exit codes: 0 when every check passed, 1 a wrong element or a failed call, 2 bad usage.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/reduce/half.h"
#include "perf/harness/options.h"
#include "plexus/plexus.h"

namespace {

struct Options {
  std::string min_size = "1M";
  std::string max_size = "256M";
  int iters = 20;
  int warmup = 5;
  std::string datatype = "float32";
  std::string op = "sum";
  std::string collective = "allreduce";
  bool device_per_rank = false;
};

size_t parse_size(const std::string& text) {
  return plexus::bench::parse_bytes(text).value_or(0);  // the parser plexus-bench uses
}

// The element `v` (a small integer) of datatype, stored at p.
void encode(plx_datatype_t datatype, double v, unsigned char* p) {
  const auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (datatype) {
    case PLX_FLOAT16: return put(plexus::comm::float_to_half(static_cast<float>(v)));
    case PLX_BFLOAT16: return put(plexus::comm::float_to_bf16(static_cast<float>(v)));
    case PLX_FLOAT64: return put(v);
    case PLX_INT32: return put(static_cast<int32_t>(v));
    default: return put(static_cast<float>(v));
  }
}

struct Failure {
  std::string what;
};

void check(plx_result_t rc, const char* call) {
  if (rc != PLX_SUCCESS) {
    throw Failure{fmt::format("{}: {}: {}", call, plx_get_error_string(rc),
                              plx_get_last_error(nullptr))};
  }
}
void check_cuda(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw Failure{fmt::format("{}: {}", call, cudaGetErrorName(err))};
}

double max_over_ranks(double value, plx_comm_t comm) {
  check(plx_allreduce(&value, &value, 1, PLX_FLOAT64, PLX_MAX, comm, nullptr), "plx_allreduce");
  return value;
}

int run(const Options& o, plx_datatype_t datatype, plx_red_op_t op) {
  plx_comm_t comm = nullptr;
  check(plx_comm_init_from_env(&comm), "plx_comm_init_from_env");
  int rank = 0, n = 1, local_rank = 0, devices = 0;
  plx_comm_rank(comm, &rank);
  plx_comm_size(comm, &n);
  plx_comm_local_rank(comm, &local_rank);
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  check_cuda(cudaSetDevice(o.device_per_rank ? local_rank % devices : 0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t elem = plx_datatype_size(datatype);
  const size_t max_bytes = parse_size(o.max_size);
  void* send = nullptr;
  void* recv = nullptr;
  check_cuda(cudaMalloc(&send, max_bytes), "cudaMalloc");
  check_cuda(cudaMalloc(&recv, max_bytes), "cudaMalloc");
  if (rank == 0) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    fmt::print("# plexus-gpu-allreduce: {}, {} ranks, {}, device buffers, GPU {}\n",
               o.collective, n,
               o.device_per_rank ? "one device per local rank" : "all on device 0", prop.name);
    fmt::print("# {:>12} {:>12} {:>8} {:>6} {:>10} {:>8} {:>8} {:>7}  {}\n", "size", "count",
               "type", "redop", "time(us)", "algbw", "busbw", "#wrong", "algorithm");
  }
  const bool scatter = o.collective == "reduce_scatter", gather = o.collective == "allgather";
  const auto call = [&](size_t count) {
    const size_t block = count / static_cast<size_t>(n);
    if (scatter) {
      check(plx_reduce_scatter(send, recv, block, datatype, op, comm, stream),
            "plx_reduce_scatter");
    } else if (gather) {
      check(plx_allgather(send, recv, block, datatype, comm, stream), "plx_allgather");
    } else {
      check(plx_allreduce(send, recv, count, datatype, op, comm, stream), "plx_allreduce");
    }
  };
  // The sum (or max) over the ranks of element j of their inputs.
  const auto reduced = [&](size_t j) {
    double want = 0;
    for (int q = 0; q < n; ++q) {
      const double v = static_cast<double>((static_cast<size_t>(q) + j) % 7);
      want = q == 0 ? v : op == PLX_MAX ? std::max(want, v) : want + v;
    }
    return want;
  };
  int64_t total_wrong = 0;
  for (size_t bytes = parse_size(o.min_size); bytes <= max_bytes; bytes *= 2) {
    // count: the whole vector; reduce_scatter and allgather use blocks of count / n.
    const size_t count = (scatter || gather) ? bytes / elem / static_cast<size_t>(n) *
                                                   static_cast<size_t>(n)
                                             : bytes / elem;
    const size_t block = count / static_cast<size_t>(n);
    const size_t in_count = gather ? block : count, out_count = scatter ? block : count;
    std::vector<unsigned char> input(in_count * elem), expected(out_count * elem),
        got(out_count * elem);
    for (size_t i = 0; i < in_count; ++i) {
      encode(datatype, static_cast<double>((static_cast<size_t>(rank) + i) % 7),
             &input[i * elem]);
    }
    for (size_t i = 0; i < out_count; ++i) {
      const double want =
          scatter  ? reduced(static_cast<size_t>(rank) * block + i)
          : gather ? static_cast<double>((i / block + i % block) % 7)
                   : reduced(i);
      encode(datatype, want, &expected[i * elem]);
    }
    check_cuda(cudaMemcpyAsync(send, input.data(), in_count * elem, cudaMemcpyHostToDevice,
                               stream),
               "cudaMemcpyAsync");
    for (int i = 0; i < o.warmup; ++i) call(count);
    check(plx_barrier(comm), "plx_barrier");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) call(count);
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    const char* algorithm = "";
    plx_comm_last_algorithm(comm, &algorithm);
    const std::string algorithm_name = algorithm;
    check_cuda(cudaMemsetAsync(recv, 0xee, out_count * elem, stream), "cudaMemsetAsync");
    call(count);
    check_cuda(cudaMemcpyAsync(got.data(), recv, out_count * elem, cudaMemcpyDeviceToHost,
                               stream),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    int64_t wrong = 0;
    for (size_t i = 0; i < out_count; ++i) {
      wrong += std::memcmp(&got[i * elem], &expected[i * elem], elem) != 0 ? 1 : 0;
    }
    check(plx_allreduce(&wrong, &wrong, 1, PLX_INT64, PLX_SUM, comm, nullptr), "plx_allreduce");
    total_wrong += wrong;
    const double time_us = max_over_ranks(elapsed.count() / o.iters, comm);
    const double algbw = static_cast<double>(bytes) / (time_us * 1e3);
    const double busbw = algbw * ((scatter || gather) ? 1.0 : 2.0) * (n - 1) / n;
    if (rank == 0) {
      fmt::print("  {:>12} {:>12} {:>8} {:>6} {:>10.1f} {:>8.2f} {:>8.2f} {:>7}  {}\n", bytes,
                 count, o.datatype, o.op, time_us, algbw, busbw, wrong, algorithm_name);
      std::fflush(stdout);
    }
  }
  if (rank == 0) fmt::print("# out of bounds values: {} {}\n", total_wrong, total_wrong ? "FAILED" : "OK");
  cudaFree(send);
  cudaFree(recv);
  cudaStreamDestroy(stream);
  check(plx_comm_destroy(comm), "plx_comm_destroy");
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"plx_allreduce on device buffers (CUDA IPC on one host)"};
  app.add_option("-b,--minbytes", o.min_size, "smallest message (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", o.max_size, "largest message");
  app.add_option("-n,--iters", o.iters, "timed calls per size")->check(CLI::Range(1, 100000));
  app.add_option("-w,--warmup_iters", o.warmup, "untimed calls first")->check(CLI::Range(0, 1000));
  app.add_option("-d,--datatype", o.datatype, "float32, float16, bfloat16, float64 or int32")
      ->check(CLI::IsMember({"float32", "float16", "bfloat16", "float64", "int32"}));
  app.add_option("-o,--op", o.op, "sum or max")->check(CLI::IsMember({"sum", "max"}));
  app.add_option("-c,--collective", o.collective, "allreduce, reduce_scatter or allgather")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather"}));
  app.add_flag("--device-per-rank", o.device_per_rank, "rank uses device local_rank % count");
  CLI11_PARSE(app, argc, argv);
  const size_t min_bytes = parse_size(o.min_size), max_bytes = parse_size(o.max_size);
  if (min_bytes == 0 || max_bytes < min_bytes) {
    fmt::print(stderr, "plexus-gpu-allreduce: bad sizes -b {} -e {}\n", o.min_size, o.max_size);
    return 2;
  }
  const plx_datatype_t datatype = o.datatype == "float16"    ? PLX_FLOAT16
                                  : o.datatype == "bfloat16" ? PLX_BFLOAT16
                                  : o.datatype == "float64"  ? PLX_FLOAT64
                                  : o.datatype == "int32"    ? PLX_INT32
                                                             : PLX_FLOAT32;
  int devices = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&devices); err != cudaSuccess || devices == 0) {
    // Exit 2, not 1 (a wrong element): there is nothing to measure here.
    fmt::print(stderr, "plexus-gpu-allreduce: no CUDA device: cudaGetDeviceCount: {}\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 2;
  }
  try {
    return run(o, datatype, o.op == "max" ? PLX_MAX : PLX_SUM);
  } catch (const Failure& f) {
    fmt::print(stderr, "plexus-gpu-allreduce: {}\n", f.what);
    return 1;
  }
}
