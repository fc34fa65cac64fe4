// config_read.cpp - see config_read.h.
#include "topology/settings/config_read.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "topology/settings/config_table.h"

namespace plexus {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> config_text(std::string_view name) {
  const ConfigVariable* var = find_config_variable(name);
  if (!var) return std::nullopt;
  if (auto value = env_value(std::string(name).c_str())) return value;
  if (var->default_value.empty()) return std::nullopt;
  return std::string(var->default_value);
}

std::optional<std::string> config_text_as_set(std::string_view name) {
  if (!find_config_variable(name)) return std::nullopt;
  const char* value = std::getenv(std::string(name).c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

plx_result_t parse_integer_text(std::string_view name, std::string_view text, int64_t min,
                                int64_t max, int64_t* out, std::string* error) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    *error = fmt::format("{}={} is not an integer in {}..{}", name, text, min, max);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  *out = value;
  return PLX_SUCCESS;
}

plx_result_t parse_bytes_text(std::string_view name, std::string_view text, size_t min,
                              size_t max, size_t* out, std::string* error) {
  std::string_view digits = text;
  uint64_t scale = 1;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  const bool parsed = !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
  if (!parsed || value > std::numeric_limits<uint64_t>::max() / scale || value * scale < min ||
      value * scale > max) {
    *error = fmt::format("{}={} is not a byte count in {}..{} (suffixes K, M, G allowed)", name,
                         text, min, max);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  *out = static_cast<size_t>(value * scale);
  return PLX_SUCCESS;
}

namespace {

// config_text(name) parsed by `parse` (parse_integer_text or parse_bytes_text).
template <typename T, typename Parse>
plx_result_t read_config(std::string_view name, T min, T max, std::optional<T>* out,
                         std::string* error, Parse parse) {
  if (!find_config_variable(name)) {
    *error = fmt::format("{} is not in the config table", name);
    return PLX_ERROR_INTERNAL;
  }
  auto text = config_text(name);
  if (!text) {
    *out = std::nullopt;
    return PLX_SUCCESS;
  }
  T value{};
  if (plx_result_t rc = parse(name, *text, min, max, &value, error); rc != PLX_SUCCESS) return rc;
  *out = value;
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t read_config_integer(std::string_view name, int64_t min, int64_t max,
                                 std::optional<int64_t>* out, std::string* error) {
  return read_config(name, min, max, out, error, parse_integer_text);
}

plx_result_t read_config_bytes(std::string_view name, size_t min, size_t max,
                               std::optional<size_t>* out, std::string* error) {
  return read_config(name, min, max, out, error, parse_bytes_text);
}

}  // namespace plexus
