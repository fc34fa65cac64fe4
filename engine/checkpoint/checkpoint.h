// checkpoint.h - single-file training checkpoints, written atomically and checksummed.
//
// Layout: the 8-byte magic "PLXCKPT1", a little-endian uint64 header length, a JSON header
// (model config, step, seed, placement, tensor table, sections), the float32 sections in the
// header's order (params, adam_m, adam_v), and a trailing uint64 FNV-1a checksum of every byte
// before it. Writes go to "<path>.tmp", are fsync'ed, then renamed over <path>, so a reader sees
// the old file or the new one, never half of one. See docs/checkpoints.md.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace plexus::engine {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The error for a header field of the single-file checkpoint at `path` that passed the checksum
// but holds a wrong value (a crafted file): "checkpoint 'P': header field F is V; valid: W",
// V being the value's JSON cut at 80 characters.
CheckpointError header_field_error(const std::string& path, const std::string& field,
                                   const nlohmann::json& value, const std::string& valid);

struct CheckpointSection {
  std::string name;           // "params", "adam_m", "adam_v"
  std::vector<float> data;
};

struct Checkpoint {
  nlohmann::json header;      // free-form metadata: "model", "step", "seed", "tensors", ...
  std::vector<CheckpointSection> sections;

  const std::vector<float>* find(const std::string& name) const;
};

// Writes atomically; throws CheckpointError naming the path and the OS error.
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Reads and verifies magic, sizes and checksum, and the header fields it uses: `sections` an
// array of {name: string, count: integer >= 0} whose floats fill the file exactly. Throws only
// CheckpointError, naming the path and what is wrong: "is corrupt or incomplete: <why>", or for
// a header that passes its checksum but was written wrong (crafted) "header field
// sections[1].count is -5; valid: an integer >= 0". The rest of the header is the caller's to
// check before use (e.g. the sampler's `model`).
Checkpoint load_checkpoint(const std::string& path);

}  // namespace plexus::engine
