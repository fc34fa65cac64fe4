#include "tools/plexus-run/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "tools/plexus-run/signal_pipe.h"

namespace plexus::launcher {
namespace {

// Closes the descriptors it holds when it goes out of scope.
struct FdPair {
  int fd[2] = {-1, -1};
  ~FdPair() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  int release(int i) {
    int f = fd[i];
    fd[i] = -1;
    return f;
  }
};

// Child side, between fork and exec: only async-signal-safe calls. Never returns.
[[noreturn]] void exec_child(pid_t launcher, const sigset_t& saved_mask, int out_w, int err_w,
                             int status_w, int inherit_fd, char* const argv[],
                             char* const envp[]) {
  reset_signals_in_child(saved_mask);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int failure = 0;
  if (getppid() != launcher) failure = ESRCH;  // the launcher died before PDEATHSIG was set
  int devnull = open("/dev/null", O_RDONLY);
  if (failure == 0 && (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 ||
                       dup2(out_w, STDOUT_FILENO) < 0 || dup2(err_w, STDERR_FILENO) < 0)) {
    failure = errno;
  }
  if (failure == 0 && inherit_fd >= 0 && fcntl(inherit_fd, F_SETFD, 0) != 0) failure = errno;
  if (failure == 0) {
    execvpe(argv[0], argv, envp);
    failure = errno;
  }
  ssize_t ignored = write(status_w, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

// Waits (at most 30 s; exec or _exit follow the fork at once) for the exec status pipe: EOF
// means exec succeeded, an int is the child's errno.
int read_exec_status(int fd) {
  int child_errno = 0;
  size_t got = 0;
  pollfd p{fd, POLLIN, 0};
  while (got < sizeof(child_errno)) {
    int ready = poll(&p, 1, 30000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ETIMEDOUT;
    ssize_t n = read(fd, reinterpret_cast<char*>(&child_errno) + got, sizeof(child_errno) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return got == 0 ? 0 : EIO;
    got += static_cast<size_t>(n);
  }
  return child_errno;
}

}  // namespace

SpawnResult spawn_rank(int rank, const std::vector<std::string>& command,
                       const std::vector<std::string>& env, int inherit_fd) {
  SpawnResult result;
  // Everything the child needs is built before fork: the child must not allocate.
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  FdPair out, err, status;
  if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0 ||
      pipe2(status.fd, O_CLOEXEC) != 0) {
    result.error = fmt::format("rank {}: pipe failed: {}", rank, strerror(errno));
    return result;
  }
  // Block every signal across fork so no handler runs in the child before it resets them.
  sigset_t all, saved;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &saved);
  const pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    exec_child(launcher, saved, out.fd[1], err.fd[1], status.fd[1], inherit_fd, argv.data(),
               envp.data());
  }
  int fork_errno = errno;
  if (pid > 0) setpgid(pid, pid);  // also in the parent, so the group exists before any kill
  sigprocmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) {
    result.error = fmt::format("rank {}: fork failed: {}", rank, strerror(fork_errno));
    return result;
  }
  close(out.release(1));
  close(err.release(1));
  close(status.release(1));

  int child_errno = read_exec_status(status.fd[0]);
  if (child_errno != 0) {
    if (child_errno == ETIMEDOUT) kill(pid, SIGKILL);
    int ignored_status = 0;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    result.error = fmt::format("cannot run '{}': {}", command[0], strerror(child_errno));
    return result;
  }
  for (int fd : {out.fd[0], err.fd[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  result.ok = true;
  result.process = SpawnedRank{rank, pid, out.release(0), err.release(0)};
  return result;
}

void signal_rank(pid_t pid, int sig) {
  if (pid <= 0) return;
  if (kill(-pid, sig) != 0 || getpgid(pid) != pid) kill(pid, sig);
}

}  // namespace plexus::launcher
