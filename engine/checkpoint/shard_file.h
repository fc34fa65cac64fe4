// shard_file.h - one rank's file of a sharded checkpoint (sharded_checkpoint.h), and the check
// that a set of them tiles the model.
//
// Layout (little-endian):
//   8 bytes   magic "PLXSHRD1"
//   8 bytes   header length H (uint64)
//   H bytes   JSON header: {"format": "plexus-shard", "version": 1, "rank": r, "step": N,
//             "sections": ["params", ...], "runs": [[section index, full_offset, count,
//             data byte offset], ...]}
//   ...       float32 data of the runs, in the header's order; a run's data byte offset counts
//             from the first byte after the header
//   8 bytes   FNV-1a 64-bit checksum of every byte before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/fnv1a.h"
#include "engine/checkpoint/sharded_checkpoint.h"

namespace plexus::engine {

// "0x0123456789abcdef"
std::string checksum_text(uint64_t checksum);

// The manifest's checksum ("manifest_fnv1a64"): FNV-1a of its compact JSON text without that
// field. Parsing and dumping again gives the same text (nlohmann keeps the keys sorted and
// writes numbers that read back exactly), so a reader recomputes it from the parsed object.
std::string manifest_checksum(nlohmann::json manifest);

// A non-negative integer field of a shard header or manifest, if `value` is one and at most max;
// nullopt for anything else, fractions and negative numbers included (nlohmann's get<> would
// turn a float out of range into undefined behaviour and wrap a negative count), so that
// callers refuse it by name.
std::optional<uint64_t> whole_number(const nlohmann::json& value, uint64_t max = UINT64_MAX);

struct ShardRun {
  int section = 0;  // index in ShardFile::sections
  size_t full_offset = 0;
  size_t count = 0;
  uint64_t file_offset_bytes = 0;  // of its first float, from the start of the file
};

struct ShardFile {
  std::string name;  // "rank-3.bin"
  int rank = 0;
  int64_t step = 0;
  std::vector<std::string> sections;
  std::vector<ShardRun> runs;
  uint64_t bytes = 0;     // file size
  uint64_t checksum = 0;  // its trailing FNV-1a
};

// Writes `runs` to path atomically (path.tmp, fsync, rename, fsync of the folder). Throws
// CheckpointError naming `path` and the OS error.
void write_shard_file(const std::string& path, int rank, int64_t step,
                      const std::vector<StateRun>& runs);

// Reads and verifies <checkpoint>/<name>: the magic, the header, that the runs' data fills the
// file exactly, and the checksum. Throws CheckpointError "checkpoint '<checkpoint>': <name> ...".
ShardFile read_shard_file(const std::string& checkpoint, const std::string& name);

// Throws CheckpointError naming the first gap or overlap if the runs of `files` do not tile
// every section over [0, full_params) exactly once, or a run lies outside it.
void check_coverage(const std::string& checkpoint, const std::vector<ShardFile>& files,
                    size_t full_params);

// fsync of a folder, so a rename in it is durable. Throws CheckpointError.
void fsync_directory(const std::string& dir);

// "checkpoint '<path>': <what>: <strerror(errno)>"
std::string io_error(const std::string& path, const std::string& what);

}  // namespace plexus::engine
