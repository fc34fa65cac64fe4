#include "tests/support/multiprocess.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

namespace plexus::test {

int free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::vector<RankOutcome> run_ranks(int n, const std::function<int(int rank)>& body,
                                   double timeout_s, const EnvList& env) {
  const std::string port = std::to_string(free_tcp_port());
  // Like plexus-run: a random job token per run, so only these children can join (a test that
  // wants another token, or none, overrides or unsets it in `env` or the body).
  std::random_device random;
  const std::string token = fmt::format("{:08x}{:08x}{:08x}{:08x}", random(), random(), random(),
                                        random());
  std::fflush(stdout);
  std::fflush(stderr);
  // A start gate: every child waits until all are forked. A rank that ran at once could make
  // this process's own threads busy (the rendezvous server plx_get_unique_id started here, say)
  // while the next fork copies it; a lock one of them held at that moment (the sanitizers'
  // allocator has no fork handlers) would then stay locked forever in the new child.
  int gate[2] = {-1, -1};
  if (pipe2(gate, O_CLOEXEC) != 0) gate[0] = gate[1] = -1;  // no exec'ed process keeps it
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      if (gate[1] >= 0) {
        close(gate[1]);
        char byte;
        while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
        }
        close(gate[0]);  // EOF: the parent closed its end after the last fork
      }
      setenv("PLEXUS_RANK", std::to_string(r).c_str(), 1);
      setenv("PLEXUS_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("PLEXUS_LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("PLEXUS_LOCAL_WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("PLEXUS_MASTER_ADDR", "127.0.0.1", 1);
      setenv("PLEXUS_MASTER_PORT", port.c_str(), 1);
      setenv("PLEXUS_JOB_TOKEN", token.c_str(), 1);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      int code = 1;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: uncaught exception: %s\n", r, e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(code);
    }
    pids[r] = pid;
  }
  if (gate[1] >= 0) {
    close(gate[1]);
    close(gate[0]);
  }
  std::vector<RankOutcome> out(n);
  for (int r = 0; r < n; ++r) out[r].rank = r;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int remaining = n;
  while (remaining > 0) {
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        out[r].exited = WIFEXITED(status);
        out[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        out[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        pids[r] = -1;
        --remaining;
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r) {
        if (pids[r] < 0) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        out[r].timed_out = true;
        pids[r] = -1;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

bool all_passed(const std::vector<RankOutcome>& outcomes, std::string* why) {
  bool ok = true;
  std::string text;
  for (const auto& o : outcomes) {
    if (o.exited && o.exit_code == 0) continue;
    ok = false;
    text += "rank " + std::to_string(o.rank) + ": ";
    if (o.timed_out) text += "timed out";
    else if (o.exited) text += "exit code " + std::to_string(o.exit_code);
    else text += "killed by signal " + std::to_string(o.signal);
    text += "; ";
  }
  if (why) *why = text;
  return ok;
}

int rank_failure(int rank, const std::string& message) {
  std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
  return 1;
}

}  // namespace plexus::test
