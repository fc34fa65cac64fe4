// plexus_bench_test.cpp - runs `plexus-run -n 3 plexus-bench ...` for every collective and checks
// the table it prints: the expected sizes and counts (nccl-tests' conventions), #wrong 0 in every
// row, busbw = algbw * the collective's bus factor (allreduce 2(n-1)/n; reduce_scatter,
// allgather, alltoall, gather, scatter (n-1)/n; broadcast, reduce, sendrecv 1) within the printed
// rounding, exit code 0; a forced algorithm (-a), the JSON file and the usage errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/subprocess.h"

#ifndef PLEXUS_RUN_PATH
#error "PLEXUS_RUN_PATH must name the plexus-run binary"
#endif
#ifndef PLEXUS_BENCH_PATH
#error "PLEXUS_BENCH_PATH must name the plexus-bench binary"
#endif

namespace plexus::test {
namespace {

constexpr int kRanks = 3;

struct TableRow {
  size_t bytes = 0, count = 0;
  std::string type, redop;
  int root = 0;
  double time[2] = {}, algbw[2] = {}, busbw[2] = {};
  std::string wrong[2];
};

// [env PLEXUS_FI_PROVIDER=provider] plexus-run -n 3 plexus-bench ARGS...
ProcessResult run_bench(const std::vector<std::string>& args, const std::string& provider = "") {
  std::vector<std::string> argv;
  if (!provider.empty()) argv = {"/usr/bin/env", "PLEXUS_FI_PROVIDER=" + provider};
  for (std::string a : {std::string(PLEXUS_RUN_PATH), std::string("-n"), std::to_string(kRanks),
                        std::string("--"), std::string(PLEXUS_BENCH_PATH)}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 180.0);
}

// The table rows rank 0 printed (lines "[0] <row>" that are not comments).
std::vector<TableRow> parse_rows(const std::string& out) {
  std::vector<TableRow> rows;
  for (const std::string& line : split_lines(out)) {
    if (line.rfind("[0] ", 0) != 0 || line.size() < 5 || line[4] == '#') continue;
    std::istringstream in(line.substr(4));
    TableRow r;
    in >> r.bytes >> r.count >> r.type >> r.redop >> r.root;
    for (int k = 0; k < 2; ++k) in >> r.time[k] >> r.algbw[k] >> r.busbw[k] >> r.wrong[k];
    if (in) rows.push_back(r);
  }
  return rows;
}

// The printed numbers carry 2 significant decimals at best, or ~3 significant digits.
void expect_close(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 0.011 + 0.01 * std::fabs(want)) << what;
}

// The table a run of COLLECTIVE over `sizes` (the -b..-e sequence) must print. nccl-tests'
// conventions: for the collectives whose count is per rank (per_rank), count = size / elem / n
// and the size column is count * n * elem; otherwise count = size / elem.
struct Expect {
  size_t elem_bytes = 4;
  std::string type = "float";
  std::string redop = "none";
  int root = -1;
  double bus_factor = 1.0;
  bool per_rank = false;
  std::string in_place_wrong = "0";  // "N/A" where nccl-tests does not check in place
};

void check_table(const ProcessResult& r, const std::vector<size_t>& sizes, const Expect& e) {
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int k = 0; k < kRanks; ++k) {
    EXPECT_NE(r.out.find("[0] #  Rank  " + std::to_string(k) + " Group  0 Pid"), std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.out.find("[0] # Out of bounds values : 0 OK"), std::string::npos) << r.out;
  auto rows = parse_rows(r.out);
  ASSERT_EQ(rows.size(), sizes.size()) << r.out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const TableRow& row = rows[i];
    const std::string where = "row " + std::to_string(i) + " (" + std::to_string(row.bytes) + " B)";
    const size_t count = sizes[i] / e.elem_bytes / (e.per_rank ? kRanks : 1);
    EXPECT_EQ(row.count, count) << where;
    EXPECT_EQ(row.bytes, count * e.elem_bytes * (e.per_rank ? kRanks : 1)) << where;
    EXPECT_EQ(row.type, e.type) << where;
    EXPECT_EQ(row.redop, e.redop) << where;
    EXPECT_EQ(row.root, e.root) << where;
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(row.wrong[k], k == 0 ? "0" : e.in_place_wrong)
          << where << (k == 0 ? " out of place" : " in place");
      EXPECT_GT(row.time[k], 0.0) << where;
      expect_close(row.busbw[k], row.algbw[k] * e.bus_factor, where + " busbw");
      // algbw = size / time, in GB/s; the printed time is rounded to 0.01 us.
      expect_close(row.algbw[k], static_cast<double>(row.bytes) / (row.time[k] * 1e3),
                   where + " algbw");
    }
  }
}

