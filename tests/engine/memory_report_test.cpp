// memory_report_test.cpp - --memory-report's file names and contents (memory_report.h): every
// "{rank}" becomes the rank, a multi-rank world needs one, and the file holds the rank, the
// placement and the tracker's report, in bytes.
#include "engine/train/memory_report.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "engine/memory/memory_tracker.h"
#include "engine/train/output_checks.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

TEST(MemoryReport, EveryRankFieldBecomesTheRank) {
  EXPECT_EQ(memory_report_path("mem.{rank}.json", 3), "mem.3.json");
  EXPECT_EQ(memory_report_path("{rank}/m{rank}", 12), "12/m12");
  EXPECT_EQ(memory_report_path("plain.json", 5), "plain.json");
  EXPECT_EQ(memory_report_path("{rank}", 0), "0");
}

TEST(MemoryReport, SeveralRanksNeedARankField) {
  EXPECT_EQ(check_memory_report_pattern("", 8), "");
  EXPECT_EQ(check_memory_report_pattern("one.json", 1), "");
  EXPECT_EQ(check_memory_report_pattern("m.{rank}.json", 8), "");
  EXPECT_THAT(check_memory_report_pattern("one.json", 4),
              HasSubstr("--memory-report 'one.json' has no {rank} in it, so the 4 ranks would "
                        "write one file"));
}

TEST(MemoryReport, FileHoldsRankPlacementAndTheTrackersBytes) {
  MemoryTracker tracker;
  tracker.add(MemoryPool::kDevice, MemoryCategory::kParameters, 400);
  tracker.add(MemoryPool::kDevice, MemoryCategory::kGradients, 100);
  tracker.add(MemoryPool::kDevice, MemoryCategory::kGradients, -100);
  tracker.add(MemoryPool::kHost, MemoryCategory::kOptimizer, 800);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("plexus_mem_" + std::to_string(getpid()) + ".json"))
          .string();
  write_memory_report(path, 2, "D4+zero2", tracker);
  std::ifstream in(path);
  ASSERT_TRUE(in.good());
  const nlohmann::json report = nlohmann::json::parse(in);
  std::remove(path.c_str());
  EXPECT_EQ(report.at("rank"), 2);
  EXPECT_EQ(report.at("placement"), "D4+zero2");
  const nlohmann::json& device = report.at("memory").at("device");
  EXPECT_EQ(device.at("peak").at("parameters"), 400);
  EXPECT_EQ(device.at("peak").at("gradients"), 100);
  EXPECT_EQ(device.at("current").at("gradients"), 0);
  EXPECT_EQ(device.at("peak_total"), 500);
  EXPECT_EQ(report.at("memory").at("host").at("peak").at("optimizer"), 800);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(MemoryReport, UnwritablePathIsAnErrorNamingIt) {
  MemoryTracker tracker;
  try {
    write_memory_report("/nonexistent-dir/m.json", 1, "D2", tracker);
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1: cannot write the memory report "
                                    "'/nonexistent-dir/m.json.tmp'"));
  }
}

// The report is renamed into place: a symbolic link, device, FIFO or folder there is refused
// with a message naming it, and left as it is.
TEST(MemoryReport, WhatIsNotARegularFileIsNotReplaced) {
  test::TempDir dir("plexus-memory-report");
  ASSERT_FALSE(dir.path().empty());
  MemoryTracker tracker;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string link = dir.path() + "/link.json";
  ASSERT_EQ(::symlink((dir.path() + "/target.json").c_str(), link.c_str()), 0);
  for (const auto& [path, kind] :
       {std::pair<std::string, std::string>{fifo, "a FIFO"},
        {link, "a symbolic link (give the file it points to)"},
        {dir.path(), "a folder"},
        {"/dev/null", "a character device"}}) {
    try {
      write_memory_report(path, 2, "D4", tracker);
      ADD_FAILURE() << "replaced " << path;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "rank 2: cannot write the memory report: '" + path +
                                           "' exists and is " + kind +
                                           "; refusing to replace it");
    }
  }
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// plexus-train's outputs, checked before training: the memory report on every rank with its
// number in place of {rank}, the checkpoint and saved parameters on rank 0 (which writes them).
TEST(OutputChecks, EachOutputIsCheckedWithItsReason) {
  test::TempDir dir("plexus-output-checks");
  ASSERT_FALSE(dir.path().empty());
  const std::string d = dir.path();
  ASSERT_TRUE(std::filesystem::create_directory(d + "/r1"));
  std::ofstream(d + "/file") << "x";

  EXPECT_EQ(check_output_paths("", "", "", "", 0), "");
  EXPECT_EQ(check_output_paths(d + "/m.{rank}.json", d + "/new/sub/c.ckpt", d + "/p.ckpt", "", 0), "");
  // {rank} in the folder: checked with this rank's number.
  EXPECT_EQ(check_output_paths(d + "/r{rank}/m.json", "", "", "", 1), "");
  EXPECT_EQ(check_output_paths(d + "/r{rank}/m.json", "", "", "", 3),
            "--memory-report '" + d + "/r{rank}/m.json' (rank 3): '" + d + "/r3/m.json': folder '" +
                d + "/r3' cannot be used: No such file or directory");
  EXPECT_EQ(check_output_paths("/nonexistent-{rank}/m.json", "", "", "", 0),
            "--memory-report '/nonexistent-{rank}/m.json' (rank 0): '/nonexistent-0/m.json': "
            "folder '/nonexistent-0' cannot be used: No such file or directory");
  // An existing folder as the report.
  EXPECT_EQ(check_output_paths(d + "/r{rank}", "", "", "", 1),
            "--memory-report '" + d + "/r{rank}' (rank 1): '" + d +
                "/r1' exists and is a folder; refusing to replace it");
  // --checkpoint: a folder, a folder that is a regular file; checked on rank 0 only.
  EXPECT_EQ(check_output_paths("", d + "/r1", "", "", 0),
            "--checkpoint: '" + d + "/r1' exists and is a folder; refusing to replace it");
  EXPECT_EQ(check_output_paths("", d + "/file/c.ckpt", "", "", 0),
            "--checkpoint: '" + d + "/file/c.ckpt': a part of its folder is not a folder");
  EXPECT_EQ(check_output_paths("", d + "/file/c.ckpt", "", "", 1), "");
  EXPECT_EQ(check_output_paths("", "", d + "/file/sub/p.ckpt", "", 0),
            "--save-params: '" + d + "/file/sub/p.ckpt': a part of its folder is not a folder");
  EXPECT_EQ(check_output_paths("", "", "/dev/null", "", 0),
            "--save-params: '/dev/null' exists and is a character device; refusing to replace it");
  // A symbolic link to a regular file is written through (save_checkpoint follows it).
  const std::string link = d + "/link.ckpt";
  ASSERT_EQ(::symlink((d + "/file").c_str(), link.c_str()), 0);
  EXPECT_EQ(check_output_paths("", link, "", "", 0), "");
  // --plot: drawn by rank 0, so checked there only; its folder must exist.
  EXPECT_EQ(check_output_paths("", "", "", d + "/loss.png", 0), "");
  EXPECT_EQ(check_output_paths("", "", "", d + "/none/loss.png", 0),
            "--plot '" + d + "/none/loss.png': folder '" + d +
                "/none' cannot be used: No such file or directory");
  EXPECT_EQ(check_output_paths("", "", "", d + "/none/loss.png", 1), "");
  EXPECT_EQ(check_output_paths("", "", "", d + "/r1", 0),
            "--plot '" + d + "/r1' exists and is a folder; refusing to replace it");
}

}  // namespace
}  // namespace plexus::engine
