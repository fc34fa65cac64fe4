// stop_request.cpp - SIGTERM/SIGINT handlers that only record the request (stop_request.h).
#include "engine/train/stop_request.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace plexus::engine {

namespace {

std::atomic<int> g_signal{0};  // the first stop signal, 0 if none
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

// Set-up (SetupStopScope): the handler ends the process after writing the prefix and stage.
std::atomic<bool> g_setup{false};
char g_setup_prefix[256] = {};
std::atomic<const char*> g_stage{"starting"};
static_assert(std::atomic<const char*>::is_always_lock_free, "the handler reads the stage");

// write(2) of a NUL-terminated string; async-signal-safe (no strlen, no stdio).
void write_stderr(const char* text) {
  size_t left = 0;
  while (text[left] != '\0') ++left;
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

// The message, then the signal's default action: the process ends when the handler returns
// (the signal is blocked until then), or at once when called outside a handler.
void end_during_setup(int signo) {
  write_stderr(g_setup_prefix);
  write_stderr(signo == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM");
  write_stderr(" during set-up (");
  write_stderr(g_stage.load());
  write_stderr("): nothing was trained or saved\n");
  signal(signo, SIG_DFL);
  raise(signo);
}

extern "C" void on_stop_signal(int signo) {
  if (g_setup.load()) {
    const int saved_errno = errno;
    end_during_setup(signo);
    errno = saved_errno;
    return;
  }
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, signo)) return;
  if (signo == SIGINT) {  // the second Ctrl-C: stop now (both calls are async-signal-safe)
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
  }
}

void install(int signo, struct sigaction* previous) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(signo, &sa, previous) != 0) {
    throw std::system_error(errno, std::generic_category(), "StopRequestScope: sigaction");
  }
}

}  // namespace

StopRequestScope::StopRequestScope() {
  if (g_installed.exchange(true)) {
    throw std::logic_error("StopRequestScope: already installed (one at a time)");
  }
  g_signal.store(0);
  bool term_installed = false;
  try {
    install(SIGTERM, &previous_term_);
    term_installed = true;
    install(SIGINT, &previous_int_);
  } catch (...) {
    if (term_installed) sigaction(SIGTERM, &previous_term_, nullptr);
    g_installed.store(false);
    throw;
  }
}

StopRequestScope::~StopRequestScope() {
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  g_signal.store(0);
  g_installed.store(false);
}

bool stop_requested() { return g_signal.load(std::memory_order_relaxed) != 0; }

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }

void clear_stop_request() { g_signal.store(0); }

SetupStopScope::SetupStopScope(const std::string& prefix) {
  if (g_setup.load()) throw std::logic_error("SetupStopScope: already installed (one at a time)");
  const size_t n = std::min(prefix.size(), sizeof(g_setup_prefix) - 1);
  std::memcpy(g_setup_prefix, prefix.data(), n);
  g_setup_prefix[n] = '\0';
  g_setup.store(true);
  if (const int signo = g_signal.load(); signo != 0) end_during_setup(signo);  // came before
}

SetupStopScope::~SetupStopScope() { g_setup.store(false); }

void set_setup_stage(const char* stage) { g_stage.store(stage != nullptr ? stage : ""); }

const char* setup_stage() { return g_stage.load(); }

}  // namespace plexus::engine
