// peer_harness.cpp - the command line, the collectives' layouts, the timed loop and the table of
// the peer benchmarks (see peer_harness.h). Standard C++ only, so each peer builds with nothing
// but its own library.
#include "perf/peers/peer_harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace plexus::peers {
namespace {

struct CollInfo {
  Coll coll;
  const char* name;
  bool reduces;
  bool rooted;
  bool per_rank_count;  // the count column is per rank (nccl-tests' count / nranks)
};

constexpr CollInfo kColls[] = {
    {Coll::kAllreduce, "allreduce", true, false, false},
    {Coll::kBroadcast, "broadcast", false, true, false},
    {Coll::kReduce, "reduce", true, true, false},
    {Coll::kAllgather, "allgather", false, false, true},
    {Coll::kReduceScatter, "reduce_scatter", true, false, true},
    {Coll::kAlltoall, "alltoall", false, false, true},
    {Coll::kGather, "gather", false, true, true},
    {Coll::kScatter, "scatter", false, true, true},
};

const CollInfo& info(Coll coll) {
  for (const CollInfo& c : kColls) {
    if (c.coll == coll) return c;
  }
  return kColls[0];
}

// busbw / algbw, as plexus-bench and nccl-tests doc/PERFORMANCE.md.
double bus_factor(Coll coll, int n) {
  switch (coll) {
    case Coll::kAllreduce: return 2.0 * (n - 1) / n;
    case Coll::kBroadcast:
    case Coll::kReduce: return 1.0;
    default: return static_cast<double>(n - 1) / n;
  }
}

// plexus-bench's pattern_value: small integers, so float32 sums are exact.
float value(int rank, size_t i, int nranks) {
  const size_t m = std::clamp<size_t>(240 / static_cast<size_t>(std::max(1, nranks)), 2, 11);
  return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 5) % m);
}

// Buffer sizes (elements) and contents of one row, for rank `rank` of n, count column c.
struct Layout {
  size_t send = 0, recv = 0;
};

Layout layout(Coll coll, size_t c, int n) {
  const size_t all = c * static_cast<size_t>(n);
  switch (coll) {
    case Coll::kAllgather:
    case Coll::kGather: return {c, all};
    case Coll::kReduceScatter:
    case Coll::kScatter: return {all, c};
    case Coll::kAlltoall: return {all, all};
    default: return {c, c};
  }
}

float input(Coll coll, int rank, size_t k, int n, int root) {
  if (coll == Coll::kBroadcast || coll == Coll::kScatter) return rank == root ? value(root, k, n)
                                                                               : -1.0f;
  return value(rank, k, n);
}

// Whether rank's receive buffer is checked, and element j of it.
bool checked(Coll coll, int rank, int root) {
  return !(coll == Coll::kReduce || coll == Coll::kGather) || rank == root;
}

float expected(Coll coll, int rank, size_t j, size_t c, int n, int root) {
  float sum = 0;
  switch (coll) {
    case Coll::kAllreduce:
    case Coll::kReduce:
      for (int r = 0; r < n; ++r) sum += value(r, j, n);
      return sum;
    case Coll::kReduceScatter:
      for (int r = 0; r < n; ++r) sum += value(r, rank * c + j, n);
      return sum;
    case Coll::kBroadcast: return value(root, j, n);
    case Coll::kAllgather:
    case Coll::kGather: return value(static_cast<int>(j / c), j % c, n);
    case Coll::kAlltoall: return value(static_cast<int>(j / c), rank * c + j % c, n);
    case Coll::kScatter: return value(root, rank * c + j, n);
  }
  return 0;
}

std::vector<size_t> sizes(const PeerOptions& o) {
  std::vector<size_t> out;
  for (size_t b = o.min_bytes; b <= o.max_bytes; b *= o.step_factor) {
    out.push_back(b);
    if (b == 0) break;
  }
  return out;
}

bool parse_size(const char* text, size_t* bytes) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || text[0] == '-') return false;
  switch (*end) {
    case 'K': case 'k': v <<= 10; ++end; break;
    case 'M': case 'm': v <<= 20; ++end; break;
    case 'G': case 'g': v <<= 30; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  *bytes = static_cast<size_t>(v);
  return true;
}

std::string format_number(double v, int width) {
  char text[64];
  int digits = 1;
  for (double p = 10; v >= p && digits < 40; p *= 10) ++digits;
  const int decimals = digits + 3 <= width ? 2 : digits + 2 <= width ? 1 : 0;
  std::snprintf(text, sizeof(text), "%*.*f", width, decimals, v);
  return text;
}

}  // namespace

