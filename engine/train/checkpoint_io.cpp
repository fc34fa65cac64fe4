#include "engine/train/checkpoint_io.h"

#include <cmath>
#include <limits>
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
  if (world.rank() == 0) {  // a fresh step-N.tmp: nothing of an interrupted save of this step
    try {
      prepare_checkpoint_step(context.dir, run.next_step);
    } catch (const CheckpointError& e) {
      failure = e.what();
    }
  }
  if (world.any(!failure.empty(), "checkpoint prepare")) {
    throw CheckpointError(failure.empty()
                              ? fmt::format("checkpoint step {}: rank 0 could not prepare it "
                                            "(see its message)",
                                            run.next_step)
                              : failure);
  }
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

CheckpointRun training_state(const std::string& path, const nlohmann::json& training,
                             int64_t manifest_step) {
  auto bad = [&](const char* field, const std::string& value, const std::string& range) {
    return CheckpointError(fmt::format("checkpoint {}: manifest's training.{} is {}; valid: {}",
                                       path, field, value, range));
  };
  if (!training.is_object()) throw bad("(object)", training.dump(), "a JSON object");
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!training.contains(name)) throw bad(name, "missing", "present");
    return training.at(name);
  };
  CheckpointRun run;
  const nlohmann::json& step = field("step");
  if (!step.is_number_integer() || step.get<int64_t>() != manifest_step) {
    throw bad("step", step.dump(), fmt::format("{} (the manifest's step)", manifest_step));
  }
  run.next_step = manifest_step;
  const nlohmann::json& seed = field("seed");
  if (!seed.is_number_integer() || (!seed.is_number_unsigned() && seed.get<int64_t>() < 0)) {
    throw bad("seed", seed.dump(), "an integer in 0..2^64-1");
  }
  run.seed = seed.get<uint64_t>();
  const nlohmann::json& batch = field("global_batch");
  if (!batch.is_number_integer() || batch.get<int64_t>() < 1 ||
      batch.get<int64_t>() > std::numeric_limits<int>::max()) {
    throw bad("global_batch", batch.dump(),
              fmt::format("1..{}", std::numeric_limits<int>::max()));
  }
  run.global_batch = batch.get<int>();
  const nlohmann::json& val = field("val_loss");
  if (val.is_null()) {
    run.last_val_loss = NAN;
  } else {
    const bool number = val.is_number();
    const double loss = number ? val.get<double>() : -1.0;
    if (!number || !std::isfinite(loss) || loss < 0 || loss > std::numeric_limits<float>::max()) {
      throw bad("val_loss", val.dump(), "null (none yet) or a finite loss >= 0");
    }
    run.last_val_loss = static_cast<float>(loss);
  }
  return run;
}

namespace {

// Reads the newest checkpoint into the state's owned ranges (no communication).
std::optional<CheckpointRun> read_newest(const ShardedCheckpointContext& context,
                                         int global_batch, StageModel& model,
                                         OptimizerState& state, std::string* path) {
  check_checkpoint_folder(context.dir);  // at start, not at the first save
  const std::optional<std::string> newest = newest_complete_checkpoint(context.dir);
  if (!newest) return std::nullopt;
  CheckpointReader reader(*newest);
  reader.check_model(context.config);
  const CheckpointRun run = training_state(*newest, reader.training(), reader.step());
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
