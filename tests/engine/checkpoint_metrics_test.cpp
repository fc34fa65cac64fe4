// checkpoint_metrics_test.cpp - the --metrics-file across resumes (engine/checkpoint/
// checkpoint_metrics.h): truncated on a fresh start; on resume from step N the earlier lines of
// steps 1..N kept, later ones (to be run again) and cut lines dropped, then appended.
#include "engine/checkpoint/checkpoint_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string row(int step) { return "{\"loss\":" + std::to_string(10 - step) + ",\"step\":" +
                                   std::to_string(step) + "}\n"; }

class MetricsFile : public ::testing::Test {
 protected:
  test::TempDir tmp_{"plexus-metrics"};
  std::string path_ = tmp_.path() + "/metrics.jsonl";
};

TEST_F(MetricsFile, FreshStartTruncates) {
  std::ofstream(path_) << row(1) << row(2);
  {
    auto out = open_metrics_file(path_, std::nullopt);
    *out << row(1);
  }
  EXPECT_EQ(read_all(path_), row(1));
}

TEST_F(MetricsFile, ResumeKeepsStepsUpToTheCheckpointAndAppends) {
  // The first run saved at step 4, went on to step 6 and was killed mid-line.
  std::ofstream(path_) << row(1) << row(2) << row(3) << row(4) << row(5) << row(6)
                       << "{\"loss\":3,\"st";
  {
    auto out = open_metrics_file(path_, 4);
    *out << row(5) << row(6) << row(7);
  }
  EXPECT_EQ(read_all(path_), row(1) + row(2) + row(3) + row(4) + row(5) + row(6) + row(7));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  // Resumed again from step 7 (everything kept), and from 0 (nothing kept).
  { open_metrics_file(path_, 7); }
  EXPECT_EQ(read_all(path_), row(1) + row(2) + row(3) + row(4) + row(5) + row(6) + row(7));
  { open_metrics_file(path_, 0); }
  EXPECT_EQ(read_all(path_), "");
}

TEST_F(MetricsFile, ResumeWithoutAnEarlierFileStartsOne) {
  {
    auto out = open_metrics_file(path_, 10);
    *out << row(11);
  }
  EXPECT_EQ(read_all(path_), row(11));
}

TEST_F(MetricsFile, UnwritablePathIsNamed) {
  std::ofstream(tmp_.path() + "/plain") << "x";
  const std::string bad = tmp_.path() + "/plain/metrics.jsonl";
  for (std::optional<int64_t> resumed : {std::optional<int64_t>{}, std::optional<int64_t>{3}}) {
    try {
      open_metrics_file(bad, resumed);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith("cannot write --metrics-file '" + bad + "': "));
      EXPECT_THAT(e.what(), ::testing::HasSubstr("Not a directory"));
    }
  }
}

}  // namespace
}  // namespace plexus::engine
