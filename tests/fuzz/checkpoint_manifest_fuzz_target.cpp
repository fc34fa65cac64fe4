// checkpoint_manifest_fuzz_target.cpp - the fuzzing entry point for a sharded checkpoint's
// manifest (engine/checkpoint/sharded_checkpoint.h: CheckpointReader, what a resumed plexus-train
// opens).
//
// The checkpoint: step 7 of a tiny model (vocab 8, 4 positions, 1 layer, 1 head, n_embd 4),
// sections params and adam_m, written once per process by write_rank_shard (two ranks, each half
// of each section) and finalize_checkpoint. Each input replaces its manifest.json.
// Input bytes: [mode byte] then the manifest: mode 0 as it is; mode 1 with its
// "manifest_fnv1a64" set to the checksum of the rest when it is a JSON object, so that mutations
// get past the checksum. The corpus seeds are the manifest finalize_checkpoint writes.
// The properties checked (a failure aborts, which the fuzzer reports):
//  - CheckpointReader opens the checkpoint or throws CheckpointError naming it, never anything
//    else, never crashes, hangs or overflows (ASan and UBSan: no float-to-integer overflow in
//    reading a field), and allocates within the fuzzer's memory limit;
//  - whatever an accepted manifest says, the checkpoint is the one on disk: step 7, world size
//    2, a valid model of the same parameter count, the two sections, and reading any range of a
//    section gives exactly the floats that were saved;
//  - check_model against the saved model passes or throws CheckpointError.
// The same entry point replays tests/fuzz/corpus/checkpoint_manifest/ in ctest
// (corpus_replay_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/shard_file.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/gpt_shard.h"
#include "tests/fuzz/fuzz_files.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using namespace plexus::engine;

constexpr int64_t kStep = 7;
const char* const kSections[] = {"adam_m", "params"};

using plexus::fuzz::require;

GptConfig saved_model() {
  return {.vocab_size = 8, .max_seq_len = 4, .n_layer = 1, .n_head = 1, .n_embd = 4};
}

float saved_value(size_t section, size_t i) {
  return static_cast<float>(section * 10000 + i) * 0.5f;
}

struct Saved {
  std::string path;  // the step folder
  size_t params = 0;
  std::vector<std::vector<float>> values;  // per section of kSections
};

// Writes the checkpoint (once per process).
const Saved& saved() {
  static const Saved s = [] {
    Saved out;
    const std::string dir = plexus::fuzz::scratch_dir() + "/checkpoints";
    out.params = full_num_params(saved_model());
    for (size_t k = 0; k < std::size(kSections); ++k) {
      out.values.emplace_back(out.params);
      for (size_t i = 0; i < out.params; ++i) out.values[k][i] = saved_value(k, i);
    }
    const size_t half = out.params / 2;
    for (int rank = 0; rank < 2; ++rank) {
      const size_t begin = rank == 0 ? 0 : half;
      const size_t end = rank == 0 ? half : out.params;
      std::vector<StateRun> runs;
      for (size_t k = 0; k < std::size(kSections); ++k) {
        runs.push_back({kSections[k], begin, end - begin, out.values[k].data() + begin});
      }
      write_rank_shard(dir, kStep, rank, runs);
    }
    out.path = finalize_checkpoint(dir, kStep, 2, saved_model(), "D",
                                   {{"step", kStep}, {"seed", 1234}, {"global_batch", 8}});
    return out;
  }();
  return s;
}

std::string manifest_text(int mode, const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (mode == 0) return text;
  nlohmann::json manifest = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return text;
  manifest["manifest_fnv1a64"] = manifest_checksum(manifest);
  return manifest.dump(1);
}

void check_opened(const CheckpointReader& reader, size_t seed) {
  const Saved& s = saved();
  require(reader.step() == kStep, "an accepted manifest changed the step");
  require(reader.world_size() == 2, "an accepted manifest changed the world size");
  const GptConfig model = reader.model();
  require(model.validate().empty() && full_num_params(model) == s.params,
          "an accepted manifest has another model size");
  std::vector<std::string> sections = reader.sections();
  std::sort(sections.begin(), sections.end());
  require(sections == std::vector<std::string>(std::begin(kSections), std::end(kSections)),
          "an accepted manifest changed the sections");
  try {
    reader.check_model(saved_model());
  } catch (const CheckpointError&) {
    // Another n_head, say: the same parameter count, refused by name.
  }
  // The whole of each section, then a range chosen by the input.
  const size_t first = seed % s.params;
  const size_t count = (seed / s.params) % (s.params - first + 1);
  for (size_t k = 0; k < std::size(kSections); ++k) {
    std::vector<float> all(s.params, -1.0f);
    std::vector<float> part(count, -1.0f);
    reader.read({StateTarget{kSections[k], 0, s.params, all.data()},
                 StateTarget{kSections[k], first, count, part.data()}});
    require(all == s.values[k], "a section read back differs from what was saved");
    require(std::equal(part.begin(), part.end(), s.values[k].begin() + first),
            "a range read back differs from what was saved");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Saved& s = saved();
  const std::string text = manifest_text(data[0] % 2, data + 1, size - 1);
  plexus::fuzz::write_file(s.path + "/manifest.json",
                           std::vector<uint8_t>(text.begin(), text.end()));
  size_t seed = 0;
  for (size_t i = 0; i < size; ++i) seed = seed * 131 + data[i];
  const auto reader = plexus::fuzz::loaded_or_refused(
      [&] { return std::make_unique<CheckpointReader>(s.path); }, "checkpoint '" + s.path + "'");
  if (reader) check_opened(**reader, seed);
  return 0;
}
