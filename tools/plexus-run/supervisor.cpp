#include "tools/plexus-run/supervisor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace plexus::launcher {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr auto kMaxPollWait = milliseconds(1000);
constexpr auto kAbandonAfterKill = std::chrono::seconds(5);
constexpr auto kDrainAfterLastExit = std::chrono::seconds(2);

Supervisor::Clock::duration seconds(double s) {
  return duration_cast<Supervisor::Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

std::string signal_description(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{} ({})", abbrev, sig) : fmt::format("signal {}", sig);
}

void launcher_message(const std::string& message) {
  std::string line = "plexus-run: " + message + "\n";
  write_fully(STDERR_FILENO, line.data(), line.size());
}

void Supervisor::add(const SpawnedRank& rank) {
  ranks_.push_back(Rank{rank.rank, rank.pid});
  std::string prefix = options_.prefix ? fmt::format("[{}] ", rank.rank) : std::string();
  streams_.push_back(Stream{rank.rank, rank.stdout_fd, LinePrefixer(prefix, STDOUT_FILENO)});
  streams_.push_back(Stream{rank.rank, rank.stderr_fd, LinePrefixer(prefix, STDERR_FILENO)});
}

int Supervisor::running_count() const {
  return static_cast<int>(std::count_if(ranks_.begin(), ranks_.end(),
                                        [](const Rank& r) { return r.running; }));
}

std::string Supervisor::running_list() const {
  std::string list;
  for (const Rank& r : ranks_) {
    if (r.running) list += (list.empty() ? "" : ", ") + std::to_string(r.rank);
  }
  return (running_count() == 1 ? "rank " : "ranks ") + list;
}

void Supervisor::signal_running(int sig) {
  for (const Rank& r : ranks_) {
    if (r.running) signal_rank(r.pid, sig);
  }
}

void Supervisor::close_stream(Stream& stream) {
  if (stream.fd < 0) return;
  stream.prefixer.finish();
  close(stream.fd);
  stream.fd = -1;
}

// Copies what is readable now (a few reads at most, so one busy rank cannot starve the others).
void Supervisor::pump(Stream& stream) {
  for (int reads = 0; reads < 16 && stream.fd >= 0; ++reads) {
    ssize_t n = read(stream.fd, buffer_.data(), buffer_.size());
    if (n > 0) {
      stream.prefixer.feed(buffer_.data(), static_cast<size_t>(n));
      if (static_cast<size_t>(n) < buffer_.size()) return;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;
    } else {
      close_stream(stream);  // EOF, or an error that will not go away
    }
  }
}

void Supervisor::pump_rank(int rank) {
  for (Stream& s : streams_) {
    if (s.rank == rank) pump(s);
  }
}

void Supervisor::report_exit(const Rank& rank, int status) {
  int code = 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    code = WEXITSTATUS(status);
    pump_rank(rank.rank);  // the rank's last words first, then the verdict
    launcher_message(fmt::format("rank {} exited with code {}", rank.rank, code));
  } else if (WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
    pump_rank(rank.rank);
    launcher_message(fmt::format("rank {} killed by signal {}", rank.rank,
                                 signal_description(WTERMSIG(status))));
  }
  if (code == 0 || first_failure_code_ != 0) return;
  first_failure_code_ = code;
  if (launcher_signal_ == 0 && !term_at_ && !kill_at_ && running_count() > 0) {
    term_at_ = Clock::now() + seconds(options_.grace_seconds);
    launcher_message(fmt::format("waiting up to {} s for {} to exit", options_.grace_seconds,
                                 running_list()));
  }
}

void Supervisor::reap() {
  for (Rank& r : ranks_) {
    if (!r.running) continue;
    int status = 0;
    pid_t got = waitpid(r.pid, &status, WNOHANG);
    if (got == r.pid || (got < 0 && errno == ECHILD)) {
      r.running = false;
      // What the rank left running in its process group (background jobs) dies with it; now,
      // while the group id cannot yet belong to anyone else.
      kill(-r.pid, SIGKILL);
      if (got == r.pid) report_exit(r, status);
    }
  }
}

