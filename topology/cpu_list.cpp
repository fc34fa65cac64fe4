#include "topology/cpu_list.h"

namespace plexus::topology {

namespace {
// Reads a decimal number below 2^20 (far above any CPU count) at *pos.
std::optional<uint32_t> number(std::string_view text, size_t* pos) {
  uint32_t value = 0;
  size_t start = *pos;
  while (*pos < text.size() && text[*pos] >= '0' && text[*pos] <= '9') {
    value = value * 10 + static_cast<uint32_t>(text[*pos] - '0');
    if (value >= (1u << 20)) return std::nullopt;
    ++*pos;
  }
  if (*pos == start) return std::nullopt;
  return value;
}
}  // namespace

std::optional<uint32_t> cpu_list_size(std::string_view text) {
  auto ranges = cpu_list_ranges(text);
  if (!ranges) return std::nullopt;
  uint32_t total = 0;
  for (const auto& [first, last] : *ranges) total += last - first + 1;
  return total;
}

std::optional<std::vector<std::pair<uint32_t, uint32_t>>> cpu_list_ranges(std::string_view text) {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  size_t pos = 0;
  std::optional<uint32_t> previous_last;
  while (pos < text.size()) {
    auto first = number(text, &pos);
    if (!first) return std::nullopt;
    uint32_t last = *first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      auto end = number(text, &pos);
      if (!end || *end < *first) return std::nullopt;
      last = *end;
    }
    if (previous_last && *first <= *previous_last) return std::nullopt;
    previous_last = last;
    ranges.emplace_back(*first, last);
    if (pos < text.size()) {
      if (text[pos] != ',' || pos + 1 == text.size()) return std::nullopt;
      ++pos;
    }
  }
  return ranges;
}

}  // namespace plexus::topology
