// algo_override.cpp - parsing PLEXUS_ALGO / plx_comm_set_algorithm text into overrides.
#include "comm/tuning/algo_override.h"

#include <fmt/format.h>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/trim.h"

namespace plexus::comm {
namespace {

// The parser behind both forms; `where` starts every message.
plx_result_t parse(std::string_view text, std::string_view source, const std::string& where,
                   AlgoOverrides* out) {
  const auto fail = [&](std::string_view item, const std::string& why) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: item '{}': {}", where, item, why));
  };
  if (!out) return set_error(PLX_ERROR_INVALID_ARGUMENT, where + ": out is NULL");

  AlgoOverrides result;
  result.source = std::string(source);
  std::array<bool, kCollectiveCount> named{};  // "auto" counts as named, for duplicates
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = trim(text.substr(begin, end - begin));
    begin = end + 1;
    if (item.empty()) continue;

    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return fail(item, "expected collective:algorithm, e.g. allreduce:ring");
    }
    const std::string_view coll_text = trim(item.substr(0, colon));
    const std::string_view algo_text = trim(item.substr(colon + 1));
    const std::optional<Collective> collective = find_collective(coll_text);
    if (!collective) {
      return fail(item, fmt::format("'{}' is not a collective; valid: {}", coll_text,
                                    collective_names()));
    }
    std::optional<AlgorithmId> algorithm;
    if (algo_text != "auto") {
      algorithm = find_algorithm(*collective, algo_text);
      if (!algorithm) {
        return fail(item, fmt::format("'{}' is not an algorithm of {}; valid: {}, auto",
                                      algo_text, coll_text, algorithm_names(*collective)));
      }
    }
    const auto index = static_cast<size_t>(*collective);
    if (named[index] && result.forced[index] != algorithm) {
      return fail(item, fmt::format("{} is already set to {}", coll_text,
                                    result.forced[index] ? algorithm_name(*result.forced[index])
                                                         : std::string_view("auto")));
    }
    named[index] = true;
    result.forced[index] = algorithm;
  }
  *out = std::move(result);
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t parse_algo_overrides(std::string_view text, std::string_view source, int rank,
                                  AlgoOverrides* out) {
  const std::string where = fmt::format("{}=\"{}\": rank {}", source, text,
                                        rank >= 0 ? std::to_string(rank) : std::string("?"));
  return parse(text, source, where, out);
}

plx_result_t parse_algo_overrides(std::string_view text, AlgoOverrides* out) {
  return parse(text, "plx_comm_set_algorithm", fmt::format("spec \"{}\"", text), out);
}

plx_result_t algo_overrides_from_env(int rank, AlgoOverrides* out) {
  const std::optional<std::string> text = config_string("PLEXUS_ALGO");
  return parse_algo_overrides(text.value_or(""), "PLEXUS_ALGO", rank, out);
}

plx_result_t parse_lane_schedule(std::string_view text, int rank, LaneSchedule* out) {
  const std::string_view name = trim(text);
  if (name.empty() || name == "auto") {
    *out = LaneSchedule::Auto;
  } else if (name == "ring") {
    *out = LaneSchedule::Ring;
  } else if (name == "halving") {
    *out = LaneSchedule::Halving;
  } else {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("PLEXUS_HIERARCHICAL_LANES=\"{}\": {}not one of auto, ring, "
                                 "halving",
                                 text, rank >= 0 ? fmt::format("rank {}: ", rank) : ""));
  }
  return PLX_SUCCESS;
}

const char* lane_schedule_name(LaneSchedule lanes) {
  switch (lanes) {
    case LaneSchedule::Ring: return "ring";
    case LaneSchedule::Halving: return "halving";
    case LaneSchedule::Auto: break;
  }
  return "auto";
}

plx_result_t lane_schedule_from_env(int rank, LaneSchedule* out) {
  return parse_lane_schedule(config_string("PLEXUS_HIERARCHICAL_LANES").value_or(""), rank, out);
}

std::string format_algo_overrides(const AlgoOverrides& overrides) {
  std::string out;
  for (size_t c = 0; c < kCollectiveCount; ++c) {
    if (!overrides.forced[c]) continue;
    if (!out.empty()) out += ',';
    out += fmt::format("{}:{}", collective_name(static_cast<Collective>(c)),
                       algorithm_name(*overrides.forced[c]));
  }
  return out;
}

}  // namespace plexus::comm
