// synthetic_corpus.h - the small text corpus the end-to-end training tests train on: 60000
// words from a 16-word vocabulary drawn by a fixed LCG, so every test and every run sees the
// same bytes without fetching a book; and CorpusFolder, a fresh folder holding it that a suite
// or a test case trains in.
#pragma once

#include <errno.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace plexus::test {

inline void write_synthetic_corpus(const std::string& path) {
  const char* words[] = {"the", "whale", "sea", "ship", "captain", "white", "boat", "harpoon",
                         "and", "of", "a", "to", "in", "was", "his", "ocean"};
  std::ofstream out(path);
  uint64_t x = 12345;
  for (int i = 0; i < 60000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out << words[(x >> 33) % 16] << ((x >> 40) % 9 == 0 ? ".\n" : " ");
  }
}

// A fresh folder <temp>/<name>-XXXXXX (mkdtemp, so runs side by side never share one; mode
// 0755) holding the synthetic corpus as corpus.txt, for the runs to read and to write their
// outputs into.
// make() throws std::runtime_error naming the folder when it cannot be made (GoogleTest reports
// it as the failure of the set-up); the folder and everything in it go with remove() or the
// CorpusFolder. Not thread-safe.
//
// For a whole suite, a static member made and removed around it (what else the suite sets up
// follows make()):
//   static void SetUpTestSuite() { corpus_.make("plexus_matrix"); }
//   static void TearDownTestSuite() { corpus_.remove(); }
//   static inline CorpusFolder corpus_;
// For each test case, a member made with the fixture:
//   CorpusFolder corpus_{"plexus-device-option"};
class CorpusFolder {
 public:
  CorpusFolder() = default;
  explicit CorpusFolder(const std::string& name) { make(name); }
  ~CorpusFolder() { remove(); }
  CorpusFolder(const CorpusFolder&) = delete;
  CorpusFolder& operator=(const CorpusFolder&) = delete;

  // Makes the folder (removing the one made before, if any) and writes corpus.txt into it.
  void make(const std::string& name) {
    remove();
    std::string pattern = (std::filesystem::temp_directory_path() / (name + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("CorpusFolder: cannot make '" + pattern + "': " +
                               std::strerror(errno));
    }
    dir_ = pattern;
    // As a folder made with the usual umask is (mkdtemp's is 0700): runs under another user,
    // such as resume_test's as nobody, read the corpus and open their folders in it.
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all |
                                           std::filesystem::perms::group_read |
                                           std::filesystem::perms::group_exec |
                                           std::filesystem::perms::others_read |
                                           std::filesystem::perms::others_exec);
    data_ = path("corpus.txt");
    write_synthetic_corpus(data_);
  }
  // Removes the folder with everything in it; nothing when there is none.
  void remove() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    dir_.clear();
    data_.clear();
  }

  const std::string& dir() const { return dir_; }
  // The corpus: dir()/corpus.txt.
  const std::string& data() const { return data_; }
  // dir()/name, for a run's outputs.
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;  // empty when there is none
  std::string data_;
};

}  // namespace plexus::test
