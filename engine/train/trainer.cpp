#include "engine/train/trainer.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>

#include <fmt/core.h>

#include "engine/data/text_dataset.h"
#include "engine/placement/placement.h"
#include "engine/plugin/plugin_loader.h"
#include "engine/train/stop_request.h"
#include "engine/train/training_run.h"
#include "engine/world/parallel_groups.h"
#include "engine/world/world.h"

namespace plexus::engine {

namespace {

// A training run, as the list of its steps. SIGTERM/SIGINT from here on, once the communicator
// exists and its transport's handlers are in place: during set-up (nothing to save yet, and
// building a large model or reading a checkpoint may take minutes) they end the process at
// once, naming the stage; from the first step on they are recorded, then the ranks finish the
// step, save and exit 0.
int train(const TrainOptions& options, World& world,
          std::unique_ptr<ParallelGroups>& groups_out) {
  StopRequestScope stop_scope;
  std::optional<SetupStopScope> setup_stop;
  setup_stop.emplace(fmt::format("plexus-train: rank {}: ", world.rank()));
  TrainingRun r(options, world);
  check_run(r);
  set_up_groups(r, groups_out);
  create_run_plugins(r);
  plan_memory(r);
  if (r.o.estimate_memory) {
    report_memory_estimate(r);
    return 0;
  }
  build_model(r);
  build_state(r);
  if (r.o.evaluate) {
    evaluate_run(r);
    return 0;
  }
  announce_run(r);
  RunProgress progress = resume_run(r);
  setup_stop.reset();  // from here on a signal stops after the step, which saves
  set_setup_stage("training");
  train_loop(r, progress);
  save_final(r, progress);
  report_memory(r);
  return 0;
}

}  // namespace

// Bad input (exit code 2): options, placement, plugins, data, or an argument the communicator
// refused. Anything else is a runtime failure (exit code 1).
bool is_bad_input(const std::exception& e) {
  if (const auto* comm = dynamic_cast<const CommFailure*>(&e)) {
    return comm->result() == PLX_ERROR_INVALID_ARGUMENT;
  }
  return dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||  // UsageError, PlacementError
         dynamic_cast<const PluginError*>(&e) != nullptr ||
         dynamic_cast<const DataError*>(&e) != nullptr;
}

int run_training(const TrainOptions& options) {
  World world;
  std::unique_ptr<ParallelGroups> groups;
  int code = 0;
  try {
    world.init();
    code = train(options, world, groups);
    std::fflush(stdout);
    const bool groups_ok = groups == nullptr || groups->finish();
    return world.finish() && groups_ok ? code : 1;
  } catch (const std::bad_alloc&) {
    // What the size checks (size_limits.h) could not foresee: named, with the sizes behind it.
    code = 1;
    const ModelOptions& m = options.model;
    std::fprintf(stderr,
                 "plexus-train: rank %d: out of memory while %s (std::bad_alloc): --n-layer %d "
                 "--n-embd %d --n-head %d --seq-len %d, --batch-size %d --microbatches %d over "
                 "%d ranks, %d on this host; lower them, or spread the model over more ranks "
                 "(P, T, +zero3)\n",
                 world.rank(), setup_stage(), m.n_layer, m.n_embd, m.n_head, m.seq_len,
                 options.global_batch, options.microbatches, world.size(), world.local_size());
  } catch (const std::exception& e) {
    code = is_bad_input(e) ? 2 : 1;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  }
  // A failed rank aborts its communicator, so peers blocked in a collective with it learn at
  // once (PLX_ERROR_REMOTE naming this rank) instead of waiting for a timeout.
  std::fflush(stdout);
  if (groups) groups->abort();
  world.abort();
  return code;
}

}  // namespace plexus::engine
