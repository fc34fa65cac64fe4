// report.h - the nccl-tests-style output of plexus-bench: header, one row per size, footer,
// and the same results as JSON (-J). Only the printing rank (rank 0) writes anything.
//
//   #       size         count      type   redop    root     time   algbw   busbw #wrong ...
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)        ...
//              8             2     float     sum      -1    12.34    0.00    0.00      0 ...
// time is the mean over the timed iterations, the maximum over ranks; algbw = size / time;
// busbw = algbw * the collective's bus factor; #wrong = elements that differ from the expected
// value, summed over ranks (-1 columns mean "not checked", printed as N/A as nccl-tests does).
// With -P 1 each row is followed by
//   #  predicted     1234.5 us  measured / predicted 1.02 (out of place) 1.01 (in place)
// and the JSON row gains "predicted_time" (us). The footer adds
// "# Algorithms used : allreduce:ring, ..." (plx_comm_last_algorithm per row); the JSON gives
// each measurement's algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/harness/options.h"
#include "plexus/plexus.h"

namespace plexus::bench {

struct RankInfo {
  int rank = 0;
  int local_rank = 0;
  int pid = 0;
  std::string hostname;
  std::string transport;
};

struct Measurement {
  double time_us = 0;
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  int64_t wrong = -1;  // -1: not checked
  std::string algorithm;  // plx_comm_last_algorithm after the timed loop, e.g. "allreduce:ring"
};

struct Row {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string redop;  // "none" for collectives without an op
  int root = -1;      // -1 for collectives without a root
  Measurement out_of_place;
  Measurement in_place;
  // -P 1: plx_comm_predict_time for the row's call, in us (the algorithm the cost model would
  // run, honouring -a and PLEXUS_ALGO), or -1 when it gave none (sendrecv on more than 2
  // ranks) or -P was not given.
  double predicted_us = -1;
};

class Report {
 public:
  Report(const BenchOptions& options, int nranks, bool printer);

  void header(const std::vector<RankInfo>& ranks);
  void row(const Row& row);
  // Prints the footer (with the algorithms the rows used) and writes the JSON file; returns
  // false if the JSON file failed.
  bool footer(int64_t total_wrong, double average_busbw);

 private:
  const BenchOptions& options_;
  int nranks_;
  bool printer_;
  nlohmann::ordered_json json_;
  std::vector<std::string> algorithms_;  // distinct, in order of first use
};

// A number right-aligned in `width` characters with as many decimals as fit (2, 1, 0, then
// scientific), the way nccl-tests keeps its columns aligned.
std::string format_number(double value, int width);

}  // namespace plexus::bench
