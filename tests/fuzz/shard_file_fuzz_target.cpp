// shard_file_fuzz_target.cpp - the fuzzing entry point for one rank's file of a sharded
// checkpoint (engine/checkpoint/shard_file.h: read_shard_file, and check_coverage over it).
//
// Input bytes: [mode byte] then the file, raw or framed as fuzz_files.h says (mode 1 fixes the
// checksum, mode 2 builds magic, header length and checksum around "header JSON\0float data"),
// so that mutations get past the checksum to the header. The properties checked (a failure
// aborts, which the fuzzer reports):
//  - read_shard_file returns or throws CheckpointError naming the checkpoint and the file, never
//    anything else, never crashes, hangs or overflows (ASan and UBSan), and allocates within the
//    fuzzer's memory limit whatever the header claims;
//  - a file read has the file's size and trailing checksum, and runs that are non-empty, name
//    one of its sections and lie back to back from the end of the header to the checksum;
//  - check_coverage over it, with the model as long as its longest section, passes exactly when
//    every section's runs tile [0, that length) once, else throws CheckpointError;
//  - written again (write_shard_file) from its own data it reads back as the same runs of the
//    same sections holding the same floats.
// The same entry point replays tests/fuzz/corpus/shard_file/ in ctest (corpus_replay_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/checkpoint/shard_file.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using plexus::engine::CheckpointError;
using plexus::engine::ShardFile;
using plexus::engine::ShardRun;

using plexus::fuzz::require;

// Whether every section's runs tile [0, length) exactly once (independently of check_coverage).
bool tiles(const ShardFile& f, size_t length) {
  std::map<int, std::vector<std::pair<size_t, size_t>>> spans;
  for (const ShardRun& r : f.runs) {
    if (r.full_offset > length || r.count > length - r.full_offset) return false;
    spans[r.section].push_back({r.full_offset, r.count});
  }
  for (auto& [section, list] : spans) {
    std::sort(list.begin(), list.end());
    size_t next = 0;
    for (const auto& [begin, count] : list) {
      if (begin != next) return false;
      next = begin + count;
    }
    if (next != length) return false;
  }
  return !spans.empty();
}

// The first byte of the run's floats in the file's bytes (at any alignment).
const uint8_t* run_data(const std::vector<uint8_t>& file, const ShardRun& r) {
  return file.data() + r.file_offset_bytes;
}

void check_read(const ShardFile& f, const std::vector<uint8_t>& file, const std::string& dir) {
  require(f.bytes == file.size(), "the size read is not the file's");
  uint64_t stored = 0;
  std::memcpy(&stored, file.data() + file.size() - 8, 8);
  require(f.checksum == stored, "the checksum read is not the file's");
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data() + 8, 8);
  uint64_t next = 16 + header_bytes;
  size_t length = 0;  // of the longest section, ignoring runs whose end overflows
  for (const ShardRun& r : f.runs) {
    require(r.section >= 0 && static_cast<size_t>(r.section) < f.sections.size(),
            "a run names no section");
    require(r.count > 0 && r.file_offset_bytes == next, "runs are not back to back");
    require(r.count <= (file.size() - 8 - next) / sizeof(float), "a run passes the checksum");
    next += r.count * sizeof(float);
    if (r.full_offset <= SIZE_MAX - r.count) length = std::max(length, r.full_offset + r.count);
  }
  require(next + 8 == file.size(), "the runs do not fill the file");

  bool covered = true;
  try {
    plexus::engine::check_coverage(dir, {f}, length);
  } catch (const CheckpointError& e) {
    require(std::string_view(e.what()).starts_with("checkpoint '" + dir + "'"),
            "a coverage error does not name the checkpoint:", e.what());
    covered = false;
  }
  require(covered == tiles(f, length), "check_coverage disagrees with the runs");

  // Aligned copies of the data (the file's floats sit at any byte offset).
  std::vector<std::vector<float>> copies;
  std::vector<plexus::engine::StateRun> runs;
  for (const ShardRun& r : f.runs) {
    copies.emplace_back(r.count);
    std::memcpy(copies.back().data(), run_data(file, r), r.count * sizeof(float));
  }
  for (size_t i = 0; i < f.runs.size(); ++i) {
    const ShardRun& r = f.runs[i];
    runs.push_back({f.sections[r.section], r.full_offset, r.count, copies[i].data()});
  }
  const std::string again = dir + "/rank-1.bin";
  plexus::engine::write_shard_file(again, f.rank, f.step, runs);
  const ShardFile back = plexus::engine::read_shard_file(dir, "rank-1.bin");
  require(back.rank == f.rank && back.step == f.step && back.runs.size() == f.runs.size(),
          "the file written again reads back differently");
  const std::vector<uint8_t> back_bytes = plexus::fuzz::read_file(again);
  require(back_bytes.size() == back.bytes, "the file written again has another size");
  for (size_t i = 0; i < f.runs.size(); ++i) {
    const ShardRun& a = f.runs[i];
    const ShardRun& b = back.runs[i];
    require(back.sections[b.section] == f.sections[a.section] &&
                b.full_offset == a.full_offset && b.count == a.count &&
                std::memcmp(run_data(back_bytes, b), copies[i].data(),
                            a.count * sizeof(float)) == 0,
            "a run written again reads back differently");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string& dir = plexus::fuzz::scratch_dir();
  const std::vector<uint8_t> file =
      plexus::fuzz::write_input_file(dir + "/rank-0.bin", "PLXSHRD1", data, size);
  const std::optional<ShardFile> f = plexus::fuzz::loaded_or_refused(
      [&] { return plexus::engine::read_shard_file(dir, "rank-0.bin"); },
      "checkpoint '" + dir + "'", "rank-0.bin");
  if (f) check_read(*f, file, dir);
  return 0;
}
