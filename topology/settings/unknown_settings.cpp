// unknown_settings.cpp - see unknown_settings.h.
#include "topology/settings/unknown_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "topology/settings/config_table.h"

namespace plexus {

namespace {

constexpr std::string_view kPrefix = "PLEXUS_";

char fold(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

// Printable ASCII as is, anything else (newlines, escapes, UTF-8) as \xNN.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') out += c;
    else out += fmt::format("\\x{:02x}", byte);
  }
  return out;
}

std::string shown_cut(std::string_view text) {
  if (text.size() <= kMaxShownBytes) return shown(text);
  return shown(text.substr(0, kMaxShownBytes)) + "...";
}

}  // namespace

size_t setting_name_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a[0..i) and b[0..j); three rows suffice for the swap.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string_view> nearest_setting_name(std::string_view name) {
  if (name.size() > kMaxShownBytes) return std::nullopt;  // longer than any name of the table
  const size_t letters = name.size() > kPrefix.size() ? name.size() - kPrefix.size() : 0;
  const size_t limit = std::min<size_t>(3, 1 + letters / 3);
  std::optional<std::string_view> best;
  size_t best_distance = limit + 1;
  for (const ConfigVariable& var : config_variables()) {
    const size_t distance = setting_name_distance(name, var.name);
    if (distance < best_distance) {
      best = var.name;
      best_distance = distance;
    }
  }
  return best;
}

std::vector<std::string> unknown_setting_lines(const char* const* environment) {
  std::vector<std::string> lines;
  size_t unknown = 0;
  for (const char* const* entry = environment; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    if (!text.starts_with(kPrefix)) continue;
    // The value is never shown: a misspelt secret (PLEXUS_JOB_TOKN=...) must not reach a log.
    const std::string_view name = text.substr(0, text.find('='));
    if (find_config_variable(name)) continue;
    if (++unknown > kMaxUnknownLines) continue;
    const std::optional<std::string_view> nearest = nearest_setting_name(name);
    lines.push_back(fmt::format(
        "unknown setting {} ({})", shown_cut(name),
        nearest ? fmt::format("did you mean {}?", *nearest)
                : std::string("plexus-info --env lists the known ones")));
  }
  if (unknown > kMaxUnknownLines)
    lines.push_back(fmt::format("and {} more unknown PLEXUS_* settings",
                                unknown - kMaxUnknownLines));
  return lines;
}

}  // namespace plexus