void check_table(const ProcessResult& r, const std::vector<size_t>& sizes, size_t elem_bytes,
                 const std::string& type, const std::string& redop, int root, double bus_factor) {
  check_table(r, sizes, Expect{elem_bytes, type, redop, root, bus_factor, false});
}

// The algorithms the footer names ("# Algorithms used : allreduce:ring, ...").
std::string algorithms_used(const std::string& out) {
  const std::string key = "[0] # Algorithms used";
  size_t at = out.find(key);
  if (at == std::string::npos) return "<no footer line>";
  at = out.find(": ", at);
  return out.substr(at + 2, out.find('\n', at) - at - 2);
}

constexpr double kRing = 2.0 * (kRanks - 1) / kRanks;  // allreduce's bus factor
constexpr double kShare = static_cast<double>(kRanks - 1) / kRanks;  // allgather, ...

const std::vector<size_t> kSizes8To64K{8, 32, 128, 512, 2048, 8192, 32768};

TEST(PlexusBench, AllreduceFloatSum) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1"});
  check_table(r, kSizes8To64K, 4, "float", "sum", -1, kRing);
  EXPECT_NE(algorithms_used(r.out).find("allreduce:"), std::string::npos) << r.out;
}

TEST(PlexusBench, AllreduceOverTcp) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-d",
                      "int64", "-o", "max"},
                     "tcp;ofi_rxm");
  check_table(r, {8, 32, 128, 512, 2048, 8192, 32768}, 8, "int64", "max", -1, kRing);
  EXPECT_NE(r.out.find("tcp"), std::string::npos) << "transport not named in the header";
}

TEST(PlexusBench, AllreduceHalfAvg) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-d",
                      "half", "-o", "avg"});
  check_table(r, kSizes8To64K, 2, "half", "avg", -1, kRing);
}

