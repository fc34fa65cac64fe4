// subprocess.h - runs a command (plexus-run, plexus-bench, plexus-train) for a test and
// captures its output.
//
// The command's stdout and stderr are read separately until it exits. Every wait is bounded: a
// command still running at its deadline is SIGKILLed and reported as timed out.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace plexus::test {

struct ProcessResult {
  bool exited = false;     // exited normally
  int exit_code = -1;      // valid when exited
  int signal = 0;          // the signal that killed it, when !exited
  bool timed_out = false;  // killed by us at the deadline
  std::string out;         // everything written to stdout
  std::string err;         // everything written to stderr
};

class Subprocess {
 public:
  // Starts argv[0] (PATH lookup) with the current environment plus extra_env ("NAME=VALUE"
  // entries, which override); stdin is /dev/null.
  explicit Subprocess(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env = {});
  ~Subprocess();  // SIGKILLs and reaps the process if it is still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // Reads output until stdout contains `needle` `times` times, the process exits or timeout_s
  // passes. Returns whether the text was seen.
  bool wait_for_stdout(const std::string& needle, int times, double timeout_s);
  // Reads output until the process exits (SIGKILL at timeout_s) and returns the result.
  ProcessResult wait(double timeout_s);
  // What the process wrote to stdout and stderr so far.
  std::string output_so_far() const { return result_.out + result_.err; }

 private:
  // Reads what is available, waiting up to timeout_ms; returns false once both pipes hit EOF.
  bool pump(int timeout_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  ProcessResult result_;
};

// Starts argv, waits for it (bounded) and returns the result.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s = 60.0,
                          const std::vector<std::string>& extra_env = {});

// Splits text into lines (without the '\n').
std::vector<std::string> split_lines(const std::string& text);

// True if a process with this pid exists and is not a zombie (reads /proc/PID/stat).
bool process_alive(pid_t pid);

// Direct children of `parent` whose environment holds the entry NAME=VALUE (read from /proc).
std::vector<pid_t> children_with_env(pid_t parent, const std::string& name_equals_value);

}  // namespace plexus::test
