// checkpoint_lock_test.cpp - one job per checkpoint folder (engine/checkpoint/checkpoint_lock.h): a
// second lock is refused naming the holder's job, pid and host; a clean release removes the
// lock file; a file left by a killed holder (no flock on it) is taken over and its holder
// reported; a hostile lock file's bytes reach the message bounded and printable. flock(2)
// conflicts between two open files of one process, so a second CheckpointFolderLock here plays
// the second job; the killed holder is a child process ended by SIGKILL.
#include "engine/checkpoint/checkpoint_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/checkpoint/checkpoint.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string lock_error(const std::string& dir, const std::string& job) {
  try {
    CheckpointFolderLock second(dir, job, 1);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "no error";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CheckpointLock, ASecondJobIsRefusedNamingTheHolder) {
  test::TempDir dir("plexus-lock");
  {
    CheckpointFolderLock first(dir.path(), job_id(0x5eed), 4);
    EXPECT_EQ(first.path(), dir.path() + "/plexus.lock");
    EXPECT_EQ(first.previous_holder(), "");
    const std::string why = lock_error(dir.path(), job_id(0xbeef));
    EXPECT_THAT(why, HasSubstr("checkpoint folder '" + dir.path() + "' is in use by job "
                               "0000000000005eed (pid " + std::to_string(getpid()) +
                               " on host "));
    EXPECT_THAT(why, HasSubstr(", 4 ranks, since 20"));
    EXPECT_THAT(why, HasSubstr("two jobs must not share a --checkpoint-dir"));
    EXPECT_THAT(read_text(first.path()), HasSubstr("\"job\":\"0000000000005eed\""));
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/plexus.lock")) << "a clean release leaves no file";
  CheckpointFolderLock again(dir.path(), job_id(0xbeef), 1);  // free again
  EXPECT_EQ(again.previous_holder(), "");
}

// A holder killed with SIGKILL leaves its file but not its flock: the next job takes it over.
TEST(CheckpointLock, AKilledHoldersLockIsTakenOverAndReported) {
  test::TempDir dir("plexus-lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    CheckpointFolderLock held(dir.path(), job_id(0xdead), 2);
    const char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(1);
    pause();  // until SIGKILL: the destructor never runs
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the child did not take the lock";
  close(ready[0]);
  EXPECT_THAT(lock_error(dir.path(), job_id(1)), HasSubstr("in use by job 000000000000dead"));
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(fs::exists(dir.path() + "/plexus.lock")) << "SIGKILL leaves the file";
  CheckpointFolderLock next(dir.path(), job_id(2), 1);
  EXPECT_THAT(next.previous_holder(),
              HasSubstr("job 000000000000dead (pid " + std::to_string(child) + " on host "));
  EXPECT_THAT(read_text(next.path()), HasSubstr("\"job\":\"0000000000000002\""));
}

// The lock file is anyone's to write: its bytes are read bounded and printed printable.
TEST(CheckpointLock, AHostileLockFileReachesTheMessageBoundedAndPrintable) {
  test::TempDir dir("plexus-lock");
  const std::string path = dir.path() + "/plexus.lock";
  std::ofstream(path) << "{\"job\": \"evil\\u001b[2J" << std::string(1000, 'x')
                      << "\", \"pid\": [1,2], \"host\": 7}";
  {
    CheckpointFolderLock taken(dir.path(), job_id(3), 1);  // no flock on it: taken over
    EXPECT_THAT(taken.previous_holder(), HasSubstr("job evil?[2Jxxx"));
    EXPECT_THAT(taken.previous_holder(), Not(HasSubstr("\x1b")));
    EXPECT_THAT(taken.previous_holder(), HasSubstr("... (pid [1,2] on host 7, ? ranks, since ?)"));
    EXPECT_LT(taken.previous_holder().size(), 400u);
  }
  std::ofstream(path) << std::string(1 << 20, '\x01');  // 1 MiB of garbage
  CheckpointFolderLock taken(dir.path(), job_id(4), 1);
  EXPECT_EQ(taken.previous_holder(), "an unknown holder (the lock file holds 4096 bytes that are "
                                     "not a holder's JSON)");
}

TEST(CheckpointLock, AFolderThatCannotHoldTheLockIsNamed) {
  test::TempDir dir("plexus-lock");
  fs::create_directories(dir.path() + "/plexus.lock");  // a folder in the way
  const std::string why = lock_error(dir.path(), job_id(5));
  EXPECT_THAT(why, HasSubstr("checkpoint folder lock '" + dir.path() + "/plexus.lock': open: "));
}

TEST(CheckpointLock, JobIdsAreSixteenHexDigits) {
  EXPECT_EQ(job_id(0), "0000000000000000");
  EXPECT_EQ(job_id(0xfedcba9876543210ull), "fedcba9876543210");
  EXPECT_NE(random_job_number(), random_job_number());
}

}  // namespace
}  // namespace plexus::engine
