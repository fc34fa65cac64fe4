// fuzz_files.cpp - scratch folder and checkpoint framing for the file-reading fuzz targets
// (fuzz_files.h).
#include "tests/fuzz/fuzz_files.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/checkpoint/shard_file.h"

namespace plexus::fuzz {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fuzz files: %s\n", what.c_str());
  std::abort();
}

void remove_scratch() {
  std::error_code ignored;
  fs::remove_all(scratch_dir(), ignored);
}

void append_u64(std::vector<uint8_t>* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

void append_checksum(std::vector<uint8_t>* bytes) {
  engine::Fnv1a sum;
  sum.update(bytes->data(), bytes->size());
  append_u64(bytes, sum.hash);
}

}  // namespace

const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::error_code ec;
    const fs::path base = fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm")
                                                            : fs::temp_directory_path(ec);
    std::string pattern = (base / "plexus-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) die("cannot make a folder like " + pattern);
    return pattern;
  }();
  static const bool registered = std::atexit(remove_scratch) == 0;
  (void)registered;
  return dir;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) die("cannot write " + path);
}

std::vector<uint8_t> framed_file(int mode, std::string_view magic, const uint8_t* rest,
                                 size_t size) {
  std::vector<uint8_t> bytes(rest, rest + size);
  if (mode == 0) return bytes;
  if (mode == 1) {
    if (bytes.size() < 8) return bytes;
    bytes.resize(bytes.size() - 8);
    append_checksum(&bytes);
    return bytes;
  }
  const size_t nul = static_cast<size_t>(std::find(rest, rest + size, 0) - rest);
  std::vector<uint8_t> file(magic.begin(), magic.end());
  append_u64(&file, nul);
  file.insert(file.end(), rest, rest + nul);
  if (nul < size) file.insert(file.end(), rest + nul + 1, rest + size);
  append_checksum(&file);
  return file;
}

std::vector<uint8_t> write_input_file(const std::string& path, std::string_view magic,
                                      const uint8_t* data, size_t size) {
  const std::vector<uint8_t> file = framed_file(data[0] % 3, magic, data + 1, size - 1);
  write_file(path, file);
  return file;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (!in.eof() && !in) die("cannot read " + path);
  return bytes;
}

}  // namespace plexus::fuzz
