// fuzz_files.h - the files a fuzz target hands to a parser that reads from disk (checkpoints):
// a private folder per process, removed at exit, the framings the fuzz input may ask for so
// that mutations reach the parser behind a checksum, and what a refusal must look like.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "tests/fuzz/fuzz_require.h"

namespace plexus::fuzz {

// A fresh folder of this process's own under /dev/shm (else the temporary folder), made on the
// first call and removed with everything in it at exit. Aborts if it cannot be made.
const std::string& scratch_dir();

// Writes `bytes` to `path` (replacing it). Aborts on failure.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

// How a fuzz input becomes a checksummed file (magic, u64 header length, header, data, u64
// FNV-1a of everything before it; engine/checkpoint/checkpoint.h and shard_file.h):
//   mode 0: the bytes as they are;
//   mode 1: the bytes with their last 8 replaced by the checksum of the others;
//   mode 2: the bytes up to the first NUL as the header and the rest as the data, framed with
//           `magic` and the checksum.
// The mode is the input's first byte mod 3; `rest` is the input after it.
std::vector<uint8_t> framed_file(int mode, std::string_view magic, const uint8_t* rest,
                                 size_t size);

// Writes a fuzz input (size >= 1) to `path` as framed_file says and returns the bytes written.
std::vector<uint8_t> write_input_file(const std::string& path, std::string_view magic,
                                      const uint8_t* data, size_t size);

// The bytes of `path`. Aborts if it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);

// Runs load() and returns what it returns, or nullopt when it threw a CheckpointError whose
// message starts with `prefix` and contains `names`. Any other exception, or a message that does
// not say what it is about, breaks the property.
template <typename Load>
auto loaded_or_refused(const Load& load, const std::string& prefix, std::string_view names = {})
    -> std::optional<decltype(load())> {
  try {
    return load();
  } catch (const engine::CheckpointError& e) {
    const std::string_view what = e.what();
    require(what.starts_with(prefix) && what.find(names) != std::string_view::npos,
            "a CheckpointError does not name what it is about", what);
  } catch (const std::exception& e) {
    require(false, "a checkpoint reader threw something other than CheckpointError", e.what());
  }
  return std::nullopt;
}

}  // namespace plexus::fuzz
