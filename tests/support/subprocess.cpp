#include "tests/support/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace plexus::test {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point deadline_after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

int ms_until(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_ = fork();
  if (pid_ == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (const std::string& entry : extra_env) putenv(strdup(entry.c_str()));
    execvp(args[0], args.data());
    std::fprintf(stderr, "exec %s failed\n", args[0]);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

Subprocess::~Subprocess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool Subprocess::pump(int timeout_ms) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  int ready = poll(fds, 2, timeout_ms);  // negative fds are ignored by poll
  if (ready <= 0) return true;
  char buffer[65536];
  int* fd_of[2] = {&out_fd_, &err_fd_};
  std::string* text_of[2] = {&result_.out, &result_.err};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    ssize_t n = read(*fd_of[i], buffer, sizeof(buffer));
    if (n > 0) {
      text_of[i]->append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close(*fd_of[i]);
      *fd_of[i] = -1;
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

bool Subprocess::wait_for_stdout(const std::string& needle, int times, double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  while (count_occurrences(result_.out, needle) < static_cast<size_t>(times)) {
    if (Clock::now() >= deadline || !pump(ms_until(deadline))) {
      return count_occurrences(result_.out, needle) >= static_cast<size_t>(times);
    }
  }
  return true;
}

ProcessResult Subprocess::wait(double timeout_s) {
  if (pid_ <= 0) return result_;
  const auto deadline = deadline_after(timeout_s);
  while (Clock::now() < deadline && pump(ms_until(deadline))) {
  }
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    usleep(10000);  // pipes closed but not exited yet: a short, bounded wait
  }
  if (got == 0) {
    result_.timed_out = true;
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    for (int i = 0; i < 10 && pump(100); ++i) {  // what is left in the pipes, bounded
    }
  }
  pid_ = -1;
  result_.exited = WIFEXITED(status);
  result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result_;
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::string>& extra_env) {
  Subprocess process(argv, extra_env);
  return process.wait(timeout_s);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!stat || !std::getline(stat, content)) return false;
  // "PID (comm) STATE ...": the state follows the last ')'.
  size_t paren = content.rfind(')');
  return paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] != 'Z';
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
    size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env(entry.path() / "environ", std::ios::binary);
    for (std::string var; std::getline(env, var, '\0');) {
      if (var == name_equals_value) {
        found.push_back(static_cast<pid_t>(std::stoi(name)));
        break;
      }
    }
  }
  return found;
}

}  // namespace plexus::test