void Supervisor::handle_signal(int sig) {
  if (sig != SIGINT && sig != SIGTERM) return;  // SIGCHLD: reap() runs every iteration
  if (sig == SIGINT) ++sigint_count_;
  if (launcher_signal_ == 0) launcher_signal_ = sig;
  if (running_count() == 0) return;  // only draining output: nothing to forward to
  if (sig == SIGINT && sigint_count_ >= 2) {
    launcher_message(fmt::format("second SIGINT: sending SIGKILL to {}", running_list()));
    signal_running(SIGKILL);
    term_at_.reset();
    kill_at_.reset();
    abandon_at_ = Clock::now() + kAbandonAfterKill;
    return;
  }
  launcher_message(fmt::format("received {}, forwarding it to {}", signal_description(sig),
                               running_list()));
  signal_running(sig);
  term_at_.reset();  // the ranks just got their signal; SIGKILL follows if they ignore it
  auto kill_at = Clock::now() + seconds(options_.term_grace_seconds);
  if (!kill_at_ || kill_at < *kill_at_) kill_at_ = kill_at;
}

void Supervisor::check_deadlines() {
  const auto now = Clock::now();
  if (term_at_ && now >= *term_at_) {
    term_at_.reset();
    if (running_count() > 0) {
      launcher_message(fmt::format("sending SIGTERM to {}", running_list()));
      signal_running(SIGTERM);
      kill_at_ = now + seconds(options_.kill_after_seconds);
    }
  }
  if (kill_at_ && now >= *kill_at_) {
    kill_at_.reset();
    if (running_count() > 0) {
      launcher_message(fmt::format("sending SIGKILL to {}", running_list()));
      signal_running(SIGKILL);
      abandon_at_ = now + kAbandonAfterKill;
    }
  }
}

std::optional<Supervisor::Clock::time_point> Supervisor::next_deadline() const {
  std::optional<Clock::time_point> next;
  for (const auto& d : {term_at_, kill_at_, abandon_at_, drain_until_}) {
    if (d && (!next || *d < *next)) next = d;
  }
  return next;
}

int Supervisor::run() {
  std::vector<pollfd> fds;
  std::vector<Stream*> polled;
  for (;;) {
    reap();
    check_deadlines();
    const auto now = Clock::now();
    const bool all_reaped = running_count() == 0;
    if (all_reaped && !drain_until_) drain_until_ = now + kDrainAfterLastExit;
    if (!all_reaped && abandon_at_ && now >= *abandon_at_) {
      launcher_message(fmt::format("{} did not die after SIGKILL; giving up on them",
                                   running_list()));
      break;
    }
    const bool streams_open = std::any_of(streams_.begin(), streams_.end(),
                                          [](const Stream& s) { return s.fd >= 0; });
    if (all_reaped && (!streams_open || now >= *drain_until_)) break;

    fds.clear();
    polled.clear();
    fds.push_back(pollfd{signals_.fd(), POLLIN, 0});
    for (Stream& s : streams_) {
      if (s.fd < 0) continue;
      fds.push_back(pollfd{s.fd, POLLIN, 0});
      polled.push_back(&s);
    }
    auto wait = kMaxPollWait;
    if (auto deadline = next_deadline()) {
      wait = std::clamp(duration_cast<milliseconds>(*deadline - now) + milliseconds(1),
                        milliseconds(0), kMaxPollWait);
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) {
      launcher_message(fmt::format("poll failed: {}", strerror(errno)));
      signal_running(SIGKILL);
      abandon_at_ = Clock::now() + kAbandonAfterKill;
      continue;
    }
    if (ready <= 0) continue;
    if (fds[0].revents != 0) {
      while (int sig = signals_.next_signal()) handle_signal(sig);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) pump(*polled[i - 1]);
    }
  }
  for (Stream& s : streams_) close_stream(s);
  if (first_failure_code_ != 0) return first_failure_code_;
  if (running_count() > 0) return 1;
  return 0;  // every rank exited 0, after a forwarded signal or not
}

void Supervisor::kill_all() {
  signal_running(SIGKILL);
  abandon_at_ = Clock::now() + kAbandonAfterKill;
  for (Stream& s : streams_) close_stream(s);
  while (running_count() > 0 && Clock::now() < *abandon_at_) {
    for (Rank& r : ranks_) {
      int status = 0;
      if (r.running && waitpid(r.pid, &status, WNOHANG) != 0) r.running = false;
    }
    if (running_count() > 0) usleep(10000);
  }
}

}  // namespace plexus::launcher
