#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace plexus::test {

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  start_ = now_s();
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    for (const std::string& kv : extra_env) putenv(strdup(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    dprintf(STDERR_FILENO, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid_, pid_);
  close(fds[1]);
  fd_ = fds[0];
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool Subprocess::read_some(int timeout_ms) {
  if (eof_ || fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  char buf[4096];
  ssize_t n = read(fd_, buf, sizeof(buf));
  if (n <= 0) {
    eof_ = true;
    return false;
  }
  output_.append(buf, static_cast<size_t>(n));
  return true;
}

bool Subprocess::wait_for_output(const std::string& needle, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (output_.find(needle) == std::string::npos) {
    if (now_s() > deadline || eof_) return output_.find(needle) != std::string::npos;
    read_some(100);
  }
  return true;
}

CommandResult Subprocess::finish(double timeout_s) {
  CommandResult r;
  const double deadline = now_s() + timeout_s;
  while (!eof_ && now_s() < deadline) read_some(100);
  int status = 0;
  while (pid_ > 0) {
    pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) break;
    if (now_s() > deadline) {
      r.timed_out = true;
      kill(-pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  while (read_some(0)) {
  }
  r.seconds = now_s() - start_;
  r.exited = WIFEXITED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  r.output = output_;
  pid_ = -1;
  return r;
}

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::string>& extra_env) {
  Subprocess p(argv, extra_env);
  return p.finish(timeout_s);
}

std::vector<pid_t> children_with_env(pid_t parent, const std::string& name_equals_value) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(env, var, '\0')) {
      if (var == name_equals_value) {
        found.push_back(static_cast<pid_t>(std::stoi(name)));
        break;
      }
    }
  }
  return found;
}

}  // namespace plexus::test
