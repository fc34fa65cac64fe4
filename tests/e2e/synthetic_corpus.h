// synthetic_corpus.h - the small text corpus the end-to-end training tests train on: 60000
// words from a 16-word vocabulary drawn by a fixed LCG, so every test and every run sees the
// same bytes without fetching a book.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

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

}  // namespace plexus::test
