// checkpoint_file_fuzz_target.cpp - the fuzzing entry point for single-file checkpoints
// (engine/checkpoint/checkpoint.h: load_checkpoint, what plexus-train --sample and --init-from
// read).
//
// Input bytes: [mode byte] then the file, raw or framed as fuzz_files.h says (mode 1 fixes the
// checksum, mode 2 builds magic, header length and checksum around "header JSON\0float data"),
// so that mutations get past the checksum to the header. The properties checked (a failure
// aborts, which the fuzzer reports):
//  - load_checkpoint returns or throws CheckpointError naming the file, never anything else
//    (no raw JSON exception, no bad_alloc), never crashes, hangs or overflows (ASan and UBSan),
//    and allocates within the fuzzer's memory limit whatever counts the header claims;
//  - a loaded checkpoint's header lists its sections (name and count) in order, their floats
//    fill the file exactly (16 + header + 4 x floats + 8 bytes) and are the file's bytes;
//  - saved again (save_checkpoint) it loads back with the same header and data (each section's
//    header entry rewritten as {name, count}).
// The same entry point replays tests/fuzz/corpus/checkpoint_file/ in ctest
// (corpus_replay_test.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using plexus::engine::Checkpoint;
using plexus::engine::CheckpointError;

using plexus::fuzz::require;

void check_loaded(const Checkpoint& ck, const std::vector<uint8_t>& file, const std::string& path) {
  require(ck.header.is_object() && ck.header.contains("sections") &&
              ck.header["sections"].is_array() &&
              ck.header["sections"].size() == ck.sections.size(),
          "the header does not list the sections loaded");
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file.data() + 8, 8);
  size_t offset = 16 + header_bytes;
  for (size_t i = 0; i < ck.sections.size(); ++i) {
    const auto& listed = ck.header["sections"][i];
    const auto& section = ck.sections[i];
    require(listed.at("name") == section.name && listed.at("count") == section.data.size(),
            "a section differs from its header entry");
    require(section.data.size() <= (file.size() - offset) / sizeof(float),
            "a section runs past the file");
    require(section.data.empty() || std::memcmp(section.data.data(), file.data() + offset,
                                                section.data.size() * sizeof(float)) == 0,
            "a section's floats are not the file's bytes");
    offset += section.data.size() * sizeof(float);
  }
  require(offset + 8 == file.size(), "the sections do not fill the file");

  const std::string again = path + ".again";
  plexus::engine::save_checkpoint(again, ck);
  const Checkpoint back = plexus::engine::load_checkpoint(again);
  // save_checkpoint writes each section's entry as {name, count}: the rest of the header is kept.
  nlohmann::json rest = ck.header, rest_back = back.header;
  rest.erase("sections");
  rest_back.erase("sections");
  require(rest_back == rest, "the header saved and loaded again differs");
  require(back.sections.size() == ck.sections.size(), "the sections saved and loaded differ");
  for (size_t i = 0; i < ck.sections.size(); ++i) {
    const auto& a = ck.sections[i].data;
    const auto& b = back.sections[i].data;
    require(back.sections[i].name == ck.sections[i].name && a.size() == b.size() &&
                (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0),
            "a section saved and loaded again differs");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string path = plexus::fuzz::scratch_dir() + "/model.ckpt";
  const std::vector<uint8_t> file = plexus::fuzz::write_input_file(path, "PLXCKPT1", data, size);
  const std::optional<Checkpoint> ck = plexus::fuzz::loaded_or_refused(
      [&] { return plexus::engine::load_checkpoint(path); }, "checkpoint '" + path + "'");
  if (ck) check_loaded(*ck, file, path);
  return 0;
}