int parse_peer_options(int argc, char** argv, const char* program, PeerOptions* o) {
  auto usage = [&](const std::string& error) {
    if (!error.empty()) std::fprintf(stderr, "%s: %s\n", program, error.c_str());
    std::fprintf(error.empty() ? stdout : stderr,
                 "usage: %s COLLECTIVE [-b 1K] [-e 64M] [-f 2] [-n 20] [-w 5] [-c 1] [-r 0] "
                 "[-s STORE_DIR]\n  COLLECTIVE: allreduce broadcast reduce allgather "
                 "reduce_scatter alltoall gather scatter (float32, sum)\n",
                 program);
    return error.empty() ? 0 : 2;
  };
  bool have_coll = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return usage("");
    if (arg.size() == 2 && arg[0] == '-') {
      if (i + 1 >= argc) return usage(arg + " needs a value");
      const char* v = argv[++i];
      bool ok = true;
      switch (arg[1]) {
        case 'b': ok = parse_size(v, &o->min_bytes); break;
        case 'e': ok = parse_size(v, &o->max_bytes); break;
        case 'f': ok = parse_size(v, &o->step_factor) && o->step_factor >= 2; break;
        case 'n': o->iters = std::atoi(v); ok = o->iters >= 1; break;
        case 'w': o->warmup_iters = std::atoi(v); ok = o->warmup_iters >= 0; break;
        case 'c': o->check = std::atoi(v) != 0; break;
        case 'r': o->root = std::atoi(v); ok = o->root >= 0; break;
        case 's': o->store_dir = v; break;
        default: return usage("unknown flag " + arg);
      }
      if (!ok) return usage(arg + " " + v + ": invalid value");
      continue;
    }
    bool found = false;
    for (const CollInfo& c : kColls) {
      if (arg == c.name) {
        o->coll = c.coll;
        o->coll_name = c.name;
        found = true;
      }
    }
    if (!found || have_coll) return usage("unknown collective '" + arg + "'");
    have_coll = true;
  }
  if (o->min_bytes > o->max_bytes) return usage("-b is larger than -e");
  return -1;
}

int run_peer_benchmark(PeerBackend& backend, const PeerOptions& o) {
  const int rank = backend.rank(), n = backend.nranks();
  const CollInfo& ci = info(o.coll);
  const bool printer = rank == 0;
  if (!backend.supports(o.coll)) {
    if (printer) std::fprintf(stderr, "%s: %s not supported\n", backend.description().c_str(),
                              ci.name);
    return 2;
  }
  if (ci.rooted && o.root >= n) {
    if (printer) std::fprintf(stderr, "-r %d not in 0..%d\n", o.root, n - 1);
    return 2;
  }
  const int root = ci.rooted ? o.root : -1;
  if (printer) {
    std::printf("# %s\n# Collective test starting: %s\n# nRanks %d minBytes %zu maxBytes %zu "
                "step: %zu(factor) warmup iters: %d iters: %d validation: %d\n#\n",
                backend.description().c_str(), ci.name, n, o.min_bytes, o.max_bytes,
                o.step_factor, o.warmup_iters, o.iters, o.check ? 1 : 0);
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
                "redop", "root", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
                "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }
  int64_t total_wrong = 0;
  std::vector<float> send, recv;
  for (size_t bytes : sizes(o)) {
    const size_t total = bytes / sizeof(float);
    const size_t c = ci.per_rank_count ? total / static_cast<size_t>(n) : total;
    const Layout l = layout(o.coll, c, n);
    send.assign(l.send, 0.0f);
    recv.assign(l.recv, -1.0f);
    auto fill = [&] {
      for (size_t k = 0; k < l.send; ++k) send[k] = input(o.coll, rank, k, n, o.root);
      std::fill(recv.begin(), recv.end(), -1.0f);
      if (o.coll == Coll::kBroadcast && rank == o.root) std::copy(send.begin(), send.end(),
                                                                  recv.begin());
    };
    fill();
    backend.barrier();
    for (int i = 0; i < o.warmup_iters; ++i) backend.run(o.coll, send.data(), recv.data(), c, root);
    backend.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) backend.run(o.coll, send.data(), recv.data(), c, root);
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    const double time_us = backend.max_over_ranks(elapsed.count() / o.iters);
    const size_t row_bytes = std::max(l.send, l.recv) * sizeof(float);
    const double algbw = time_us > 0 ? static_cast<double>(row_bytes) / (time_us * 1e3) : 0.0;
    const double busbw = algbw * bus_factor(o.coll, n);
    std::string wrong = "N/A";
    if (o.check) {
      fill();
      backend.run(o.coll, send.data(), recv.data(), c, root);
      int64_t mine = 0;
      if (checked(o.coll, rank, o.root)) {
        for (size_t j = 0; j < l.recv; ++j) {
          if (recv[j] != expected(o.coll, rank, j, c, n, o.root)) ++mine;
        }
      }
      const int64_t all = backend.sum_over_ranks(mine);
      total_wrong += all;
      wrong = std::to_string(all);
    }
    if (printer) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d  %7s  %6s  %6s  %6s\n", row_bytes, c, "float",
                  ci.reduces ? "sum" : "none", root, format_number(time_us, 7).c_str(),
                  format_number(algbw, 6).c_str(), format_number(busbw, 6).c_str(),
                  wrong.c_str());
      std::fflush(stdout);
    }
  }
  if (printer) {
    std::printf("# %-20s : %lld %s\n# Collective test concluded: %s\n", "Out of bounds values",
                static_cast<long long>(total_wrong), total_wrong == 0 ? "OK" : "FAILED", ci.name);
    std::fflush(stdout);
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace plexus::peers
