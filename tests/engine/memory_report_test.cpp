// memory_report_test.cpp - --memory-report's file names and contents (memory_report.h): every
// "{rank}" becomes the rank, a multi-rank world needs one, and the file holds the rank, the
// placement and the tracker's report, in bytes.
#include "engine/train/memory_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

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

}  // namespace
}  // namespace plexus::engine
