// folder_snapshot.h - what the checkpoint e2e tests look at in a folder: its sorted names, and
// every path under it with a hash of its content, to assert that a refused run changed nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace plexus::test {

// The names in a folder, sorted.
inline std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline uint64_t hash_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : ss.str()) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Every path under dir with its content's hash (folders: 0).
inline std::map<std::string, uint64_t> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    out[e.path().string()] = e.is_regular_file() ? hash_file(e.path()) : 0;
  }
  return out;
}

}  // namespace plexus::test
