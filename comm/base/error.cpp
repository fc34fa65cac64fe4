// error.cpp - the thread-local last error behind plx_get_last_error() and PLX_CHECK's log line.
#include "comm/base/error.h"

#include <utility>

#include "comm/base/log.h"

namespace plexus {

namespace {
thread_local std::string t_last_error;
}  // namespace

plx_result_t set_error(plx_result_t code, std::string message) {
  t_last_error = std::move(message);
  log_message(LogLevel::Info, "error {}: {}", plx_get_error_string(code), t_last_error);
  return code;
}

const char* last_error() { return t_last_error.c_str(); }

void clear_error() { t_last_error.clear(); }

void log_check_failure(const char* file, int line, const char* expr, plx_result_t code) {
  log_message(LogLevel::Info, "{}:{}: {} failed with {}", file, line, expr,
              plx_get_error_string(code));
}

}  // namespace plexus
