// subprocess.h - runs a program as a child process with a time bound, capturing its output.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace plexus::test {

struct CommandResult {
  bool exited = false;     // exited normally
  int exit_code = -1;      // valid when exited
  int signal = 0;          // signal that ended it, if any
  bool timed_out = false;  // killed (SIGKILL to its process group) at the time bound
  double seconds = 0;      // wall time until it ended
  std::string output;      // stdout and stderr, interleaved as written
};

// A running child whose stdout+stderr go into a pipe. The child leads its own process group.
class Subprocess {
 public:
  explicit Subprocess(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env = {});
  ~Subprocess();  // kills the whole group if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until `needle` appears or timeout_s passes; true if it appeared.
  bool wait_for_output(const std::string& needle, double timeout_s);
  // Waits for exit up to timeout_s (then kills the group) and returns everything.
  CommandResult finish(double timeout_s);
  const std::string& output() const { return output_; }

 private:
  bool read_some(int timeout_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  double start_ = 0;
  std::string output_;
  bool eof_ = false;
};

// Runs argv to completion (bounded by timeout_s).
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::string>& extra_env = {});

// Direct children of `parent` whose environment has NAME=VALUE (read from /proc).
std::vector<pid_t> children_with_env(pid_t parent, const std::string& name_equals_value);

}  // namespace plexus::test
