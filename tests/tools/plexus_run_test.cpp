// plexus_run_test.cpp - runs the built plexus-run binary over small /bin/sh ranks and checks the
// environment it gives each rank, the "[R] " output prefixing, the failure and signal handling
// (other ranks terminated after the grace period, signals forwarded, a SIGKILLed launcher taking
// its ranks with it) and the usage errors (exit code 2).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/subprocess.h"
#include "topology/host.h"

#ifndef PLEXUS_RUN_PATH
#error "PLEXUS_RUN_PATH must name the plexus-run binary"
#endif

namespace plexus::test {
namespace {

const std::string kRun = PLEXUS_RUN_PATH;

// plexus-run ARGS... -- /bin/sh -c SCRIPT
std::vector<std::string> run_sh(std::vector<std::string> args, const std::string& script) {
  std::vector<std::string> argv{kRun};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const char* s : {"--", "/bin/sh", "-c"}) argv.push_back(s);
  argv.push_back(script);
  return argv;
}

bool contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// A fresh directory for pid files.
std::string temp_dir() {
  std::string pattern = ::testing::TempDir() + "plexus_run_test_XXXXXX";
  char* made = mkdtemp(pattern.data());
  return made != nullptr ? std::string(made) : std::string("/tmp");
}

pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = -1;
  in >> pid;
  return pid;
}

