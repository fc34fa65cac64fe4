// stop_request.cpp - SIGTERM/SIGINT handlers that only record the request (stop_request.h).
#include "engine/train/stop_request.h"

#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace plexus::engine {

namespace {

std::atomic<int> g_signal{0};  // the first stop signal, 0 if none
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

extern "C" void on_stop_signal(int signo) {
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

}  // namespace plexus::engine
