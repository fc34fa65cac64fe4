// The docs stay true: every variable in the configuration table is documented, and README's
// layout table and docs/architecture.md name every folder of comm/, engine/ and topology/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

std::string read_doc(const std::string& relative) {
  std::string path = PLEXUS_SOURCE_DIR;  // appended in place: GCC 12 at -O1 warns (falsely,
  path += '/';                          // -Warray-bounds) on operator+ of a literal here
  path += relative;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DocsTest, TuningGuideListsEveryVariable) {
  ProcessResult table = run_process({PLEXUS_INFO_PATH, "--env"}, 60);
  ASSERT_EQ(table.exit_code, 0) << (table.out + table.err);
  std::stringstream doc;
  doc << read_doc("docs/tuning.md");
  ASSERT_FALSE(doc.str().empty()) << "docs/tuning.md is missing";
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

// README's row for a top folder: the table line that starts with "| `<top>/` |".
std::string readme_row(const std::string& readme, const std::string& top) {
  const std::string start = "| `" + top + "/` |";
  const size_t at = readme.find(start);
  if (at == std::string::npos) return "";
  return readme.substr(at, readme.find('\n', at) - at);
}

TEST(DocsTest, LayoutTableAndArchitectureNameEveryFolder) {
  namespace fs = std::filesystem;
  const std::string readme = read_doc("README.md");
  const std::string architecture = read_doc("docs/architecture.md");
  ASSERT_FALSE(readme.empty());
  ASSERT_FALSE(architecture.empty());
  int folders = 0;
  for (const std::string top : {"comm", "engine", "topology"}) {
    const std::string row = readme_row(readme, top);
    ASSERT_FALSE(row.empty()) << "README's layout table has no row for " << top << "/";
    for (const auto& entry : fs::directory_iterator(fs::path(PLEXUS_SOURCE_DIR) / top)) {
      if (!entry.is_directory()) continue;
      const std::string name = entry.path().filename().string();
      ++folders;
      // README names a folder as `name/` (or `transport/name/` and the like) in its row.
      EXPECT_NE(row.find(name + "/`"), std::string::npos)
          << "README's layout row for " << top << "/ does not name " << name << "/";
      // architecture.md names it as top/name or, inside its section, as `name/`.
      EXPECT_TRUE(architecture.find(top + "/" + name) != std::string::npos ||
                  architecture.find("`" + name + "/`") != std::string::npos)
          << "docs/architecture.md does not name " << top << "/" << name;
    }
  }
  EXPECT_GE(folders, 20);
}

}  // namespace
}  // namespace plexus::test
