#include "tools/plexus-run/signal_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace plexus::launcher {
namespace {

int g_pipe[2] = {-1, -1};
constexpr int kHandled[] = {SIGINT, SIGTERM, SIGCHLD};

extern "C" void on_signal(int signo) {
  int saved_errno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  // A full pipe drops the byte; SIGCHLD is re-derived by reaping, and 64 KiB of pending
  // SIGINT/SIGTERM bytes already say everything.
  ssize_t ignored = write(g_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace

bool SignalPipe::install() {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : kHandled) {
    if (sigaction(sig, &sa, nullptr) != 0) return false;
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  return sigaction(SIGPIPE, &ignore, nullptr) == 0;
}

int SignalPipe::fd() const { return g_pipe[0]; }

int SignalPipe::next_signal() {
  unsigned char byte = 0;
  for (;;) {
    ssize_t n = read(g_pipe[0], &byte, 1);
    if (n == 1) return byte;
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

void reset_signals_in_child(const sigset_t& saved_mask) {
  for (int sig : kHandled) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
}

}  // namespace plexus::launcher
