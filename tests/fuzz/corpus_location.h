// corpus_location.h - where one fuzz target's checked-in corpus is, for corpus_replay_test.cpp:
// defined by corpus_location.cpp, compiled once per corpus test with that target's folder
// (PLEXUS_FUZZ_CORPUS_DIR) and the number of seed files it must hold (PLEXUS_FUZZ_MIN_SEEDS).
#pragma once

#include <cstddef>

extern const char* const kFuzzCorpusDir;
extern const size_t kFuzzMinSeeds;
