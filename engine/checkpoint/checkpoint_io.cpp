#include "engine/checkpoint/checkpoint_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/shard_file.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/full_runs.h"

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
                                    TrainingState& state, World& world) {
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
      prepare_checkpoint_step(context.dir, run.next_step, context.job);
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
    write_rank_shard(context.dir, run.next_step, world.rank(), runs, context.job);
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
    if (run.schedule) {
      training["lr_schedule"] = {{"lr", run.schedule->lr},
                                 {"min_lr_ratio", run.schedule->min_lr_ratio},
                                 {"warmup_steps", run.schedule->warmup_steps},
                                 {"decay_steps", run.schedule->decay_steps}};
    }
    try {
      path = finalize_checkpoint(context.dir, run.next_step, world.size(), context.config,
                                 context.placement, training, context.job);
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

// training.lr_schedule, every field range-checked (checkpoint_run).
LrSchedule schedule_state(const std::string& path, const nlohmann::json& training) {
  const nlohmann::json& s = training.at("lr_schedule");
  auto bad = [&](const std::string& field, const nlohmann::json& value, const char* range) {
    return CheckpointError(fmt::format("checkpoint {}: manifest's training.lr_schedule{} is {}; "
                                       "valid: {}",
                                       path, field, value.dump(), range));
  };
  if (!s.is_object()) throw bad("", s, "an object of lr, min_lr_ratio, warmup_steps, decay_steps");
  auto number = [&](const char* name, double low, bool low_included) {
    const nlohmann::json& v = s.contains(name) ? s.at(name) : nlohmann::json();
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!std::isfinite(x) || x > std::numeric_limits<float>::max() || x < low ||
        (!low_included && x == low)) {
      throw bad(std::string(".") + name, v, low_included ? "a finite number >= 0" : "a finite number > 0");
    }
    return static_cast<float>(x);
  };
  auto integer = [&](const char* name, int64_t low) {
    const nlohmann::json& v = s.contains(name) ? s.at(name) : nlohmann::json();
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(
                                                           std::numeric_limits<int64_t>::max())) ||
        v.get<int64_t>() < low) {
      throw bad(std::string(".") + name, v, low == 0 ? "an integer >= 0" : "an integer >= 1");
    }
    return v.get<int64_t>();
  };
  LrSchedule schedule;
  schedule.lr = number("lr", 0, false);
  schedule.min_lr_ratio = number("min_lr_ratio", 0, true);
  schedule.warmup_steps = integer("warmup_steps", 0);
  schedule.decay_steps = integer("decay_steps", 1);
  return schedule;
}

}  // namespace

CheckpointRun checkpoint_run(const std::string& path, const nlohmann::json& training,
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
  if (training.contains("lr_schedule")) run.schedule = schedule_state(path, training);
  return run;
}

