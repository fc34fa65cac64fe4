// unknown_settings_test.cpp - the lines that report PLEXUS_* names the table lacks, and the
// nearest known name they suggest (topology/settings/unknown_settings.h). comm's once-per-process report
// through the log is tested in tests/comm/unknown_settings_report_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/settings/unknown_settings.h"

namespace plexus::test {
namespace {

std::vector<std::string> lines_for(std::vector<const char*> environment) {
  environment.push_back(nullptr);
  return unknown_setting_lines(environment.data());
}

TEST(SettingNameDistance, CountsEditsAndNeighbourSwapsIgnoringCase) {
  EXPECT_EQ(setting_name_distance("PLEXUS_ALGO", "PLEXUS_ALGO"), 0u);
  EXPECT_EQ(setting_name_distance("PLEXUS_algo", "PLEXUS_ALGO"), 0u);
  EXPECT_EQ(setting_name_distance("PLEXUS_ALOG", "PLEXUS_ALGO"), 1u);   // one swap
  EXPECT_EQ(setting_name_distance("PLEXUS_DEBG", "PLEXUS_DEBUG"), 1u);  // one insertion
  EXPECT_EQ(setting_name_distance("PLEXUS_TIMEOUT", "PLEXUS_TIMEOUT_MS"), 3u);
  EXPECT_EQ(setting_name_distance("PLEXUS_SHM", "PLEXUS_PIN"), 3u);
  EXPECT_EQ(setting_name_distance("", "PLEXUS_PIN"), 10u);
}

TEST(NearestSettingName, SuggestsOnlyCloseNames) {
  EXPECT_EQ(nearest_setting_name("PLEXUS_ALOG"), "PLEXUS_ALGO");
  EXPECT_EQ(nearest_setting_name("PLEXUS_TIMEOUT"), "PLEXUS_TIMEOUT_MS");
  EXPECT_EQ(nearest_setting_name("PLEXUS_TRANSPROT"), "PLEXUS_TRANSPORT");
  EXPECT_EQ(nearest_setting_name("PLEXUS_DEBG"), "PLEXUS_DEBUG");
  EXPECT_EQ(nearest_setting_name("PLEXUS_shm"), "PLEXUS_SHM");
  // Three letters allow two edits: PLEXUS_PIN and PLEXUS_SHM are three away.
  EXPECT_EQ(nearest_setting_name("PLEXUS_FOO"), std::nullopt);
  // Five letters allow two edits: PLEXUS_CHUNK_BYTES is six away.
  EXPECT_EQ(nearest_setting_name("PLEXUS_CHUNK"), std::nullopt);
  EXPECT_EQ(nearest_setting_name(std::string(1000, 'A')), std::nullopt);
}

TEST(UnknownSettingLines, NameTheVariableAndTheNearestKnownNameButNeverTheValue) {
  const auto lines = lines_for({"PATH=/usr/bin", "PLEXUS_ALOG=ring", "PLEXUS_ALGO=allreduce:ring",
                                "PLEXUS_TIMEOUT=5", "PLEXUS_FOO=1", "MY_PLEXUS_ALOG=x",
                                "plexus_algo=ring"});
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "unknown setting PLEXUS_ALOG (did you mean PLEXUS_ALGO?)",
                       "unknown setting PLEXUS_TIMEOUT (did you mean PLEXUS_TIMEOUT_MS?)",
                       "unknown setting PLEXUS_FOO (plexus-info --env lists the known ones)"}));
  // A misspelt secret is named, its value never shown.
  EXPECT_EQ(lines_for({"PLEXUS_JOB_TOKN=supersecretvalue1234567"}),
            std::vector<std::string>{"unknown setting PLEXUS_JOB_TOKN (did you mean "
                                     "PLEXUS_JOB_TOKEN?)"});
}

TEST(UnknownSettingLines, KnownNamesOfEveryReaderAreNotReported) {
  EXPECT_EQ(lines_for({"PLEXUS_RANK=0", "PLEXUS_JOB_TOKEN=secret", "PLEXUS_TOPO_FILE=t.json",
                       "PLEXUS_PLUGIN_PATH=/p", "PLEXUS_BUILD_DIR=build",
                       "PLEXUS_TEST_FULL_MATRIX=1", "PLEXUS_DEBUG="}),
            std::vector<std::string>{});
  EXPECT_EQ(unknown_setting_lines(nullptr), std::vector<std::string>{});
}

TEST(UnknownSettingLines, HostileNamesAreEscapedAndCut) {
  const std::string long_value = "PLEXUS_ALOG=" + std::string(100, 'x');
  const std::string long_name = "PLEXUS_" + std::string(100, 'Y') + "=1";
  const auto lines = lines_for({"PLEXUS_ALOG=ring\nplexus rank 0: WARN forged",
                                "PLEXUS_\x1b[2JFOO=\\\xff", "PLEXUS_FOO", long_value.c_str(),
                                long_name.c_str()});
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "unknown setting PLEXUS_ALOG (did you mean PLEXUS_ALGO?)");
  EXPECT_EQ(lines[1], "unknown setting PLEXUS_\\x1b[2JFOO (plexus-info --env lists the known ones)");
  EXPECT_EQ(lines[2], "unknown setting PLEXUS_FOO (plexus-info --env lists the known ones)");
  EXPECT_EQ(lines[3], "unknown setting PLEXUS_ALOG (did you mean PLEXUS_ALGO?)");
  EXPECT_EQ(lines[4], "unknown setting PLEXUS_" + std::string(kMaxShownBytes - 7, 'Y') +
                          "... (plexus-info --env lists the known ones)");
}

TEST(UnknownSettingLines, ManyUnknownNamesEndInACount) {
  std::vector<std::string> entries;
  for (size_t i = 0; i < kMaxUnknownLines + 5; ++i)
    entries.push_back("PLEXUS_EXTRA_" + std::to_string(i) + "=1");
  std::vector<const char*> environment;
  for (const std::string& entry : entries) environment.push_back(entry.c_str());
  const auto lines = lines_for(environment);
  ASSERT_EQ(lines.size(), kMaxUnknownLines + 1);
  EXPECT_EQ(lines.front(), "unknown setting PLEXUS_EXTRA_0 (plexus-info --env lists the known ones)");
  EXPECT_EQ(lines.back(), "and 5 more unknown PLEXUS_* settings");
}

}  // namespace
}  // namespace plexus::test
