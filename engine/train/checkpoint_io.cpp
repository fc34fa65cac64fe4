#include "engine/train/checkpoint_io.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "engine/model/full_runs.h"
#include "engine/train/sharded_checkpoint.h"

namespace plexus::engine {

namespace {

struct Section {
  StateBuffer which;
  const char* name;
};
constexpr Section kSections[] = {{StateBuffer::kParams, "params"},
                                 {StateBuffer::kAdamM, "adam_m"},
                                 {StateBuffer::kAdamV, "adam_v"}};

}  // namespace

std::string save_sharded_checkpoint(const ShardedCheckpointContext& context,
                                    const CheckpointRun& run, StageModel& model,
                                    OptimizerState& state, World& world) {
  std::vector<StateRun> runs;
  for (int c = 0; c < model.num_chunks(); ++c) {
    const GptShard& shard = model.chunk(c);
    const std::vector<FullRun> owned = owned_full_runs(shard.tensors(), shard.spec());
    const size_t n = shard.num_params();
    for (const Section& section : kSections) {
      const std::vector<OwnedRange> ranges = state.owned_ranges(section.which, c);
      size_t held = 0;
      for (const OwnedRange& r : ranges) held += r.count;
      // Replicated state: every data rank holds the whole chunk; each writes an even share.
      const bool replicated = held == n && context.data_degree > 1;
      const size_t share_begin =
          replicated ? n * static_cast<size_t>(context.data_rank) / context.data_degree : 0;
      const size_t share_end =
          replicated ? n * static_cast<size_t>(context.data_rank + 1) / context.data_degree : n;
      for (const OwnedRange& r : ranges) {
        const size_t begin = std::max(r.offset, share_begin);
        const size_t end = std::min(r.offset + r.count, share_end);
        if (begin >= end) continue;
        const std::vector<FullRun> mine = clip_runs(owned, begin, end);
        std::vector<StateRun> part = state_runs(section.name, mine, r.data, r.offset);
        runs.insert(runs.end(), part.begin(), part.end());
      }
    }
  }
  std::string failure;
  try {
    write_rank_shard(context.dir, run.next_step, world.rank(), runs);
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  if (world.any(!failure.empty(), "checkpoint write")) {
    throw CheckpointError(failure.empty()
                              ? fmt::format("checkpoint step {}: another rank failed to write its "
                                            "shard (see its message)",
                                            run.next_step)
                              : failure);
  }
  std::string path = checkpoint_path(context.dir, run.next_step);
  if (world.rank() == 0) {
    nlohmann::json training = {{"step", run.next_step},
                               {"seed", run.seed},
                               {"global_batch", run.global_batch}};
    training["val_loss"] = std::isfinite(run.last_val_loss)
                               ? nlohmann::json(run.last_val_loss)
                               : nlohmann::json(nullptr);
    try {
      path = finalize_checkpoint(context.dir, run.next_step, world.size(), context.config,
                                 context.placement, training);
    } catch (const CheckpointError& e) {
      failure = e.what();
    }
  }
  if (world.any(!failure.empty(), "checkpoint finalize")) {
    throw CheckpointError(failure.empty()
                              ? fmt::format("checkpoint step {}: rank 0 could not finalize it "
                                            "(see its message)",
                                            run.next_step)
                              : failure);
  }
  return path;
}

namespace {

// Reads the newest checkpoint into the state's owned ranges (no communication).
std::optional<CheckpointRun> read_newest(const ShardedCheckpointContext& context,
                                         int global_batch, StageModel& model,
                                         OptimizerState& state, std::string* path) {
  const std::optional<std::string> newest = newest_complete_checkpoint(context.dir);
  if (!newest) return std::nullopt;
  CheckpointReader reader(*newest);
  reader.check_model(context.config);
  const nlohmann::json& training = reader.training();
  CheckpointRun run;
  try {
    run.next_step = training.at("step").get<int64_t>();
    run.seed = training.at("seed").get<uint64_t>();
    run.global_batch = training.at("global_batch").get<int>();
    const nlohmann::json& val = training.at("val_loss");
    run.last_val_loss = val.is_null() ? NAN : val.get<float>();
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(fmt::format("checkpoint {}: manifest's training state: {}", *newest,
                                      e.what()));
  }
  if (run.global_batch != global_batch) {
    throw CheckpointError(fmt::format("checkpoint {} was saved with --batch-size {}; this run has "
                                      "--batch-size {} (the data position would not match)",
                                      *newest, run.global_batch, global_batch));
  }
  for (const char* section : {"params", "adam_m", "adam_v"}) {
    if (!reader.has_section(section)) {
      throw CheckpointError(fmt::format("checkpoint {} has no '{}' section (a parameters-only "
                                        "file cannot resume training)",
                                        *newest, section));
    }
  }
  for (int c = 0; c < model.num_chunks(); ++c) {
    const std::vector<FullRun> held = full_runs(model.chunk(c).tensors());
    for (const Section& section : kSections) {
      std::vector<StateTarget> targets;
      for (const OwnedRange& r : state.owned_ranges(section.which, c)) {
        std::vector<StateTarget> part =
            state_targets(section.name, clip_runs(held, r.offset, r.offset + r.count), r.data,
                          r.offset);
        targets.insert(targets.end(), part.begin(), part.end());
      }
      reader.read(targets);
    }
  }
  if (path != nullptr) *path = *newest;
  return run;
}

}  // namespace

std::optional<CheckpointRun> load_newest_sharded_checkpoint(
    const ShardedCheckpointContext& context, int global_batch, StageModel& model,
    OptimizerState& state, World& world, std::string* path) {
  std::optional<CheckpointRun> run;
  std::string failure;
  try {
    run = read_newest(context, global_batch, model, state, path);
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  if (world.any(!failure.empty(), "checkpoint load")) {
    throw CheckpointError(failure.empty() ? "another rank could not load the checkpoint in '" +
                                                context.dir + "' (see its message)"
                                          : failure);
  }
  const bool found = run.has_value();
  const bool missing_somewhere = world.any(!found, "checkpoint found");
  const bool found_somewhere = world.any(found, "checkpoint found");
  if (missing_somewhere && found_somewhere) {
    throw CheckpointError("checkpoint folder '" + context.dir +
                          "': ranks disagree on its newest complete checkpoint (it changed "
                          "while they looked)");
  }
  if (found) state.params_written();
  return run;
}

}  // namespace plexus::engine
