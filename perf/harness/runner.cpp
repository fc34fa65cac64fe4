#include "perf/harness/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "perf/harness/report.h"
#include "perf/harness/values.h"

namespace plexus::bench {
namespace {

constexpr double kSentinel = -1.0;  // never an expected value; all ones in unsigned types
constexpr size_t kInfoBytes = 256;  // one rank's description in the info exchange

// The buffers of one row: out of place, send and recv; in place, both inside recv, at the
// collective's in-place offsets. With -R they are plx_mem_alloc memory registered on the
// communicator (nccl-tests' -R: ncclMemAlloc + ncclCommRegister), grown as the sizes grow.
class Buffers {
 public:
  Buffers(bool registered, plx_comm_t comm) : registered_(registered), comm_(comm) {}
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
    release(send_);
    release(recv_);
  }
  void resize(size_t send_bytes, size_t recv_bytes) {
    grow(send_, send_bytes);
    grow(recv_, recv_bytes);
  }
  std::byte* send() { return send_.data; }
  std::byte* recv() { return recv_.data; }

 private:
  struct Block {
    std::vector<std::byte> plain;
    std::byte* data = nullptr;
    size_t bytes = 0;
    void* handle = nullptr;  // the registration, with -R
  };
  void grow(Block& b, size_t bytes) {
    if (!registered_) {
      b.plain.resize(bytes);
      b.data = b.plain.data();
      return;
    }
    bytes = std::max<size_t>(bytes, 1);
    if (bytes <= b.bytes) return;
    release(b);
    void* memory = nullptr;
    check_plexus(plx_mem_alloc(&memory, bytes), "plx_mem_alloc");
    b.data = static_cast<std::byte*>(memory);
    b.bytes = bytes;
    check_plexus(plx_comm_register(comm_, memory, bytes, &b.handle), "plx_comm_register");
  }
  void release(Block& b) {
    if (!b.handle) return;
    plx_comm_deregister(comm_, b.handle);
    plx_mem_free(b.data);
    b = Block{};
  }
  bool registered_;
  plx_comm_t comm_;
  Block send_, recv_;
};

void fill(const Collective& c, const CaseParams& p, Buffers& b, bool in_place, void** send,
          void** recv) {
  const size_t elem = plx_datatype_size(p.datatype);
  *recv = in_place ? b.recv() + c.in_place_recv_offset(p) * elem : b.recv();
  *send = in_place ? b.recv() + c.in_place_send_offset(p) * elem : b.send();
  for (size_t i = 0; i < c.recv_count(p); ++i) store_element(*recv, i, p.datatype, kSentinel);
  for (size_t i = 0; i < c.send_count(p); ++i) {
    store_element(*send, i, p.datatype, c.input(p, p.rank, i));
  }
}

// "collective:algorithm" of the collective just timed, or "" where the library names none for
// it (sendrecv is not a collective: the last one on comm is then the barrier before the loop).
std::string last_algorithm(const Collective& c, plx_comm_t comm) {
  const char* name = nullptr;
  check_plexus(plx_comm_last_algorithm(comm, &name), "plx_comm_last_algorithm");
  const std::string algorithm = name != nullptr ? name : "";
  return algorithm.rfind(c.name() + ":", 0) == 0 ? algorithm : "";
}

double max_over_ranks(double value, plx_comm_t comm) {
  check_plexus(plx_allreduce(&value, &value, 1, PLX_FLOAT64, PLX_MAX, comm, nullptr),
               "plx_allreduce (time)");
  return value;
}

int64_t sum_over_ranks(int64_t value, plx_comm_t comm) {
  check_plexus(plx_allreduce(&value, &value, 1, PLX_INT64, PLX_SUM, comm, nullptr),
               "plx_allreduce (#wrong)");
  return value;
}

Measurement measure(const Collective& c, const CaseParams& p, const BenchOptions& options,
                    Buffers& b, bool in_place, plx_comm_t comm) {
  void *send = nullptr, *recv = nullptr;
  fill(c, p, b, in_place, &send, &recv);
  const std::string call = "plx_" + c.name();
  check_plexus(plx_barrier(comm), "plx_barrier");
  for (int i = 0; i < options.warmup_iters; ++i) {
    check_plexus(c.run(send, recv, p, comm), call.c_str());
  }
  check_plexus(plx_barrier(comm), "plx_barrier");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.iters; ++i) check_plexus(c.run(send, recv, p, comm), call.c_str());
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;

  Measurement m;
  m.algorithm = last_algorithm(c, comm);  // before the allreduces below replace it
  m.time_us = max_over_ranks(elapsed.count() / options.iters, comm);
  const double bytes = static_cast<double>(row_bytes(c, p));
  m.algbw_gbs = m.time_us > 0 ? bytes / (m.time_us * 1e3) : 0.0;  // B/us / 1e3 = GB/s
  m.busbw_gbs = m.algbw_gbs * c.bus_factor(p.nranks);
  if (options.check && (!in_place || c.in_place_checked())) {
    fill(c, p, b, in_place, &send, &recv);
    check_plexus(c.run(send, recv, p, comm), call.c_str());
    m.wrong = sum_over_ranks(count_wrong(c, p, recv), comm);
  }
  return m;
}