TEST(PlexusBench, AllreduceEveryOpOnInt8) {
  auto r = run_bench({"allreduce", "-b", "1", "-e", "1K", "-f", "32", "-n", "1", "-w", "0", "-d",
                      "int8", "-o", "all"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rows = parse_rows(r.out);
  ASSERT_EQ(rows.size(), 5u * 3u) << r.out;  // sum prod max min avg x {1, 32, 1024} bytes
  for (const auto& row : rows) {
    EXPECT_EQ(row.wrong[0], "0") << row.redop << " " << row.bytes;
    EXPECT_EQ(row.wrong[1], "0") << row.redop << " " << row.bytes;
  }
}

TEST(PlexusBench, BroadcastFromRankOne) {
  auto r = run_bench({"broadcast", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-r",
                      "1"});
  check_table(r, kSizes8To64K, 4, "float", "none", 1, 1.0);
}

// Sizes 8 B .. 64 KiB by 8; with 3 ranks the per-rank collectives' smallest row has count 0.
const std::vector<size_t> kSizes8By8{8, 64, 512, 4096, 32768};
const std::vector<std::string> kQuick{"-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1"};

std::vector<std::string> quick(std::vector<std::string> args) {
  args.insert(args.begin() + 1, kQuick.begin(), kQuick.end());
  return args;
}

TEST(PlexusBench, ReduceToRankTwo) {
  auto r = run_bench(quick({"reduce", "-r", "2", "-d", "int32", "-o", "prod"}));
  check_table(r, kSizes8By8, Expect{4, "int32", "prod", 2, 1.0, false});
}

TEST(PlexusBench, ReduceScatterFloatSum) {
  auto r = run_bench(quick({"reduce_scatter"}));
  check_table(r, kSizes8By8, Expect{4, "float", "sum", -1, kShare, true});
}

TEST(PlexusBench, ReduceScatterEveryOpOnBfloat16) {
  auto r = run_bench({"reduce_scatter", "-b", "6", "-e", "6K", "-f", "32", "-n", "1", "-w", "0",
                      "-d", "bfloat16", "-o", "all"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rows = parse_rows(r.out);
  ASSERT_EQ(rows.size(), 5u * 3u) << r.out;  // sum prod max min avg x {6, 192, 6144} bytes
  for (const auto& row : rows) {
    EXPECT_EQ(row.count, row.bytes / 2 / kRanks) << row.redop << " " << row.bytes;
    EXPECT_EQ(row.wrong[0], "0") << row.redop << " " << row.bytes;
    EXPECT_EQ(row.wrong[1], "0") << row.redop << " " << row.bytes;
  }
}

TEST(PlexusBench, AllgatherFloat) {
  auto r = run_bench(quick({"allgather"}));
  check_table(r, kSizes8By8, Expect{4, "float", "none", -1, kShare, true});
}

TEST(PlexusBench, AlltoallDoubleOverTcp) {
  auto r = run_bench(quick({"alltoall", "-d", "double"}), "tcp;ofi_rxm");
  check_table(r, kSizes8By8, Expect{8, "double", "none", -1, kShare, true});
}

TEST(PlexusBench, GatherToRankOne) {
  auto r = run_bench(quick({"gather", "-r", "1", "-d", "half"}));
  check_table(r, kSizes8By8, Expect{2, "half", "none", 1, kShare, true});
}

TEST(PlexusBench, ScatterFromRankTwo) {
  auto r = run_bench(quick({"scatter", "-r", "2", "-d", "uint8"}));
  check_table(r, kSizes8By8, Expect{1, "uint8", "none", 2, kShare, true});
}

TEST(PlexusBench, SendrecvRing) {
  auto r = run_bench(quick({"sendrecv", "-d", "int64"}));
  check_table(r, kSizes8By8, Expect{8, "int64", "none", -1, 1.0, false, "N/A"});
  EXPECT_EQ(algorithms_used(r.out), "-") << r.out;  // point-to-point names no algorithm
}

TEST(PlexusBench, ForcedAlgorithmIsUsed) {
  auto r = run_bench(quick({"allreduce", "-a", "allreduce:ring"}));
  check_table(r, kSizes8By8, 4, "float", "sum", -1, kRing);
  EXPECT_NE(r.out.find("[0] # Algorithm forced: allreduce:ring"), std::string::npos) << r.out;
  EXPECT_EQ(algorithms_used(r.out), "allreduce:ring") << r.out;

  auto bad = run_bench({"allreduce", "-e", "8", "-a", "allreduce:no_such_algorithm"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("-a allreduce:no_such_algorithm: plx_comm_set_algorithm"),
            std::string::npos)
      << bad.out << bad.err;
}

// -P 1: the cost model's prediction after each row, from the communicator's own parameters
// (here PLEXUS_COST_MODEL's alpha 5 us, beta 0.1 ns/B, gamma 0.05 ns/B) for the forced ring:
// 2(n-1) alpha + 2(n-1)/n m beta + (n-1)/n m gamma (cost_model.cpp) = 20.512 us for 3 KiB on
// 3 ranks; in the text and in the JSON.
TEST(PlexusBench, PredictPrintsTheCostModelsTime) {
  const std::string path = ::testing::TempDir() + "plexus_bench_predict_" +
                           std::to_string(getpid()) + ".json";
  std::vector<std::string> argv = {"/usr/bin/env", "PLEXUS_COST_MODEL=5,0.1,0.05",
                                   PLEXUS_RUN_PATH, "-n", std::to_string(kRanks), "--",
                                   PLEXUS_BENCH_PATH, "allreduce", "-b", "3K", "-e", "3K", "-n",
                                   "2", "-w", "1", "-a", "allreduce:ring", "-P", "1", "-J", path};
  ProcessResult r = run_process(argv, 180.0);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto rows = parse_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  const double want_us = 20.0 + 4096 * 0.1e-3 + 2048 * 0.05e-3;
  const std::string key = "[0] #  predicted ";
  const size_t at = r.out.find(key);
  ASSERT_NE(at, std::string::npos) << r.out;
  std::istringstream line(r.out.substr(at + key.size()));
  double predicted = 0, ratio_out = 0;
  std::string us, measured, slash, word;
  line >> predicted >> us >> measured >> slash >> word >> ratio_out;
  EXPECT_NEAR(predicted, want_us, 0.01) << r.out;
  EXPECT_EQ(us, "us") << r.out;
  EXPECT_NEAR(ratio_out, rows[0].time[0] / want_us, 0.01 + 0.01 * rows[0].time[0] / want_us)
      << r.out;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_NEAR(j["results"][0]["predicted_time"].get<double>(), want_us, 1e-6) << j;
  std::remove(path.c_str());

  // Without -P nothing is predicted; -P takes 0 or 1.
  r = run_bench(quick({"allreduce"}));
  EXPECT_EQ(r.out.find("predicted"), std::string::npos) << r.out;
  auto bad = run_process({PLEXUS_BENCH_PATH, "allreduce", "-P", "2"}, 30.0);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST(PlexusBench, WritesJson) {
  std::string path = ::testing::TempDir() + "plexus_bench_test_" + std::to_string(getpid()) +
                     ".json";
  auto r = run_bench({"broadcast", "-b", "1K", "-e", "4K", "-n", "1", "-w", "0", "-d", "double",
                      "-J", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["collective"], "broadcast");
  EXPECT_EQ(j["config"]["nranks"], kRanks);
  EXPECT_EQ(j["devices"].size(), static_cast<size_t>(kRanks));
  ASSERT_EQ(j["results"].size(), 3u);  // 1K, 2K, 4K
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j["results"][i]["size"], 1024u << i);
    EXPECT_EQ(j["results"][i]["count"], 128u << i);
    EXPECT_EQ(j["results"][i]["type"], "double");
    EXPECT_EQ(j["results"][i]["out_of_place"]["nwrong"], 0);
    EXPECT_EQ(j["results"][i]["in_place"]["nwrong"], 0);
    EXPECT_DOUBLE_EQ(j["results"][i]["in_place"]["bus_bw"].get<double>(),
                     j["results"][i]["in_place"]["alg_bw"].get<double>());
    EXPECT_EQ(j["results"][i]["in_place"]["algorithm"].get<std::string>().rfind("broadcast:", 0),
              0u)
        << j["results"][i];
  }
  EXPECT_EQ(j["out_of_bounds"]["okay"], true);
  EXPECT_FALSE(j["algorithms_used"].empty());
  std::remove(path.c_str());
}

TEST(PlexusBench, UsageErrorsExitTwo) {
  auto bad_type = run_process({PLEXUS_BENCH_PATH, "allreduce", "-d", "complex"}, 30.0);
  EXPECT_EQ(bad_type.exit_code, 2);
  EXPECT_NE(bad_type.err.find("-d complex: unknown datatype"), std::string::npos) << bad_type.err;
  auto bad_size = run_process({PLEXUS_BENCH_PATH, "allreduce", "-e", "12Q"}, 30.0);
  EXPECT_EQ(bad_size.exit_code, 2);
  EXPECT_NE(bad_size.err.find("-e 12Q: not a size"), std::string::npos) << bad_size.err;
  auto unknown = run_process({PLEXUS_BENCH_PATH, "alltoallw"}, 30.0);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown collective 'alltoallw'"), std::string::npos) << unknown.err;
  auto bad_root = run_bench({"broadcast", "-r", "5", "-e", "8"});
  EXPECT_EQ(bad_root.exit_code, 2) << bad_root.err;
  EXPECT_NE(bad_root.err.find("-r 5 not in 0..2"), std::string::npos) << bad_root.err;
}

}  // namespace
}  // namespace plexus::test
