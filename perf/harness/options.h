// options.h - the command line of plexus-bench, with nccl-tests' flags and defaults.
//
//   plexus-bench COLLECTIVE [-b 8] [-e 32M] [-f 2 | -i BYTES] [-n 20] [-w 5] [-c 1]
//                [-d float|...|all] [-o sum|prod|min|max|avg|all] [-r 0] [-a allreduce:ring]
//                [-R 0|1] [-P 0|1] [-J results.json]
// Sizes accept K, M and G suffixes (powers of 1024, as nccl-tests).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::bench {

struct BenchOptions {
  std::string collective;
  size_t min_bytes = 8;
  size_t max_bytes = 32u << 20;
  size_t step_factor = 2;
  size_t step_bytes = 0;  // > 0: sizes grow by this many bytes instead of by step_factor
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  std::vector<plx_datatype_t> datatypes{PLX_FLOAT32};
  std::vector<plx_red_op_t> ops{PLX_SUM};
  int root = 0;
  std::string algorithm;            // -a: plx_comm_set_algorithm spec; empty: automatic
  bool registered = false;          // -R 1: buffers from plx_mem_alloc, plx_comm_register'ed
  bool predict = false;             // -P 1: the cost model's predicted time beside each row
  std::string json_path;            // empty: no JSON
  std::vector<std::string> argv;    // as given, for the JSON record
};

// "8", "64K", "32M", "1G" (also lower case): bytes, or nullopt if malformed or too large.
std::optional<size_t> parse_bytes(const std::string& text);

// The message sizes, min_bytes to max_bytes by step_factor (or step_bytes).
std::vector<size_t> message_sizes(const BenchOptions& options);

// Parses argv into *options. Returns -1 to go on, else the exit code to return now (0 after
// --help, 2 after a usage error, whose message went to stderr). `collectives` lists the valid
// COLLECTIVE names.
int parse_options(int argc, char** argv, const std::vector<std::string>& collectives,
                  BenchOptions* options);

}  // namespace plexus::bench