// Waits (at most timeout_s) until the process is gone or a zombie.
bool gone_within(pid_t pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (process_alive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

TEST(PlexusRun, EveryRankSeesItsEnvironment) {
  auto r = run_process(run_sh({"-n", "4", "--master-port", "23456"},
                              "echo rank=$PLEXUS_RANK size=$PLEXUS_WORLD_SIZE "
                              "local=$PLEXUS_LOCAL_RANK/$PLEXUS_LOCAL_WORLD_SIZE "
                              "addr=$PLEXUS_MASTER_ADDR port=$PLEXUS_MASTER_PORT"));
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = split_lines(r.out);
  EXPECT_EQ(lines.size(), 4u) << r.out;
  for (int k = 0; k < 4; ++k) {
    std::ostringstream line;  // not "[" + std::to_string(k): GCC 12 warns -Wrestrict there
    line << "[" << k << "] rank=" << k << " size=4 local=" << k << "/4 addr=127.0.0.1 port=23456";
    const std::string expected = line.str();
    EXPECT_TRUE(contains(lines, expected)) << "missing '" << expected << "' in:\n" << r.out;
  }
}

TEST(PlexusRun, DefaultPortIsSharedAndValid) {
  auto r = run_process(run_sh({"-n", "3"}, "echo port=$PLEXUS_MASTER_PORT"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  std::string port = lines[0].substr(lines[0].find("port=") + 5);
  for (const auto& line : lines) EXPECT_EQ(line.substr(line.find("port=") + 5), port) << r.out;
  int value = std::stoi(port);
  EXPECT_GT(value, 0);
  EXPECT_LE(value, 65535);
}

TEST(PlexusRun, RankZeroAloneInheritsAListenerOnThePort) {
  // Rank 0 gets PLEXUS_RENDEZVOUS_FD naming a socket that already listens on
  // PLEXUS_MASTER_PORT (state 0A in /proc/net/tcp, the socket's inode in the descriptor's link),
  // so nothing can take the port before its rendezvous serves it; no other rank has the
  // variable, and an inherited value is dropped. A given --master-port gets no listener.
  const std::string script =
      "if [ -z \"$PLEXUS_RENDEZVOUS_FD\" ]; then echo none; exit 0; fi; "
      "inode=$(readlink /proc/self/fd/$PLEXUS_RENDEZVOUS_FD | tr -dc 0-9); "
      "port=$(printf '%04X' $PLEXUS_MASTER_PORT); "
      "awk -v i=\"$inode\" -v p=\":$port\" "
      "'$10 == i && $4 == \"0A\" && substr($2, length($2) - 4) == p {f = 1} "
      "END {print f ? \"listening\" : \"not listening\"}' /proc/net/tcp";
  std::vector<std::string> argv{"/usr/bin/env", "PLEXUS_RENDEZVOUS_FD=9"};
  auto sh = run_sh({"-n", "3"}, script);
  argv.insert(argv.end(), sh.begin(), sh.end());
  auto r = run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = split_lines(r.out);
  EXPECT_EQ(lines.size(), 3u) << r.out;
  EXPECT_TRUE(contains(lines, "[0] listening")) << r.out;
  EXPECT_TRUE(contains(lines, "[1] none")) << r.out;
  EXPECT_TRUE(contains(lines, "[2] none")) << r.out;

  auto given = run_process(run_sh({"-n", "2", "--master-port", "23457"}, script));
  ASSERT_EQ(given.exit_code, 0) << given.err;
  lines = split_lines(given.out);
  EXPECT_TRUE(contains(lines, "[0] none")) << given.out;
  EXPECT_TRUE(contains(lines, "[1] none")) << given.out;
}

TEST(PlexusRun, ThreadCountsDefaultOnlyWhereUnset) {
  // The host's physical cores (hwloc) over the ranks, as plexus-train's BLAS threads.
  const int cores = plexus::topology::physical_core_count();
  std::vector<std::string> argv{"/usr/bin/env", "-u", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS=7"};
  auto sh = run_sh({"-n", "2"}, "echo omp=$OMP_NUM_THREADS blas=$OPENBLAS_NUM_THREADS");
  argv.insert(argv.end(), sh.begin(), sh.end());
  auto r = run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string omp = std::to_string(std::max(1, cores / 2));
  EXPECT_TRUE(contains(split_lines(r.out), "[0] omp=" + omp + " blas=7")) << r.out;
  EXPECT_TRUE(contains(split_lines(r.out), "[1] omp=" + omp + " blas=7")) << r.out;
}

// libfabric links libinfinipath (PSM), whose constructor catches SIGTERM and calls exit() from
// the handler unless IPATH_NO_BACKTRACE is set; plexus-run switches it (and libpsm2's) off,
// keeping a value the user gave.
TEST(PlexusRun, PsmSignalHandlersAreSwitchedOffUnlessSet) {
  std::vector<std::string> argv{"/usr/bin/env", "-u", "IPATH_NO_BACKTRACE", "HFI_NO_BACKTRACE=0"};
  auto sh = run_sh({"-n", "2"}, "echo ipath=$IPATH_NO_BACKTRACE hfi=$HFI_NO_BACKTRACE");
  argv.insert(argv.end(), sh.begin(), sh.end());
  auto r = run_process(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(split_lines(r.out), "[0] ipath=1 hfi=0")) << r.out;
  EXPECT_TRUE(contains(split_lines(r.out), "[1] ipath=1 hfi=0")) << r.out;
}

TEST(PlexusRun, PrefixesStdoutAndStderrSeparately) {
  auto r = run_process(run_sh({"-n", "2"}, "echo out$PLEXUS_RANK; echo err$PLEXUS_RANK >&2; "
                                           "printf tail$PLEXUS_RANK"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = split_lines(r.out);
  auto err = split_lines(r.err);
  for (std::string k : {"0", "1"}) {
    EXPECT_TRUE(contains(out, "[" + k + "] out" + k)) << r.out;
    EXPECT_TRUE(contains(out, "[" + k + "] tail" + k)) << "final partial line lost:\n" << r.out;
    EXPECT_TRUE(contains(err, "[" + k + "] err" + k)) << r.err;
    EXPECT_FALSE(contains(out, "[" + k + "] err" + k)) << r.out;
  }
}

TEST(PlexusRun, NoPrefixCopiesOutputUnchanged) {
  auto r = run_process(run_sh({"-n", "2", "--no-prefix"}, "echo line$PLEXUS_RANK"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = split_lines(r.out);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, (std::vector<std::string>{"line0", "line1"}));
}

TEST(PlexusRun, LinesOfDifferentRanksNeverInterleave) {
  // Each rank writes 2000 lines of 300 copies of its rank digit, in small writes.
  auto r = run_process(run_sh({"-n", "4"}, "line=$(printf \"%0300d\" 0 | tr 0 $PLEXUS_RANK); "
                                           "i=0; while [ $i -lt 2000 ]; do echo $line; "
                                           "i=$((i+1)); done"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = split_lines(r.out);
  EXPECT_EQ(lines.size(), 8000u);
  size_t bad = 0;
  for (const auto& line : lines) {
    if (line.size() != 304 || line[0] != '[' || line.substr(2, 2) != "] " ||
        line.find_first_not_of(line[1], 4) != std::string::npos) {
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << "lines not of the form '[R] RRR...R'";
}

TEST(PlexusRun, FailingRankMakesOthersTerminateAfterGrace) {
  std::string dir = temp_dir();
  auto r = run_process(run_sh({"-n", "3", "--grace-seconds", "1"},
                              "echo $$ > " + dir + "/pid$PLEXUS_RANK; "
                              "if [ $PLEXUS_RANK = 1 ]; then sleep 0.3; exit 3; fi; "
                              "exec sleep 600"),
                       30.0);
  ASSERT_FALSE(r.timed_out);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("plexus-run: rank 1 exited with code 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sending SIGTERM to ranks 0, 2"), std::string::npos) << r.err;
  for (int k : {0, 2}) {
    pid_t pid = read_pid(dir + "/pid" + std::to_string(k));
    ASSERT_GT(pid, 0);
    EXPECT_FALSE(process_alive(pid)) << "rank " << k << " (pid " << pid << ") survived";
  }
}

TEST(PlexusRun, RankKilledBySignalIsReported) {
  auto r = run_process(run_sh({"-n", "2"}, "if [ $PLEXUS_RANK = 1 ]; then kill -9 $$; fi"));
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_NE(r.err.find("plexus-run: rank 1 killed by signal SIGKILL (9)"), std::string::npos)
      << r.err;
}

TEST(PlexusRun, SigtermReachesEveryRank) {
  Subprocess launcher(run_sh({"-n", "2"}, "trap 'echo rank $PLEXUS_RANK got TERM; exit 0' TERM; "
                                          "sleep 600 & echo ready; wait"));
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 20.0));
  kill(launcher.pid(), SIGTERM);
  auto r = launcher.wait(20.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // every rank stopped cleanly (a preemption handled)
  auto out = split_lines(r.out);
  EXPECT_TRUE(contains(out, "[0] rank 0 got TERM")) << r.out;
  EXPECT_TRUE(contains(out, "[1] rank 1 got TERM")) << r.out;
}

TEST(PlexusRun, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  Subprocess launcher(run_sh({"-n", "2", "--term-grace-seconds", "1"},
                             "trap 'echo rank $PLEXUS_RANK ignores TERM' TERM; echo ready; "
                             "while true; do sleep 1; done"));
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 20.0));
  kill(launcher.pid(), SIGTERM);
  auto r = launcher.wait(30.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("sending SIGKILL to ranks 0, 1"), std::string::npos) << r.err;
}

TEST(PlexusRun, SecondSigintKills) {
  Subprocess launcher(run_sh({"-n", "2"}, "trap 'echo got INT' INT; echo ready; "
                                          "while true; do sleep 1; done"));
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 20.0));
  kill(launcher.pid(), SIGINT);
  ASSERT_TRUE(launcher.wait_for_stdout("got INT", 2, 20.0));
  kill(launcher.pid(), SIGINT);
  auto r = launcher.wait(20.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_NE(r.err.find("second SIGINT"), std::string::npos) << r.err;
}

TEST(PlexusRun, KilledLauncherTakesItsRanksAlong) {
  std::string dir = temp_dir();
  Subprocess launcher(
      run_sh({"-n", "2"}, "echo $$ > " + dir + "/pid$PLEXUS_RANK; echo ready; exec sleep 600"));
  ASSERT_TRUE(launcher.wait_for_stdout("ready", 2, 20.0));
  kill(launcher.pid(), SIGKILL);
  launcher.wait(20.0);
  for (int k : {0, 1}) {
    pid_t pid = read_pid(dir + "/pid" + std::to_string(k));
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(gone_within(pid, 10.0)) << "rank " << k << " (pid " << pid << ") survived";
  }
}

TEST(PlexusRun, ProgramNotFoundIsAUsageError) {
  auto r = run_process({kRun, "-n", "2", "--", "plexus-no-such-program"}, 20.0);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot run 'plexus-no-such-program': No such file or directory"),
            std::string::npos)
      << r.err;
}

TEST(PlexusRun, BadUsageExitsTwo) {
  auto zero = run_process({kRun, "-n", "0", "--", "true"}, 20.0);
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("-n 0 not in 1..4096"), std::string::npos) << zero.err;
  auto missing_n = run_process({kRun, "--", "true"}, 20.0);
  EXPECT_EQ(missing_n.exit_code, 2);
  EXPECT_NE(missing_n.err.find("required"), std::string::npos) << missing_n.err;
  auto no_program = run_process({kRun, "-n", "2"}, 20.0);
  EXPECT_EQ(no_program.exit_code, 2);
  EXPECT_NE(no_program.err.find("no PROGRAM given"), std::string::npos) << no_program.err;
  auto unknown = run_process({kRun, "-n", "2", "--frobnicate", "--", "true"}, 20.0);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown option '--frobnicate'"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace plexus::test