// -P 1: the cost model's time for this call on the whole communicator, in us; -1 when it has
// none (plx_comm_predict_time refuses sendrecv on more than 2 ranks).
double predicted_us(const Collective& c, const CaseParams& p, plx_comm_t comm) {
  double seconds = 0;
  if (plx_comm_predict_time(comm, c.name().c_str(), p.count, p.datatype, nullptr, p.nranks,
                            &seconds) != PLX_SUCCESS)
    return -1;
  return seconds > 0 ? seconds * 1e6 : -1;
}

// Every rank's pid, host and transport, gathered to all with one allreduce (MAX over bytes that
// are zero everywhere except in the owner's slot).
std::vector<RankInfo> exchange_rank_info(int rank, int nranks, plx_comm_t comm) {
  int local_rank = 0;
  const char* transport = "";
  check_plexus(plx_comm_local_rank(comm, &local_rank), "plx_comm_local_rank");
  check_plexus(plx_comm_transport_name(comm, &transport), "plx_comm_transport_name");
  char host[128] = {};
  gethostname(host, sizeof(host) - 1);
  std::string mine = fmt::format("{}\t{}\t{}\t{}", local_rank, static_cast<int>(getpid()), host,
                                 transport);
  mine.resize(std::min(mine.size(), kInfoBytes - 1));
  std::vector<uint8_t> table(kInfoBytes * nranks, 0);
  std::memcpy(table.data() + kInfoBytes * rank, mine.data(), mine.size());
  check_plexus(plx_allreduce(table.data(), table.data(), table.size(), PLX_UINT8, PLX_MAX, comm,
                             nullptr),
               "plx_allreduce (rank info)");
  std::vector<RankInfo> infos(nranks);
  for (int r = 0; r < nranks; ++r) {
    std::string text(reinterpret_cast<const char*>(table.data() + kInfoBytes * r));
    std::vector<std::string> fields;
    for (size_t start = 0;;) {
      size_t tab = text.find('\t', start);
      fields.push_back(text.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    fields.resize(4);
    infos[r] = RankInfo{r, std::atoi(fields[0].c_str()), std::atoi(fields[1].c_str()), fields[2],
                        fields[3]};
  }
  return infos;
}

}  // namespace

size_t row_bytes(const Collective& c, const CaseParams& p) {
  return std::max(c.send_count(p), c.recv_count(p)) * plx_datatype_size(p.datatype);
}

int64_t count_wrong(const Collective& c, const CaseParams& p, const void* recv) {
  const bool approximate = p.op == PLX_AVG && c.has_op() && is_float_type(p.datatype);
  const double eps = datatype_epsilon(p.datatype);
  int64_t wrong = 0;
  for (size_t i = 0; i < c.checked_count(p); ++i) {
    const double got = load_element(recv, i, p.datatype);
    const double want = round_to_datatype(c.expected(p, i), p.datatype);
    if (got == want) continue;
    if (approximate && std::fabs(got - want) <= std::fabs(want) * eps) continue;
    ++wrong;
  }
  return wrong;
}

void check_plexus(plx_result_t result, const char* call) {
  if (result == PLX_SUCCESS) return;
  throw PlexusFailure(fmt::format("{} failed: {}: {}", call, plx_get_error_string(result),
                                  plx_get_last_error(nullptr)));
}

BenchOutcome run_benchmark(const Collective& c, const BenchOptions& options, plx_comm_t comm) {
  int rank = 0, nranks = 1;
  check_plexus(plx_comm_rank(comm, &rank), "plx_comm_rank");
  check_plexus(plx_comm_size(comm, &nranks), "plx_comm_size");
  Report report(options, nranks, rank == 0);
  report.header(exchange_rank_info(rank, nranks, comm));

  const std::vector<size_t> sizes = message_sizes(options);
  const std::vector<plx_red_op_t> ops = c.has_op() ? options.ops : std::vector{PLX_SUM};
  Buffers buffers(options.registered, comm);
  int64_t total_wrong = 0;
  double busbw_sum = 0;
  int measurements = 0;
  for (plx_datatype_t datatype : options.datatypes) {
    const size_t elem = plx_datatype_size(datatype);
    for (plx_red_op_t op : ops) {
      for (size_t bytes : sizes) {
        CaseParams p{c.count_column(bytes / elem, nranks), datatype, op, options.root, rank,
                     nranks};
        buffers.resize(c.send_count(p) * elem,
                       std::max(c.in_place_recv_offset(p) + c.recv_count(p),
                                c.in_place_send_offset(p) + c.send_count(p)) *
                           elem);
        Row row;
        row.bytes = row_bytes(c, p);
        row.count = p.count;
        row.type = datatype_name(datatype);
        row.redop = c.has_op() ? op_name(op) : "none";
        row.root = c.has_root() ? options.root : -1;
        row.out_of_place = measure(c, p, options, buffers, false, comm);
        row.in_place = measure(c, p, options, buffers, true, comm);
        if (options.predict) row.predicted_us = predicted_us(c, p, comm);
        for (const Measurement* m : {&row.out_of_place, &row.in_place}) {
          total_wrong += std::max<int64_t>(0, m->wrong);
          busbw_sum += m->busbw_gbs;
          ++measurements;
        }
        report.row(row);
      }
    }
  }
  BenchOutcome outcome;
  outcome.total_wrong = total_wrong;
  outcome.report_written =
      report.footer(total_wrong, measurements > 0 ? busbw_sum / measurements : 0.0);
  return outcome;
}

}  // namespace plexus::bench