std::unique_ptr<CheckpointFolderLock> lock_checkpoint_folder(
    const ShardedCheckpointContext& context, World& world) {
  std::unique_ptr<CheckpointFolderLock> lock;
  std::string failure;
  try {
    check_checkpoint_folder(context.dir);  // at start, not at the first save
    if (world.rank() == 0) {
      lock = std::make_unique<CheckpointFolderLock>(context.dir, context.job, world.size());
    }
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  if (world.any(!failure.empty(), "checkpoint folder lock")) {
    throw CheckpointError(failure.empty() ? "another rank could not use the checkpoint folder '" +
                                                context.dir + "' (see its message)"
                                          : failure);
  }
  return lock;
}

namespace {

// " The newest valid checkpoint is ...: move ... away to resume from it." for a damaged
// checkpoint at `damaged`, checking the older ones (newest first) in full.
std::string older_valid_hint(const std::string& dir, int64_t damaged_step,
                             const std::string& damaged) {
  const std::string away = fmt::format("mv {} {}/damaged-{}", damaged, dir,
                                       std::filesystem::path(damaged).filename().string());
  try {
    for (const CompleteCheckpoint& c : complete_checkpoints(dir)) {
      if (c.step >= damaged_step) continue;
      try {
        const CheckpointReader reader(c.path);
        checkpoint_run(c.path, reader.training(), reader.step());
      } catch (const CheckpointError&) {
        continue;
      }
      return fmt::format(". The newest valid checkpoint is {} (step {}): move the damaged one "
                         "away ({}) to resume from it",
                         c.path, c.step, away);
    }
  } catch (const CheckpointError&) {
  }
  return fmt::format(". No older checkpoint in '{}' is valid: move the damaged one away ({}) to "
                     "start afresh",
                     dir, away);
}

// Opens and checks the agreed checkpoint, then reads it into the state's owned ranges (no
// communication). Damage found while opening gets older_valid_hint when `hint` (rank 0).
CheckpointRun read_checkpoint(const ShardedCheckpointContext& context,
                              const CompleteCheckpoint& newest, int global_batch,
                              StageModel& model, TrainingState& state, bool hint) {
  std::optional<CheckpointReader> opened;
  CheckpointRun run;
  try {
    opened.emplace(newest.path);
    run = checkpoint_run(newest.path, opened->training(), opened->step());
  } catch (const CheckpointError& e) {
    if (!hint) throw;
    throw CheckpointError(e.what() + older_valid_hint(context.dir, newest.step, newest.path));
  }
  const CheckpointReader& reader = *opened;
  reader.check_model(context.config);
  if (run.global_batch != global_batch) {
    throw CheckpointError(fmt::format("checkpoint {} was saved with --batch-size {}; this run has "
                                      "--batch-size {} (the data position would not match)",
                                      newest.path, run.global_batch, global_batch));
  }
  for (const char* section : {"params", "adam_m", "adam_v"}) {
    if (!reader.has_section(section)) {
      throw CheckpointError(fmt::format("checkpoint {} has no '{}' section (a parameters-only "
                                        "file cannot resume training)",
                                        newest.path, section));
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
  return run;
}

// The ranks grouped by the value each holds, in order of first appearance, each group worded by
// `say` (given the value and whether the group has several ranks): "rank 0 sees step 200; ranks
// 1, 3 see step 100".
std::string ranks_by_value(const std::vector<int64_t>& values,
                           const std::function<std::string(int64_t, bool)>& say) {
  std::vector<int64_t> distinct;
  for (int64_t v : values) {
    if (std::find(distinct.begin(), distinct.end(), v) == distinct.end()) distinct.push_back(v);
  }
  std::string text;
  for (int64_t v : distinct) {
    std::string ranks;
    int count = 0;
    for (size_t r = 0; r < values.size(); ++r) {
      if (values[r] != v) continue;
      ranks += (count++ == 0 ? "" : ", ") + std::to_string(r);
    }
    text += fmt::format("{}{} {} {}", text.empty() ? "" : "; ", count == 1 ? "rank" : "ranks",
                        ranks, say(v, count > 1));
  }
  return text;
}

std::string steps_by_rank(const std::vector<int64_t>& steps) {  // -1: none
  return ranks_by_value(steps, [](int64_t step, bool several) {
    const char* verb = several ? "see" : "sees";
    return step < 0 ? fmt::format("{} none", verb) : fmt::format("{} step {}", verb, step);
  });
}

// FNV-1a of <checkpoint>/manifest.json's bytes, never 0; 0 when it cannot be read (the load that
// follows reports why).
uint64_t manifest_file_hash(const std::string& checkpoint) {
  std::ifstream in(checkpoint + "/manifest.json", std::ios::binary);
  if (!in) return 0;
  Fnv1a sum;
  char buffer[4096];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    sum.update(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return 0;
  return sum.hash == 0 ? 1 : sum.hash;
}

std::string manifests_by_rank(const std::vector<int64_t>& hashes) {
  return ranks_by_value(hashes, [](int64_t hash, bool several) {
    return fmt::format("{} a manifest.json of checksum {}", several ? "read" : "reads",
                       checksum_text(static_cast<uint64_t>(hash)));
  });
}

}  // namespace

std::optional<CheckpointRun> load_newest_sharded_checkpoint(
    const ShardedCheckpointContext& context, int global_batch, StageModel& model,
    TrainingState& state, World& world, std::string* path) {
  std::optional<CompleteCheckpoint> newest;
  std::string failure;
  try {
    check_checkpoint_folder(context.dir);  // at start, not at the first save
    const std::vector<CompleteCheckpoint> all = complete_checkpoints(context.dir);
    if (!all.empty()) newest = all.front();
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  if (world.any(!failure.empty(), "checkpoint search")) {
    throw CheckpointError(failure.empty() ? "another rank could not look into '" + context.dir +
                                                "' (see its message)"
                                          : failure);
  }
  // Every rank resumes from the same step, or none does.
  const std::vector<int64_t> steps =
      world.allgather(newest ? newest->step : -1, "newest checkpoint step");
  if (std::adjacent_find(steps.begin(), steps.end(), std::not_equal_to<>()) != steps.end()) {
    throw CheckpointError(fmt::format(
        "ranks disagree on the newest complete checkpoint in '{}': {}. Every rank must see the "
        "same folder (one shared file system, not a copy per host), and no other job may write "
        "to it",
        context.dir, steps_by_rank(steps)));
  }
  if (!newest) return std::nullopt;
  // ... and from the same checkpoint: two folders (a copy per host, another job's run) can hold
  // the same step of different runs, which would train on without error until the next save.
  const std::vector<int64_t> manifests =
      world.allgather(static_cast<int64_t>(manifest_file_hash(newest->path)), "newest manifest");
  if (std::find(manifests.begin(), manifests.end(), 0) == manifests.end() &&
      std::adjacent_find(manifests.begin(), manifests.end(), std::not_equal_to<>()) !=
          manifests.end()) {
    throw CheckpointError(fmt::format(
        "ranks see different checkpoints as step {} in '{}': {}. Every rank must see the same "
        "folder (one shared file system, not a copy per host), and no other job may write to it",
        newest->step, context.dir, manifests_by_rank(manifests)));
  }
  CheckpointRun run;
  try {
    run = read_checkpoint(context, *newest, global_batch, model, state, world.rank() == 0);
  } catch (const CheckpointError& e) {
    failure = e.what();
  }
  if (world.any(!failure.empty(), "checkpoint load")) {
    throw CheckpointError(failure.empty() ? "another rank could not load the checkpoint " +
                                                newest->path + " (see its message)"
                                          : failure);
  }
  state.params_written();
  if (path != nullptr) *path = newest->path;
  return run;
}

}  // namespace plexus::engine
