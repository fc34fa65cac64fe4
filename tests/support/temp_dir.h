// temp_dir.h - a fresh directory under /tmp for one test case, removed with everything in it
// when the TempDir goes out of scope. path() is empty if mkdtemp failed.
//
//   TempDir dir("plexus-ucx-test");   // /tmp/plexus-ucx-test-XXXXXX
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace plexus::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace plexus::test
