// log.cpp - the stderr log behind log.h.
#include "comm/base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "comm/base/config.h"

namespace plexus {

namespace {

std::atomic<int> g_level{-1};  // -1: not read yet
std::atomic<int> g_rank{-1};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Warn: return "WARN";
    case LogLevel::Info: return "INFO";
    case LogLevel::Trace: return "TRACE";
  }
  return "?";
}

}  // namespace

void refresh_log_level() {
  LogLevel level = LogLevel::Warn;
  std::string bad;
  if (config_log_level(&level, &bad) != PLX_SUCCESS) {
    g_level.store(static_cast<int>(LogLevel::Warn));
    std::fprintf(stderr, "plexus rank %d: WARN %s; using WARN\n", g_rank.load(), bad.c_str());
    return;
  }
  g_level.store(static_cast<int>(level));
}

LogLevel log_level() {
  int level = g_level.load(std::memory_order_relaxed);
  if (level < 0) {
    refresh_log_level();
    level = g_level.load();
  }
  return static_cast<LogLevel>(level);
}

void set_log_rank(int rank) { g_rank.store(rank); }

void log_line(LogLevel level, std::string_view text) {
  static std::mutex mutex;  // keeps lines from two threads whole
  static const auto start = std::chrono::steady_clock::now();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int rank = g_rank.load();
  const std::string who = rank >= 0 ? std::to_string(rank) : "?";
  const std::string line =
      fmt::format("plexus rank {}: {} {:.3f}s {}\n", who, level_name(level), seconds, text);
  std::lock_guard<std::mutex> lock(mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace plexus
