#include "perf/harness/options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "perf/harness/values.h"

namespace plexus::bench {

std::optional<size_t> parse_bytes(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  unsigned long long scale = 1;
  if (end < text.size()) {
    switch (std::toupper(static_cast<unsigned char>(text[end]))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: return std::nullopt;
    }
    ++end;
    if (end < text.size() && std::toupper(static_cast<unsigned char>(text[end])) == 'B') ++end;
  }
  if (end != text.size()) return std::nullopt;
  if (value > std::numeric_limits<size_t>::max() / scale) return std::nullopt;
  return static_cast<size_t>(value * scale);
}

std::vector<size_t> message_sizes(const BenchOptions& options) {
  std::vector<size_t> sizes;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes;) {
    sizes.push_back(bytes);
    size_t next = options.step_bytes > 0 ? bytes + options.step_bytes : bytes * options.step_factor;
    if (next <= bytes) break;  // overflow, or a 0-byte start with a factor
    bytes = next;
  }
  return sizes;
}

int parse_options(int argc, char** argv, const std::vector<std::string>& collectives,
                  BenchOptions* options) {
  CLI::App app{"plexus-bench: nccl-tests-style bandwidth benchmark of the Plexus collectives.\n"
               "Run one process per rank, e.g.: plexus-run -n 4 plexus-bench allreduce -b 8 -e 64M",
               "plexus-bench"};
  std::string min_bytes = "8", max_bytes = "32M", step_bytes, datatype = "float", op = "sum";
  int check = 1;
  app.add_option("collective", options->collective,
                 fmt::format("one of: {}", fmt::join(collectives, ", ")))
      ->required();
  app.add_option("-b,--minbytes", min_bytes, "smallest message size in bytes (K/M/G suffixes)")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", max_bytes, "largest message size in bytes")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", options->step_factor, "multiply the size by this each step")
      ->capture_default_str();
  app.add_option("-i,--stepbytes", step_bytes, "add this many bytes each step (instead of -f)");
  app.add_option("-n,--iters", options->iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", options->warmup_iters, "untimed iterations before")
      ->capture_default_str();
  app.add_option("-c,--check", check, "check results against the expected values (0 or 1)")
      ->capture_default_str();
  app.add_option("-d,--datatype", datatype,
                 "float, double, half, bfloat16, int8, uint8, int32, uint32, int64, uint64 or all")
      ->capture_default_str();
  app.add_option("-o,--op", op, "sum, prod, min, max, avg or all")->capture_default_str();
  app.add_option("-r,--root", options->root,
                 "root rank (broadcast, reduce, gather, scatter)")->capture_default_str();
  app.add_option("-a,--algorithm", options->algorithm,
                 "force algorithms with plx_comm_set_algorithm, e.g. allreduce:ring "
                 "(PLEXUS_ALGO syntax; default: the cost model chooses)");
  int registered = 0;
  app.add_option("-R,--local_register", registered,
                 "1: buffers from plx_mem_alloc, registered with plx_comm_register (as "
                 "nccl-tests -R); the shm allreduce then reads and writes them directly")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  int predict = 0;
  app.add_option("-P,--predict", predict,
                 "1: print after each row the time plx_comm_predict_time predicts for it (the "
                 "cost model's, for the algorithm it would run) and measured / predicted")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app.add_option("-J,--output_file", options->json_path, "write the results as JSON here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  options->argv.assign(argv, argv + argc);
  options->check = check != 0;
  options->registered = registered != 0;
  options->predict = predict != 0;

  std::string error;
  auto min = parse_bytes(min_bytes), max = parse_bytes(max_bytes);
  auto step = step_bytes.empty() ? std::optional<size_t>(0) : parse_bytes(step_bytes);
  if (std::find(collectives.begin(), collectives.end(), options->collective) == collectives.end()) {
    error = fmt::format("unknown collective '{}' (one of: {})", options->collective,
                        fmt::join(collectives, ", "));
  } else if (!min) {
    error = fmt::format("-b {}: not a size (a number with an optional K, M or G)", min_bytes);
  } else if (!max) {
    error = fmt::format("-e {}: not a size (a number with an optional K, M or G)", max_bytes);
  } else if (!step) {
    error = fmt::format("-i {}: not a size (a number with an optional K, M or G)", step_bytes);
  } else if (*min > *max) {
    error = fmt::format("-b {} is larger than -e {}", *min, *max);
  } else if (*step == 0 && options->step_factor < 2) {
    error = fmt::format("-f {} must be at least 2 (or give -i BYTES)", options->step_factor);
  } else if (options->iters < 1) {
    error = fmt::format("-n {} must be at least 1", options->iters);
  } else if (options->warmup_iters < 0) {
    error = fmt::format("-w {} must be at least 0", options->warmup_iters);
  } else if (options->root < 0) {
    error = fmt::format("-r {} must be at least 0", options->root);
  }
  if (error.empty()) {
    options->min_bytes = *min;
    options->max_bytes = *max;
    options->step_bytes = *step;
    if (datatype == "all") {
      options->datatypes.clear();
      for (int t = 0; t < PLX_NUM_DATATYPES; ++t) {
        options->datatypes.push_back(static_cast<plx_datatype_t>(t));
      }
    } else if (auto t = parse_datatype(datatype)) {
      options->datatypes = {*t};
    } else {
      error = fmt::format("-d {}: unknown datatype", datatype);
    }
    if (op == "all") {
      options->ops = {PLX_SUM, PLX_PROD, PLX_MAX, PLX_MIN, PLX_AVG};
    } else if (auto o = parse_op(op)) {
      options->ops = {*o};
    } else {
      error = fmt::format("-o {}: unknown op (sum, prod, min, max, avg or all)", op);
    }
  }
  if (!error.empty()) {
    fmt::print(stderr, "plexus-bench: {}\n", error);
    return 2;
  }
  return -1;
}

}  // namespace plexus::bench
