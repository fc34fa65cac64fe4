#include "tools/plexus-train/gnuplot_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "engine/train/stop_request.h"

extern char** environ;

namespace plexus::train {

namespace {

constexpr const char* kNotFound =
    "gnuplot was not found on PATH (install gnuplot, e.g. apt-get install gnuplot-nox)";

constexpr std::streamoff kLogTailBytes = 4096;  // what is read of a failed gnuplot's log
constexpr size_t kSaidBytes = 400;               // what of it goes into the message

// The last `count` non-empty lines of the log's last 4 KiB, joined with " | ", control
// characters shown as '?' and cut to 400 bytes: what gnuplot said last, whatever it printed.
std::string last_lines(const std::string& path, size_t count) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(size > kLogTailBytes ? size - kLogTailBytes : 0);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r^") != std::string::npos) lines.push_back(line);
  }
  std::string text;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i) {
    text += (text.empty() ? "" : " | ") + lines[i];
  }
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (text.size() > kSaidBytes) text = "..." + text.substr(text.size() - kSaidBytes);
  return text.empty() ? "(it printed nothing)" : text;
}

// Owns the spawn attributes' file actions for the scope of one spawn.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

// Waits for `pid` up to `timeout_s`, or until SIGINT or SIGTERM asks this process to stop
// (engine/train/stop_request.h: the caller's scope); past that, SIGKILLs and reaps it. *status
// as waitpid's; false if it was killed.
bool wait_bounded(pid_t pid, double timeout_s, int* status) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const pid_t done = ::waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) {  // reaped elsewhere (SIGCHLD ignored): the caller
      *status = 0;                     // checks the image instead
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline || engine::stop_requested()) break;
    const timespec pause{0, 10'000'000};  // 10 ms
    ::nanosleep(&pause, nullptr);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return false;
}

}  // namespace

std::string run_gnuplot(const std::string& folder, const std::string& script_name,
                        const std::string& log_name, double timeout_s) {
  FileActions actions;
  // In order: the folder first, so the log's name is relative to it.
  if (posix_spawn_file_actions_addchdir_np(actions.get(), folder.c_str()) != 0 ||
      posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0) !=
          0 ||
      posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, log_name.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0600) != 0 ||
      posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO) != 0) {
    return "cannot prepare to start gnuplot: out of memory";
  }
  std::string program = "gnuplot", script = script_name;
  char* argv[] = {program.data(), script.data(), nullptr};
  pid_t pid = -1;
  if (const int err = ::posix_spawnp(&pid, "gnuplot", actions.get(), nullptr, argv, environ);
      err != 0) {
    if (err == ENOENT) return kNotFound;
    return fmt::format("cannot start gnuplot: {}", std::strerror(err));
  }
  int status = 0;
  if (!wait_bounded(pid, timeout_s, &status)) {
    if (const int signo = engine::stop_signal(); signo != 0) {
      return fmt::format("stopped by SIG{} while gnuplot ran", sigabbrev_np(signo));
    }
    return fmt::format("gnuplot ran past {:g} s and was killed", timeout_s);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  // 127: the child could not exec gnuplot (a libc that reports it only this way).
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return kNotFound;
  const std::string said = last_lines(folder + "/" + log_name, 3);
  if (WIFEXITED(status)) {
    return fmt::format("gnuplot exited with status {}: {}", WEXITSTATUS(status), said);
  }
  if (WIFSIGNALED(status)) {
    return fmt::format("gnuplot was killed by signal {} ({}): {}", WTERMSIG(status),
                       strsignal(WTERMSIG(status)), said);
  }
  return "gnuplot ended abnormally: " + said;
}

bool gnuplot_on_path() {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::string candidate = (folder.empty() ? "." : folder) + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace plexus::train
