// sharded_checkpoint.h - universal sharded checkpoints: every rank writes the state it holds,
// keyed by Gpt's flat layout (the global tensor names and offsets, gpt.h), so a checkpoint
// saved under one placement loads under any other (as DeepSpeed's universal checkpoints and
// PyTorch's distributed checkpoint, DCP). See docs/checkpoints.md.
//
//   <dir>/step-00000120/rank-0.bin      runs of rank 0's state (shard_file.h)
//   <dir>/step-00000120/rank-1.bin      ...
//   <dir>/step-00000120/manifest.json   written last, by rank 0
//   <dir>/step-00000130.tmp-<job>/      a save in progress by job <job> (checkpoint_lock.h)
//
// Sections: "params", "adam_m", "adam_v" (any names; each section present must tile the model).
// A run is {section, full_offset, count}: elements [full_offset, +count) of Gpt's flat buffer.
//
// Saving, in this order (the caller synchronises the ranks and holds the folder's lock):
//   rank 0:      prepare_checkpoint_step(dir, step, job)
//   every rank:  write_rank_shard(dir, step, rank, runs, job)  -> step-N.tmp-<job>/rank-<r>.bin
//   barrier
//   rank 0:      finalize_checkpoint(dir, step, world_size, model, placement, training, job)
//                checks that the rank files' runs tile every section over [0, full_num_params)
//                exactly once, writes manifest.json, renames step-N.tmp-<job> to step-N.
// Each file is written to a temporary name, fsync'ed and renamed; the step directory is renamed
// last and its parent fsync'ed, so a checkpoint is complete exactly when step-N/manifest.json
// exists. A crash at any point leaves step-N.tmp-<job> (ignored) or nothing. A job only ever
// removes its own temporary folders (the job id is in their name), never another job's: those
// stay until removed by hand (leftover_saves lists them). Without a job id ("": tests, tools)
// the temporary folder is step-N.tmp.
//
// Loading: complete_checkpoints(dir) (newest first), then CheckpointReader, which verifies the
// manifest (its own checksum), every rank file's size and checksum and the coverage before
// anything is read, and fills any requested range with pread from whichever rank files hold it.
// Loading never writes.
//
// Errors: CheckpointError (engine/checkpoint/checkpoint.h) naming the path and what is wrong (a
// truncated, corrupt or missing rank file, a bad manifest, another model, a missing section, a
// gap or overlap, an OS error); std::invalid_argument for a caller's bad argument (negative step
// or rank, null data). Thread safety: none of these share state; one CheckpointReader per
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/model/full_runs.h"
#include "engine/model/gpt.h"

