// log.h - Plexus's debug log: one line per event on stderr, "plexus rank R: <text>".
//
// Each line also carries the seconds since the first log line of the process.
// The level comes from PLEXUS_DEBUG (WARN by default, INFO, TRACE). WARN lines are things a
// user should see (a fallback taken, a resource leaked on shutdown); INFO explains decisions and
// every error as it is detected; TRACE follows each message and completion.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace plexus {

// Ordered from least to most verbose, so "log this?" is `level <= log_level()`.
enum class LogLevel { Warn = 0, Info = 1, Trace = 2 };

// The level from PLEXUS_DEBUG, read on first use and again by refresh_log_level().
LogLevel log_level();
void refresh_log_level();

// Rank printed in the prefix ("plexus rank 3:"); -1 prints "plexus rank ?:". Set when a
// communicator is created (the most recent one wins in a process with several).
void set_log_rank(int rank);

// Writes one line if `level` is enabled.
void log_line(LogLevel level, std::string_view text);

template <typename... Args>
void log_message(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level > log_level()) return;
  log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace plexus
