// stream_bound.cpp - the memory-bandwidth bound of this machine, measured STREAM-style
// (McCalpin's STREAM: copy c = a and triad a = b + s * c over arrays far larger than the caches,
// best of K passes, bytes counted as STREAM does: 16 per element for copy, 24 for triad), with
// 1 and with T threads on disjoint slices, as perf/compare.sh needs it.
//
//   stream_bound [-t 1,2,4] [-m 256] [-k 10]
//   # threads  copy_GBs  triad_GBs
//           1     12.34      13.21
//
// What it bounds: on one host every byte a rank sends is at least one memory copy (read at the
// source, write at the destination: 2 bytes of traffic, as STREAM counts copy), so n ranks that
// each move busbw bytes per second need 2 * n * busbw <= copy bandwidth with n threads. compare.sh
// prints busbw_bound = copy_GBs(n) / (2 n) beside the measured busbw (a single-copy bound: a
// transport that stages through a bounce buffer copies twice, and reductions add traffic).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

// One pass of `kernel` over [0, n) split across `threads` threads; returns seconds.
template <typename Kernel>
double timed_pass(size_t n, int threads, Kernel kernel) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const size_t begin = n * t / threads, end = n * (t + 1) / threads;
    pool.emplace_back([=] { kernel(begin, end); });
  }
  for (std::thread& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<int> parse_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    long v = std::strtol(p, &end, 10);
    if (end == p || v < 1 || v > 1024) return {};
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end != ',' && *end != '\0') return {};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> thread_counts{1, static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};
  size_t array_mib = 256;
  int passes = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-t") {
      thread_counts = parse_list(argv[i + 1]);
    } else if (flag == "-m") {
      array_mib = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (flag == "-k") {
      passes = std::atoi(argv[i + 1]);
    } else {
      thread_counts.clear();
    }
  }
  if (thread_counts.empty() || array_mib < 1 || passes < 1 || argc % 2 == 0) {
    std::fprintf(stderr, "usage: stream_bound [-t 1,2,4] [-m ARRAY_MiB=256] [-k PASSES=10]\n");
    return 2;
  }
  const size_t n = array_mib * (1u << 20) / sizeof(double);
  std::vector<double> a(n), b(n), c(n);
  // First touch in parallel, as STREAM does, so pages spread over the threads' memory.
  timed_pass(n, thread_counts.back(), [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;
  });
  std::printf("# stream_bound: 3 arrays of %zu doubles (%zu MiB each), best of %d passes\n", n,
              array_mib, passes);
  std::printf("# %7s  %8s  %9s\n", "threads", "copy_GBs", "triad_GBs");
  const double scalar = 3.0;
  for (int threads : thread_counts) {
    double best_copy = 1e30, best_triad = 1e30;
    for (int k = 0; k < passes; ++k) {
      best_copy = std::min(best_copy, timed_pass(n, threads, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) c[i] = a[i];
      }));
      best_triad = std::min(best_triad, timed_pass(n, threads, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) a[i] = b[i] + scalar * c[i];
      }));
    }
    std::printf("  %7d  %8.2f  %9.2f\n", threads, 16.0 * n / best_copy / 1e9,
                24.0 * n / best_triad / 1e9);
  }
  // Keep the arrays observable so the compiler cannot drop the kernels.
  return a[n / 2] + c[n / 3] < 0 ? 1 : 0;
}
