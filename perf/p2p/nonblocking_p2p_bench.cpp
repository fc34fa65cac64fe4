// plexus-p2p-bench - bandwidth of non-blocking point-to-point messages: two ranks exchange one
// message each way with plx_irecv + plx_isend, then plx_wait on both, so the communicator's
// progress thread drives the transfer (comm/core/executor.h: parked requests) rather than the
// caller's blocking wait. perf/ofi-progress.sh compares its figures across wait loops.
//
//   plexus-run -n 2 -- plexus-p2p-bench [--sizes 16M,32M,64M] [--iters 10] [--warmup 2]
//
// Rank 0 prints one row per size: "<bytes> <MB/s>", the bytes of one message over the best
// timed exchange (as nccl-tests' sendrecv algbw), after checking every byte received. A figure
// to read, never a pass/fail. Exit codes: 0 done, 1 a failed Plexus call or a wrong byte (named),
// 2 bad usage (not 2 ranks, a bad size).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace {

int fail(int rank, const char* call) {
  std::fprintf(stderr, "plexus-p2p-bench: rank %d: %s: %s\n", rank, call,
               plx_get_last_error(nullptr));
  return 1;
}

// "16M", "64K", "1G" or a number of bytes.
bool parse_size(const std::string& text, size_t* out) {
  size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (...) {
    return false;
  }
  const std::string suffix = text.substr(used);
  const unsigned shift = suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : 0;
  if (!suffix.empty() && shift == 0) return false;
  if (value == 0 || value > (uint64_t{1} << 34) >> shift) return false;  // 1 B .. 16 GiB
  *out = static_cast<size_t>(value << shift);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> size_texts{"16M", "32M", "64M"};
  int iters = 10;
  int warmup = 2;
  CLI::App app{"plexus-p2p-bench: bandwidth of plx_isend/plx_irecv between 2 ranks"};
  app.add_option("--sizes", size_texts, "message sizes (K/M/G suffixes)")->delimiter(',');
  app.add_option("--iters", iters, "timed exchanges per size")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed exchanges first")->check(CLI::Range(0, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<size_t> sizes;
  for (const std::string& text : size_texts) {
    size_t bytes = 0;
    if (!parse_size(text, &bytes)) {
      std::fprintf(stderr, "plexus-p2p-bench: --sizes: '%s' is not a size of 1 B..16 GiB\n",
                   text.c_str());
      return 2;
    }
    sizes.push_back(bytes);
  }

  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) return fail(-1, "plx_comm_init_from_env");
  int rank = 0, size = 0;
  plx_comm_rank(comm, &rank);
  plx_comm_size(comm, &size);
  if (size != 2) {
    std::fprintf(stderr, "plexus-p2p-bench: rank %d: needs 2 ranks, has %d\n", rank, size);
    plx_comm_destroy(comm);
    return 2;
  }
  const int peer = 1 - rank;
  const size_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<uint8_t> send(largest), recv(largest);
  for (size_t i = 0; i < largest; ++i) send[i] = static_cast<uint8_t>(i * 7 + rank);

  for (size_t bytes : sizes) {
    double best = 1e30;
    for (int it = 0; it < warmup + iters; ++it) {
      std::fill(recv.begin(), recv.begin() + static_cast<std::ptrdiff_t>(bytes), uint8_t{0});
      if (plx_barrier(comm) != PLX_SUCCESS) return fail(rank, "plx_barrier");
      const auto start = std::chrono::steady_clock::now();
      plx_request_t requests[2] = {nullptr, nullptr};
      if (plx_irecv(recv.data(), bytes, PLX_UINT8, peer, comm, &requests[0]) != PLX_SUCCESS) {
        return fail(rank, "plx_irecv");
      }
      if (plx_isend(send.data(), bytes, PLX_UINT8, peer, comm, &requests[1]) != PLX_SUCCESS) {
        return fail(rank, "plx_isend");
      }
      if (plx_wait(requests[0]) != PLX_SUCCESS || plx_wait(requests[1]) != PLX_SUCCESS) {
        return fail(rank, "plx_wait");
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (it >= warmup) best = std::min(best, seconds);
      for (size_t i = 0; i < bytes; ++i) {
        if (recv[i] != static_cast<uint8_t>(i * 7 + peer)) {
          std::fprintf(stderr, "plexus-p2p-bench: rank %d: %zu bytes: byte %zu is %u, want %u\n",
                       rank, bytes, i, recv[i], static_cast<uint8_t>(i * 7 + peer));
          return 1;
        }
      }
    }
    if (rank == 0) std::printf("%zu %.0f\n", bytes, static_cast<double>(bytes) / best / 1e6);
    std::fflush(stdout);
  }
  plx_comm_destroy(comm);
  return 0;
}
