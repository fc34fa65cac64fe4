// Names of shm regions: unique per endpoint, and leftovers of dead processes are removed.
#include "comm/transport/ofi/shm_names.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace plexus::comm::ofi {
namespace {

namespace fs = std::filesystem;

TEST(ShmNames, UniquePerCallAndCarryThePid) {
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) names.insert(unique_shm_region_name());
  EXPECT_EQ(names.size(), 100u);
  const std::string prefix = "plexus_" + std::to_string(getpid()) + "_";
  for (const std::string& n : names) {
    EXPECT_EQ(n.rfind(prefix, 0), 0u) << n;
    EXPECT_EQ(n.find('/'), std::string::npos) << n;
  }
}

TEST(ShmNames, RemovesRegionsOfDeadProcessesOnly) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm on this host";
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);  // reaped: its pid names no process now
  const fs::path dead = fs::path("/dev/shm") / ("plexus_" + std::to_string(child) + "_test_0");
  const fs::path alive = fs::path("/dev/shm") / ("plexus_" + std::to_string(getpid()) + "_test_0");
  const fs::path foreign = fs::path("/dev/shm") / (std::to_string(child) + ":0:0.plexus_test");
  for (const fs::path& p : {dead, alive, foreign}) std::ofstream(p) << "x";
  EXPECT_GE(remove_stale_shm_regions(), 1);
  EXPECT_FALSE(fs::exists(dead)) << "region of a dead process kept";
  EXPECT_TRUE(fs::exists(alive)) << "region of a live process removed";
  EXPECT_TRUE(fs::exists(foreign)) << "a region Plexus did not name was removed";
  fs::remove(alive);
  fs::remove(foreign);
}

}  // namespace
}  // namespace plexus::comm::ofi
