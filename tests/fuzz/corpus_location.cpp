// corpus_location.cpp - the corpus folder and seed count of the fuzz target this corpus test is
// built for (corpus_location.h); tests/fuzz/CMakeLists.txt compiles it once per target.
#include "tests/fuzz/corpus_location.h"

const char* const kFuzzCorpusDir = PLEXUS_FUZZ_CORPUS_DIR;
const size_t kFuzzMinSeeds = PLEXUS_FUZZ_MIN_SEEDS;
