// corpus_replay_test.cpp - runs every file of the checked-in fuzz corpus (tests/fuzz/corpus/
// placement/) through the fuzz target's entry point, built with the ordinary compiler, so CI
// exercises the same properties without clang or libFuzzer. A property violation aborts the
// test; the crash inputs found by fuzzing and fixed are in the corpus and stay fixed.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

TEST(PlacementFuzzCorpus, EveryInputHoldsTheProperties) {
  const fs::path dir = fs::path(PLEXUS_FUZZ_CORPUS_DIR) / "placement";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
    ++files;
  }
  EXPECT_GE(files, 20u) << "the seed corpus is missing";
}

TEST(PlacementFuzzCorpus, ShortAndEmptyInputsAreIgnored) {
  EXPECT_EQ(LLVMFuzzerTestOneInput(nullptr, 0), 0);
  const uint8_t three[] = {1, 2, 3};
  EXPECT_EQ(LLVMFuzzerTestOneInput(three, sizeof(three)), 0);
}

}  // namespace
