// config.cpp - see config.h.
#include "comm/base/config.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>
#include <mutex>

#include "comm/base/error.h"
#include "topology/settings/unknown_settings.h"

extern char** environ;

namespace plexus {

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// set_error(rc, *error) for a failed read, PLX_SUCCESS otherwise.
plx_result_t reported(plx_result_t rc, std::string* error) {
  return rc == PLX_SUCCESS ? rc : set_error(rc, std::move(*error));
}

}  // namespace

plx_result_t parse_integer_variable(std::string_view name, std::string_view text, int64_t min,
                                    int64_t max, int64_t* out) {
  std::string error;
  return reported(parse_integer_text(name, text, min, max, out, &error), &error);
}

plx_result_t config_integer(std::string_view name, int64_t min, int64_t max,
                            std::optional<int64_t>* out) {
  std::string error;
  return reported(read_config_integer(name, min, max, out, &error), &error);
}

plx_result_t config_bytes(std::string_view name, size_t min, size_t max,
                          std::optional<size_t>* out) {
  std::string error;
  return reported(read_config_bytes(name, min, max, out, &error), &error);
}

std::optional<std::string> config_string(std::string_view name) { return config_text(name); }

plx_result_t config_log_level(LogLevel* out, std::string* why) {
  const std::string text = upper(config_text("PLEXUS_DEBUG").value_or("WARN"));
  if (text == "WARN") *out = LogLevel::Warn;
  else if (text == "INFO") *out = LogLevel::Info;
  else if (text == "TRACE") *out = LogLevel::Trace;
  else {
    *why = fmt::format("PLEXUS_DEBUG={} is not one of WARN, INFO, TRACE",
                       env_value("PLEXUS_DEBUG").value_or(""));
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  return PLX_SUCCESS;
}

plx_result_t config_timeout_ms(int* out) {
  std::optional<int64_t> value;
  PLX_CHECK(config_integer("PLEXUS_TIMEOUT_MS", 1, std::numeric_limits<int>::max(), &value));
  *out = static_cast<int>(value.value_or(300000));
  return PLX_SUCCESS;
}

plx_result_t config_chunk_bytes(size_t* out) {
  std::optional<size_t> value;
  PLX_CHECK(config_bytes("PLEXUS_CHUNK_BYTES", 1, size_t{1} << 40, &value));
  *out = value.value_or(size_t{1} << 20);
  return PLX_SUCCESS;
}

plx_result_t config_spin_us(int* out) {
  std::optional<int64_t> value;
  PLX_CHECK(config_integer("PLEXUS_SPIN_US", 0, 1000000, &value));
  *out = static_cast<int>(value.value_or(200));
  return PLX_SUCCESS;
}

void report_unknown_settings() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& line : unknown_setting_lines(environ))
      log_message(LogLevel::Warn, "{}", line);
  });
}

}  // namespace plexus
