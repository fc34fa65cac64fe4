#include "perf/harness/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>

namespace plexus::bench {
namespace {

std::string now_string() {
  std::time_t now = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return text;
}

std::string measurement_columns(const Measurement& m) {
  std::string wrong = m.wrong < 0 ? "N/A" : std::to_string(m.wrong);
  return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", format_number(m.time_us, 7),
                     format_number(m.algbw_gbs, 6), format_number(m.busbw_gbs, 6), wrong);
}

nlohmann::ordered_json measurement_json(const Measurement& m) {
  nlohmann::ordered_json j;
  j["time"] = m.time_us;
  j["alg_bw"] = m.algbw_gbs;
  j["bus_bw"] = m.busbw_gbs;
  j["nwrong"] = m.wrong < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(m.wrong);
  j["algorithm"] = m.algorithm;
  return j;
}

}  // namespace

std::string format_number(double value, int width) {
  int digits = 1;  // digits before the decimal point
  for (double v = 10; std::fabs(value) >= v && digits < 40; v *= 10) ++digits;
  if (value < 0) ++digits;
  if (digits + 3 <= width) return fmt::format("{:>{}.2f}", value, width);
  if (digits + 2 <= width) return fmt::format("{:>{}.1f}", value, width);
  if (digits <= width) return fmt::format("{:>{}.0f}", value, width);
  // "1.2e+06" needs 7 characters, "1e+06" 5.
  return width >= 7 ? fmt::format("{:>{}.1e}", value, width)
                    : fmt::format("{:>{}.0e}", value, width);
}

Report::Report(const BenchOptions& options, int nranks, bool printer)
    : options_(options), nranks_(nranks), printer_(printer) {}

void Report::header(const std::vector<RankInfo>& ranks) {
  if (!printer_) return;
  int version = 0;
  plx_get_version(&version);
  const std::string step = options_.step_bytes > 0
                               ? fmt::format("{}(bytes)", options_.step_bytes)
                               : fmt::format("{}(factor)", options_.step_factor);
  fmt::print("# plexus-bench version {}.{}.{} plexus-library={}\n", PLX_VERSION_MAJOR,
             PLX_VERSION_MINOR, PLX_VERSION_PATCH, version);
  fmt::print("# Collective test starting: {}\n", options_.collective);
  fmt::print("# nRanks {} minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} "
             "validation: {}\n",
             nranks_, options_.min_bytes, options_.max_bytes, step, options_.warmup_iters,
             options_.iters, options_.check ? 1 : 0);
  if (!options_.algorithm.empty()) fmt::print("# Algorithm forced: {}\n", options_.algorithm);
  fmt::print("#\n# Using devices\n");
  for (const RankInfo& r : ranks) {
    fmt::print("#  Rank {:2} Group {:2} Pid {:6} on {:>10} device cpu [local rank {}] {}\n",
               r.rank, 0, r.pid, r.hostname, r.local_rank, r.transport);
  }
  fmt::print("#\n# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place"
             "                       in-place\n", "", "", "", "", "");
  fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  "
             "{:>6}  {:>6}\n", "size", "count", "type", "redop", "root", "time", "algbw",
             "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  "
             "{:>6}  {:>6}\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
             "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);

  json_["version"] = 1;
  json_["benchmark"] = "plexus-bench";
  json_["collective"] = options_.collective;
  json_["plexus_version"] = version;
  json_["start_time"] = now_string();
  json_["args"] = options_.argv;
  auto& config = json_["config"];
  config["nranks"] = nranks_;
  config["minimum_bytes"] = options_.min_bytes;
  config["maximum_bytes"] = options_.max_bytes;
  if (options_.step_bytes > 0) {
    config["step_bytes"] = options_.step_bytes;
  } else {
    config["step_factor"] = options_.step_factor;
  }
  config["warmup_iters"] = options_.warmup_iters;
  config["iterations"] = options_.iters;
  config["validation"] = options_.check ? 1 : 0;
  config["algorithm"] = options_.algorithm;
  json_["devices"] = nlohmann::ordered_json::array();
  for (const RankInfo& r : ranks) {
    json_["devices"].push_back({{"rank", r.rank}, {"group", 0}, {"pid", r.pid},
                                {"hostname", r.hostname}, {"local_rank", r.local_rank},
                                {"transport", r.transport}});
  }
  json_["results"] = nlohmann::ordered_json::array();
}

void Report::row(const Row& row) {
  if (!printer_) return;
  for (const Measurement* m : {&row.out_of_place, &row.in_place}) {
    if (!m->algorithm.empty() &&
        std::find(algorithms_.begin(), algorithms_.end(), m->algorithm) == algorithms_.end()) {
      algorithms_.push_back(m->algorithm);
    }
  }
  fmt::print("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}\n", row.bytes, row.count, row.type,
             row.redop, row.root, measurement_columns(row.out_of_place),
             measurement_columns(row.in_place));
  if (options_.predict) {
    if (row.predicted_us > 0) {
      fmt::print("#  predicted {:>10} us  measured / predicted {:.2f} (out of place) {:.2f} "
                 "(in place)\n",
                 format_number(row.predicted_us, 10), row.out_of_place.time_us / row.predicted_us,
                 row.in_place.time_us / row.predicted_us);
    } else {
      fmt::print("#  predicted: none (plx_comm_predict_time has no prediction for this call)\n");
    }
  }
  std::fflush(stdout);
  nlohmann::ordered_json j;
  j["size"] = row.bytes;
  j["count"] = row.count;
  j["type"] = row.type;
  j["redop"] = row.redop;
  j["root"] = row.root;
  j["out_of_place"] = measurement_json(row.out_of_place);
  j["in_place"] = measurement_json(row.in_place);
  if (options_.predict) {
    j["predicted_time"] =
        row.predicted_us > 0 ? nlohmann::ordered_json(row.predicted_us) : nlohmann::ordered_json();
  }
  json_["results"].push_back(std::move(j));
}

bool Report::footer(int64_t total_wrong, double average_busbw) {
  if (!printer_) return true;
  fmt::print("# {:<20} : {} {}\n", "Out of bounds values", total_wrong,
             total_wrong == 0 ? "OK" : "FAILED");
  fmt::print("# {:<20} : {:.6g}\n", "Avg bus bandwidth", average_busbw);
  const std::string used =
      algorithms_.empty() ? std::string("-") : fmt::format("{}", fmt::join(algorithms_, ", "));
  fmt::print("# {:<20} : {}\n#\n", "Algorithms used", used);
  fmt::print("# Collective test concluded: {}\n", options_.collective);
  std::fflush(stdout);
  if (options_.json_path.empty()) return true;
  json_["out_of_bounds"] = {{"count", total_wrong}, {"okay", total_wrong == 0}};
  json_["average_bus_bandwidth"] = {{"bandwidth", average_busbw}};
  json_["algorithms_used"] = algorithms_;
  json_["end_time"] = now_string();
  std::ofstream out(options_.json_path);
  out << json_.dump(2) << "\n";
  out.close();
  if (!out) {
    fmt::print(stderr, "plexus-bench: cannot write {}\n", options_.json_path);
    return false;
  }
  fmt::print("# Wrote JSON results to {}\n", options_.json_path);
  return true;
}

}  // namespace plexus::bench
