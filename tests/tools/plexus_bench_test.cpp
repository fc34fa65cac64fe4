// plexus_bench_test.cpp - runs `plexus-run -n 3 plexus-bench ...` and checks the table it prints:
// the expected sizes and counts, #wrong 0 in every row, busbw = algbw * the collective's bus
// factor (2(n-1)/n for allreduce, 1 for broadcast) within the printed rounding, exit code 0;
// and the JSON file and the usage errors.
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

void check_table(const ProcessResult& r, const std::vector<size_t>& sizes, size_t elem_bytes,
                 const std::string& type, const std::string& redop, int root, double bus_factor) {
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
    EXPECT_EQ(row.bytes, sizes[i]) << where;
    EXPECT_EQ(row.count, sizes[i] / elem_bytes) << where;
    EXPECT_EQ(row.type, type) << where;
    EXPECT_EQ(row.redop, redop) << where;
    EXPECT_EQ(row.root, root) << where;
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(row.wrong[k], "0") << where << (k == 0 ? " out of place" : " in place");
      EXPECT_GT(row.time[k], 0.0) << where;
      expect_close(row.busbw[k], row.algbw[k] * bus_factor, where + " busbw");
      // algbw = size / time, in GB/s; the printed time is rounded to 0.01 us.
      expect_close(row.algbw[k], static_cast<double>(row.bytes) / (row.time[k] * 1e3),
                   where + " algbw");
    }
  }
}

const std::vector<size_t> kSizes8To64K{8, 32, 128, 512, 2048, 8192, 32768};

TEST(PlexusBench, AllreduceFloatSum) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1"});
  check_table(r, kSizes8To64K, 4, "float", "sum", -1, 2.0 * (kRanks - 1) / kRanks);
}

TEST(PlexusBench, AllreduceOverTcp) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-d",
                      "int64", "-o", "max"},
                     "tcp;ofi_rxm");
  check_table(r, {8, 32, 128, 512, 2048, 8192, 32768}, 8, "int64", "max", -1,
              2.0 * (kRanks - 1) / kRanks);
  EXPECT_NE(r.out.find("tcp"), std::string::npos) << "transport not named in the header";
}

TEST(PlexusBench, AllreduceHalfAvg) {
  auto r = run_bench({"allreduce", "-b", "8", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-d",
                      "half", "-o", "avg"});
  check_table(r, kSizes8To64K, 2, "half", "avg", -1, 2.0 * (kRanks - 1) / kRanks);
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
  }
  EXPECT_EQ(j["out_of_bounds"]["okay"], true);
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
