// The docs stay true: every variable in the configuration table is documented.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

TEST(DocsTest, TuningGuideListsEveryVariable) {
  ProcessResult table = run_process({PLEXUS_INFO_PATH, "--env"}, 60);
  ASSERT_EQ(table.exit_code, 0) << (table.out + table.err);
  std::ifstream in(std::string(PLEXUS_SOURCE_DIR) + "/docs/tuning.md");
  ASSERT_TRUE(in) << "docs/tuning.md is missing";
  std::stringstream doc;
  doc << in.rdbuf();
  std::istringstream lines((table.out + table.err));
  std::string line;
  int variables = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("PLEXUS_", 0) != 0) continue;
    ++variables;
    const std::string name = line.substr(0, line.find(' '));
    EXPECT_NE(doc.str().find(line), std::string::npos)
        << name << " is not in docs/tuning.md as plexus-info --env prints it: " << line;
  }
  EXPECT_GE(variables, 10) << (table.out + table.err);
}

}  // namespace
}  // namespace plexus::test