namespace plexus::engine {

// count floats of `section` for the full model's elements [full_offset, +count), read from data
// (borrowed until write_rank_shard returns).
struct StateRun {
  std::string section;
  size_t full_offset = 0;
  size_t count = 0;
  const float* data = nullptr;
};

// Where to load a range: count floats of `section` from full_offset into dest.
struct StateTarget {
  std::string section;
  size_t full_offset = 0;
  size_t count = 0;
  float* dest = nullptr;
};

// One StateRun / StateTarget per run over a buffer whose element 0 is local element
// `base_offset` of the shard: run r uses base + (r.local_offset - base_offset). For a whole
// shard buffer base_offset is 0; for a ZeRO partition [b, e) of the shard pass the partition's
// buffer, b, and runs clipped to [b, e) (clip_runs).
std::vector<StateRun> state_runs(const std::string& section, const std::vector<FullRun>& runs,
                                 const float* base, size_t base_offset = 0);
std::vector<StateTarget> state_targets(const std::string& section,
                                       const std::vector<FullRun>& runs, float* base,
                                       size_t base_offset = 0);

// "<dir>/step-00000120" (at least 8 digits).
std::string checkpoint_path(const std::string& dir, int64_t step);
// Where job `job` writes step N before it is complete: "<dir>/step-00000120.tmp-<job>", or
// "<dir>/step-00000120.tmp" for job "".
std::string checkpoint_tmp_path(const std::string& dir, int64_t step, const std::string& job);

// Checks, before training, that `dir` can hold checkpoints: creates it (and its parents) if it
// is missing, then creates and removes a file in it. Throws CheckpointError "checkpoint folder
// '<dir>': cannot create it: <reason>" or "... is not writable: <reason>" (the OS's words).
void check_checkpoint_folder(const std::string& dir);

// Rank 0, before any rank's write_rank_shard for this step (the caller synchronises): makes
// this job's checkpoint_tmp_path a fresh, empty folder, removing what an earlier, interrupted
// save of this step by this job left in it (rank files of another world size or of other
// values must never end up in the checkpoint), and removes <dir>/step-N if it is a folder
// without manifest.json (damage: a save renames a folder only once its manifest is in it; it
// would block the final rename; loading skips it). Other jobs' temporary folders are left as
// they are. Throws CheckpointError if step-N is complete or on an OS error.
void prepare_checkpoint_step(const std::string& dir, int64_t step, const std::string& job = "");

// Writes this rank's runs to <tmp>/rank-<rank>.bin (tmp: checkpoint_tmp_path; a temporary
// file, fsync, rename), creating the folders. Zero-count runs are skipped; a rank may write no
// runs at all. Throws CheckpointError on an OS error or if step-N is already complete.
void write_rank_shard(const std::string& dir, int64_t step, int rank,
                      const std::vector<StateRun>& runs, const std::string& job = "");

// Rank 0, after every rank's write_rank_shard returned: checks rank-0..world_size-1 in
// checkpoint_tmp_path (each present, its checksum right, its runs inside the model) and that every
// section's runs tile [0, full_num_params(model)) with no gap and no overlap; then writes
// manifest.json (format version, step, world size, placement, model, the tensor table, the
// sections, each rank file's size and checksum, `training` as given) and renames the temporary
// folder to step-N. Anything else in it (a rank file of a larger world) is refused, never
// renamed into the checkpoint. Returns the final path. On a failed check throws
// CheckpointError and leaves the temporary folder as it is (never renamed, so never loaded).
//
// `training` is the caller's: optimizer step, data position, seed and RNG state, last
// validation loss, ... (JSON has no NaN: nlohmann writes NaN as null).
std::string finalize_checkpoint(const std::string& dir, int64_t step, int world_size,
                                const GptConfig& model, const std::string& placement,
                                const nlohmann::json& training, const std::string& job = "");

// The complete checkpoint (step-N with manifest.json) of the highest step in dir, or nullopt if
// dir does not exist or holds none. Skips step-N.tmp and step directories without a manifest
// (incomplete); does not open the manifest, so a corrupt newest checkpoint is reported by
// CheckpointReader rather than silently replaced by an older one. Throws CheckpointError if dir
// exists but is not a directory or cannot be listed, or if a step folder cannot be looked into
// (permissions, I/O error): it is never taken for an incomplete one, which a later save of that
// step would replace.
std::optional<std::string> newest_complete_checkpoint(const std::string& dir);

struct CompleteCheckpoint {
  int64_t step = 0;
  std::string path;  // <dir>/step-N
};
// Every complete checkpoint in dir, newest (highest step) first, found and checked as
// newest_complete_checkpoint does; empty if dir does not exist or holds none.
std::vector<CompleteCheckpoint> complete_checkpoints(const std::string& dir);

// The temporary folders in dir that are not job `job`'s (step-N.tmp, step-N.tmp-<other job>):
// saves that other jobs did not finish, sorted by name. Never fails (an unlistable dir: none).
std::vector<std::string> leftover_saves(const std::string& dir, const std::string& job);

struct ShardFile;  // shard_file.h

class CheckpointReader {
 public:
  // Opens and verifies the checkpoint at `path` (a step-N directory): the manifest parses, has
  // this format version and its checksum; every rank file exists with the manifest's size and
  // checksum and a well-formed header; every section tiles the model exactly once. Throws
  // CheckpointError naming the path and the problem.
  explicit CheckpointReader(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const std::string& path() const { return path_; }
  const nlohmann::json& manifest() const { return manifest_; }
  int64_t step() const;
  int world_size() const;
  const std::string& placement() const;
  // The caller's `training` object from finalize_checkpoint.
  const nlohmann::json& training() const;
  // The model the checkpoint was saved for.
  GptConfig model() const;
  std::vector<std::string> sections() const;
  bool has_section(const std::string& section) const;

  // Throws CheckpointError "checkpoint <path> was saved for n_embd 64; this run has n_embd 32"
  // for the first of vocab_size, max_seq_len, n_layer, n_head, n_embd that differs.
  void check_model(const GptConfig& config) const;

  // Fills every target from the rank files (pread). Throws CheckpointError for a section the
  // checkpoint does not have, a range outside [0, full_num_params) or a failed read; targets
  // before the failing one may have been filled.
  void read(const std::vector<StateTarget>& targets) const;

 private:
  std::string path_;
  nlohmann::json manifest_;
  size_t full_params_ = 0;
  std::vector<ShardFile> files_;
  std::vector<int> fds_;
  struct Piece {  // a run of one rank file, by section, sorted by full_offset
    size_t full_offset, count;
    int file;
    uint64_t file_offset_bytes;
  };
  std::vector<std::string> section_names_;
  std::vector<std::vector<Piece>> pieces_;  // [section index]
};

}  // namespace plexus::engine
