// corpus_replay_test.cpp - runs every file of one fuzz target's checked-in corpus
// (tests/fuzz/corpus/<target>/) through that target's entry point, built with the ordinary
// compiler, so CI exercises the same properties without clang or libFuzzer. A property violation
// aborts the test; the crash inputs found by fuzzing and fixed are in the corpus
// (regression-*) and stay fixed. Compiled once and linked into every target's corpus test
// (tests/fuzz/CMakeLists.txt), where corpus_location.cpp names the target's folder and the files
// it must hold.
#include "tests/fuzz/corpus_location.h"

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

TEST(FuzzCorpus, EveryInputHoldsTheProperties) {
  const fs::path dir = fs::path(kFuzzCorpusDir);
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
  EXPECT_GE(files, kFuzzMinSeeds) << "the seed corpus is missing";
}

TEST(FuzzCorpus, EmptyAndOneByteInputsHoldTheProperties) {
  EXPECT_EQ(LLVMFuzzerTestOneInput(nullptr, 0), 0);
  for (int b = 0; b < 256; ++b) {
    const uint8_t one = static_cast<uint8_t>(b);
    SCOPED_TRACE(b);
    EXPECT_EQ(LLVMFuzzerTestOneInput(&one, 1), 0);
  }
}

}  // namespace
