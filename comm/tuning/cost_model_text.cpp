// cost_model_text.cpp - PLEXUS_COST_MODEL's text (cost_model_text.h).
#include "comm/tuning/cost_model_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "comm/base/error.h"
#include "comm/base/trim.h"

namespace plexus::comm {

// The largest value PLEXUS_COST_MODEL takes (microseconds or nanoseconds per byte).
constexpr double kMaxCostValue = 1e6;

plx_result_t parse_cost_model(std::string_view text, int rank, CostParams* out) {
  const auto fail = [&](const std::string& why) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("PLEXUS_COST_MODEL=\"{}\": rank {}: {}; expected "
                                 "alpha_us,beta_ns_per_byte,gamma_ns_per_byte"
                                 "[,inter_alpha_us,inter_beta_ns_per_byte], three or five "
                                 "non-negative numbers, e.g. 2.5,0.1,0.05 or 2.5,0.1,0.05,25,4",
                                 text, rank, why));
  };
  static constexpr const char* kNames[] = {"alpha_us", "beta_ns_per_byte", "gamma_ns_per_byte",
                                           "inter_alpha_us", "inter_beta_ns_per_byte"};
  const size_t given = static_cast<size_t>(std::count(text.begin(), text.end(), ',')) + 1;
  if (given != 3 && given != 5) {
    return fail(fmt::format("{} value{} given", given, given == 1 ? "" : "s"));
  }
  double values[5] = {0, 0, 0, 0, 0};
  size_t begin = 0;
  for (size_t i = 0; i < given; ++i) {
    const size_t end = i + 1 < given ? text.find(',', begin) : text.size();
    const std::string_view item = trim(text.substr(begin, end - begin));
    begin = end + 1;
    const char* last = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(item.data(), last, values[i]);
    if (item.empty() || ec != std::errc() || ptr != last || !std::isfinite(values[i]) ||
        values[i] < 0) {
      return fail(fmt::format("{} '{}' is not a non-negative number", kNames[i], item));
    }
    // A microsecond or nanosecond count past a million (one second per message or a millisecond
    // per byte) describes no network and would make every prediction meaningless.
    if (values[i] > kMaxCostValue) {
      return fail(fmt::format("{} '{}' is more than {:g}", kNames[i], item, kMaxCostValue));
    }
  }
  // Five values describe a second level between hosts: an unbounded link there (beta 0, or a
  // value so small that it is 0 in seconds per byte) would silently leave one level for every
  // host.
  if (given == 5 && values[4] * 1e-9 == 0) {
    return fail(fmt::format("inter_beta_ns_per_byte is {}, but five values describe a network "
                            "between hosts (give three values for one level)",
                            values[4] == 0 ? "0" : "too small to count"));
  }
  *out = CostParams{values[0] * 1e-6, values[1] * 1e-9, values[2] * 1e-9, values[3] * 1e-6,
                    values[4] * 1e-9};
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
