#include "engine/train/trainer.h"

#include <cblas.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/checkpoint_io.h"
#include "engine/checkpoint/checkpoint_metrics.h"
#include "engine/data/text_dataset.h"
#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"
#include "engine/optim/lr_schedule.h"
#include "engine/placement/placement.h"
#include "engine/plan/auto_placement.h"
#include "engine/plan/memory_model.h"
#include "engine/plugin/active_plugins.h"
#include "engine/plugin/plugin_loader.h"
#include "engine/state/memory_plan.h"
#include "engine/state/param_gather.h"
#include "engine/state/stage_model.h"
#include "engine/state/training_state.h"
#include "engine/train/blas_threads.h"
#include "engine/train/device_choice.h"
#include "engine/train/evaluate.h"
#include "engine/train/explain.h"
#include "engine/train/memory_report.h"
#include "engine/train/model_config.h"
#include "engine/train/option_checks.h"
#include "engine/train/output_checks.h"
#include "engine/train/resume.h"
#include "engine/train/size_limits.h"
#include "engine/train/stop_request.h"
#include "engine/world/parallel_groups.h"
#include "engine/world/world.h"
#include "topology/host.h"
#include "topology/output_path.h"
#include "topology/topology_file.h"

namespace plexus::engine {

namespace {

// Bad input (exit code 2) as opposed to a runtime failure (exit code 1).
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A checkpoint of the full model (Gpt's flat layout) from buffers gathered on rank 0; adam_m and
// adam_v may be empty (--save-params writes the parameters only).
Checkpoint make_checkpoint(const TrainOptions& o, const GptConfig& c, std::vector<float> params,
                           std::vector<float> adam_m, std::vector<float> adam_v,
                           int64_t next_step, float last_val_loss) {
  Checkpoint ck;
  ck.header["format"] = "plexus-gpt";
  ck.header["model"] = {{"vocab_size", c.vocab_size}, {"max_seq_len", c.max_seq_len},
                        {"n_layer", c.n_layer},       {"n_head", c.n_head},
                        {"n_embd", c.n_embd}};
  ck.header["step"] = next_step;
  ck.header["seed"] = o.seed;
  ck.header["placement"] = o.placement;
  ck.header["global_batch"] = o.global_batch;
  ck.header["val_loss"] = last_val_loss;
  nlohmann::json tensors = nlohmann::json::array();
  const ShardSpec whole{0, c.n_layer, true, true, 1, 0};
  for (const ShardTensor& t : shard_tensors(c, whole)) {
    tensors.push_back({{"name", t.name}, {"offset", t.full_offset}, {"shape", t.full_shape}});
  }
  ck.header["tensors"] = tensors;
  ck.sections.push_back({"params", std::move(params)});
  if (!adam_m.empty()) ck.sections.push_back({"adam_m", std::move(adam_m)});
  if (!adam_v.empty()) ck.sections.push_back({"adam_v", std::move(adam_v)});
  return ck;
}

// The tensor plugin's hook as the layers' TensorParallelOps; a failure throws CommFailure.
TensorParallelOps tensor_ops(const ActivePlugin* plugin) {
  TensorParallelOps ops;
  if (plugin == nullptr) return ops;
  auto call = [hook = plugin->tensor_allreduce(), state = plugin->state](float* data,
                                                                         size_t count,
                                                                         plx_red_op_t op) {
    char err[512] = {};
    plx_result_t r = hook(state, data, count, op, err, sizeof(err));
    if (r != PLX_SUCCESS) throw CommFailure(r, err);
  };
  ops.allreduce_sum = [call](float* data, size_t count) { call(data, count, PLX_SUM); };
  ops.allreduce_max = [call](float* data, size_t count) { call(data, count, PLX_MAX); };
  return ops;
}

// The one plugin with hook `has` (nullptr if none); throws UsageError if several have it.
template <typename Has>
ActivePlugin* plugin_with(const ActivePlugins& plugins, Has has, const char* hook) {
  ActivePlugin* found = nullptr;
  for (const auto& p : plugins) {
    if (!has(*p)) continue;
    if (found != nullptr) {
      throw UsageError(fmt::format("plugins '{}' and '{}' both provide {}; only one may",
                                   found->library.api().name, p->library.api().name, hook));
    }
    found = p.get();
  }
  return found;
}

// Every rank's share of a value that only the head's tensor rank 0 knows (the loss), summed over
// the world and divided by |D|: the mean over data-parallel replicas, on every rank.
double replica_mean(World& world, const StageModel& model, double value, int data_degree,
                    const char* what) {
  const bool owner = model.holds_head() && model.layout().tensor_rank == 0;
  return world.sum(owner ? value : 0.0, what) / data_degree;
}

// Mean validation loss over the whole validation set, averaged over the data-parallel ranks.
// Each batch goes through in the step's microbatches, so validation needs no more activation
// memory than training (every microbatch has the same rows, so the mean of their means is the
// batch's mean).
float validation_loss(StageModel& model, const TextDataset& data, const TrainOptions& o,
                      World& world, int d, int local_rows, int data_degree) {
  std::vector<int32_t> tokens, targets;
  const int M = o.microbatches, rows = local_rows / M;
  const size_t mb_tokens = static_cast<size_t>(rows) * o.model.seq_len;
  double sum = 0;
  for (int i = 0; i < o.val_batches; ++i) {
    data.validation_batch(i, o.val_batches, o.global_batch, d * local_rows, local_rows, tokens,
                          targets);
    double batch = 0;
    for (int m = 0; m < M; ++m) {
      batch += model.forward_only(tokens.data() + m * mb_tokens, targets.data() + m * mb_tokens,
                                  rows, o.model.seq_len);
    }
    sum += batch / M;
  }
  return static_cast<float>(
      replica_mean(world, model, sum / o.val_batches, data_degree, "validation loss"));
}

std::string degrees_text(const Placement& placement) {
  std::string text = fmt::format("D{}", placement.degree('D'));
  if (placement.degree('P') > 1) text += fmt::format("P{}", placement.degree('P'));
  if (placement.degree('T') > 1) text += fmt::format("T{}", placement.degree('T'));
  return text;
}

int train(const TrainOptions& options, World& world,
          std::unique_ptr<ParallelGroups>& groups_out) {
  TrainOptions o = options;
  std::optional<ModelCheckpoint> evaluated;  // --evaluate: the checkpoint, its model in o.model
  // SIGTERM/SIGINT from here on, once the communicator exists and its transport's handlers are
  // in place. During set-up (nothing to save yet, and building a large model or reading a
  // checkpoint may take minutes) they end the process at once, naming the stage; from the first
  // step on they are recorded, then the ranks finish the step, save and exit 0.
  StopRequestScope stop_scope;
  std::optional<SetupStopScope> setup_stop;
  setup_stop.emplace(fmt::format("plexus-train: rank {}: ", world.rank()));
  set_setup_stage("checking the options");
  if (o.evaluate) {
    set_setup_stage("reading the checkpoint");
    try {
      evaluated.emplace(evaluation_checkpoint(&o));
    } catch (const CheckpointError& e) {
      throw UsageError(e.what());  // a missing, damaged or crafted checkpoint is bad input
    }
    set_setup_stage("checking the options");
  }
  // --placement auto: the planner chooses the placement and options, then the run goes on as if
  // they had been written (engine/plan/auto_placement.h).
  if (o.placement == "auto") {
    if (o.evaluate) {
      throw UsageError("--placement auto plans a training run; --evaluate needs a placement "
                       "(any: D, P, T, their products)");
    }
    set_setup_stage("planning the placement");
    if (std::string why = select_rank_device(o.device, o.autocast, world.local_rank());
        !why.empty()) {
      throw UsageError(why);
    }
    o = plan_auto_placement(o, world);
    set_setup_stage("checking the options");
  }
  Placement placement = parse_placement(o.placement);
  resolve_placement(placement, world.size(), o.pipeline_degree, o.tensor_degree);
  const int data_degree = placement.degree('D');
  const int P = placement.degree('P');
  const int d = placement.coordinate(world.rank(), 'D');
  check_options(o, placement);
  // Sizes before anything is allocated or partitioned: refused at once, naming the options.
  if (std::string why = check_model_sizes(o, P, data_degree); !why.empty()) throw UsageError(why);
  std::error_code size_ec;
  const uintmax_t data_bytes = std::filesystem::file_size(o.data_path, size_ec);
  const MemoryFloor floor = memory_floor(o, world.size(), data_degree, placement.degree('T'),
                                         size_ec ? 0 : static_cast<uint64_t>(data_bytes));
  if (std::string why = check_memory_floor(o, floor, world.size(), world.local_size(),
                                           host_memory_bytes());
      !why.empty()) {
    throw UsageError(why);
  }
  // The compute device, before any model buffer exists (they are allocated where it works).
  if (std::string why = select_rank_device(o.device, o.autocast, world.local_rank());
      !why.empty()) {
    throw UsageError(why);
  }
  const GptConfig config = model_config(o.model);
  if (std::string why = check_memory_report_pattern(o.memory_report_path, world.size());
      !why.empty()) {
    throw UsageError(why);
  }
  // Every output this rank writes at the end, checked now (exit 2) rather than after training.
  // --evaluate reads --checkpoint and writes only --metrics-file (rank 0).
  if (std::string why = check_output_paths(o.memory_report_path,
                                           o.evaluate ? "" : o.checkpoint_path,
                                           o.save_params_path, o.plot_path, world.rank());
      !why.empty()) {
    throw UsageError(why);
  }
  if (o.evaluate && world.rank() == 0 && !o.metrics_path.empty()) {
    if (std::string why = topology::output_file_problem(o.metrics_path); !why.empty()) {
      throw UsageError("--metrics-file " + why);
    }
  }
  const StageLayout layout = stage_layout(placement, world.rank(), o.virtual_stages);
  ShardSpec first = chunk_spec(config, layout, 0);
  if (std::string why = first.validate(config); !why.empty()) {
    throw UsageError(fmt::format("placement '{}' with --n-head {}: {}", o.placement,
                                 config.n_head, why));
  }

  set_setup_stage("creating the groups and plugins");
  groups_out = std::make_unique<ParallelGroups>(world.comm(), world.rank(), placement);
  ParallelGroups& groups = *groups_out;
  const PipelineSettings pipeline{schedule_code(o.pipeline_schedule), o.microbatches,
                                  o.virtual_stages};
  ActivePlugins plugins =
      create_plugins(placement, world.comm(), world.rank(), groups, o.bucket_bytes, pipeline);
  ActivePlugin* pipeliner = plugin_with(
      plugins, [](const ActivePlugin& p) { return p.run_pipeline() != nullptr; }, "run_pipeline");
  ActivePlugin* tensorer = plugin_with(
      plugins, [](const ActivePlugin& p) { return p.tensor_allreduce() != nullptr; },
      "tensor_allreduce");
  if (P > 1 && pipeliner == nullptr) {
    throw UsageError(fmt::format("placement '{}' has pipeline degree {} but no loaded plugin "
                                 "provides run_pipeline",
                                 o.placement, P));
  }
  if (layout.tensor_degree > 1 && tensorer == nullptr) {
    throw UsageError(fmt::format("placement '{}' has tensor degree {} but no loaded plugin "
                                 "provides tensor_allreduce",
                                 o.placement, layout.tensor_degree));
  }
  const MemoryPlan memory = make_memory_plan(plugins, o.placement);
  if (o.estimate_memory) {
    const MemoryModelInput in = memory_model_input(o, data_degree, P, placement.degree('T'),
                                                   memory.plan);
    if (std::string why = check_memory_model_input(in); !why.empty()) {
      throw UsageError(fmt::format("--estimate-memory: placement '{}': {}", o.placement, why));
    }
    const MemoryPrediction prediction = predict_memory(in);
    if (world.rank() == 0) {
      std::printf("plexus-train: predicted memory peaks per rank of each pipeline stage, "
                  "placement %s (docs/memory.md):\n%s\n",
                  o.placement.c_str(), describe_prediction(prediction).c_str());
    }
    // With --memory-report, each rank's file holds its stage's prediction (memory_report.h).
    if (!o.memory_report_path.empty()) {
      write_predicted_memory_report(memory_report_path(o.memory_report_path, world.rank()),
                                    world.rank(), o.placement,
                                    prediction_json(prediction.stages.at(layout.stage)));
    }
    return 0;
  }
  set_setup_stage("reading the data");
  TextDataset data(o.data_path, o.model.seq_len);
  choose_blas_threads(world.local_size());
  const bool leader = world.rank() == 0;
  if (leader) {
    std::printf("plexus-train: building the model: %d blocks, %.0f parameters (at least %s per "
                "rank with gradients and AdamW state)\n",
                config.n_layer, floor.parameters, format_bytes(floor.model_state).c_str());
    std::fflush(stdout);
  }
  set_setup_stage("building the model");

  // The model holds only what the plan keeps (ZeRO-2/3: no whole gradient, ZeRO-3: no whole
  // parameters), even during set-up, so the memory peaks cover the whole run (docs/memory.md).
  // The state initialises every shard to the matching slice of Gpt::init_parameters(seed), so
  // replicas start equal.
  StageModel model(config, layout, tensor_ops(tensorer), groups.pipeline(),
                   model_storage(memory.plan));
  size_t local_params = 0;
  for (int c = 0; c < model.num_chunks(); ++c) local_params += model.chunk(c).num_params();
  model.set_activation_policy(memory.activation_policy());
  set_setup_stage("initialising the optimizer state");
  std::unique_ptr<TrainingState> state =
      make_training_state(memory, model, groups, plugins, world.rank(), data_degree, d, o.seed,
                          memory_tracker());

  if (o.explain) {
    print_explanation(explain_line(placement, world.rank(), model, plugins), world.comm(),
                      world.rank(), world.size());
  }
  const int local_rows = o.global_batch / data_degree;
  if (o.evaluate) {
    set_setup_stage("evaluating");
    load_full_parameters(evaluated->params(), model, *state);
    const EvaluationResult result = evaluate_validation(model, data, world, data_degree, d,
                                                        o.global_batch, o.model.seq_len);
    const int64_t step = evaluated->file.header.at("step").get<int64_t>();
    if (leader) {
      std::printf("%s\n", evaluation_line(o.checkpoint_path, step, result, o.model.seq_len)
                              .c_str());
      std::fflush(stdout);
      if (!o.metrics_path.empty()) {
        std::string error;
        if (topology::write_text_file(
                o.metrics_path,
                evaluation_json(o.checkpoint_path, step, o.placement, world.size(), result,
                                o.model.seq_len),
                &error) != PLX_SUCCESS) {
          throw std::runtime_error("--metrics-file: " + error);
        }
      }
    }
    state.reset();    // unhook the model before the plugins whose collectives the hooks call
    plugins.clear();  // destroy the plugins before their groups
    return 0;
  }
  const double tokens_per_step = static_cast<double>(o.global_batch) * o.model.seq_len;
  if (leader) {
    std::printf("plexus-train: %d ranks, placement %s (%s), model %d layers x %d dims x %d heads "
                "(%zu parameters, %zu on rank 0), context %d, global batch %d (%d per rank, %d "
                "microbatches), transport %s\n",
                world.size(), o.placement.c_str(), degrees_text(placement).c_str(),
                config.n_layer, config.n_embd, config.n_head, full_num_params(config),
                local_params, config.max_seq_len, o.global_batch, local_rows, o.microbatches,
                world.transport_name());
    std::printf("plexus-train: data %s: %zu training and %zu validation bytes\n",
                o.data_path.c_str(), data.size(Split::kTrain), data.size(Split::kValidation));
    std::printf("plexus-train: %s\n", describe_compute_device(world.local_rank()).c_str());
    if (const std::string plan = memory.describe(); !plan.empty()) {
      std::printf("plexus-train: memory: %s\n", plan.c_str());
    }
    std::fflush(stdout);
  }
  // Every rank takes part: a sharded state all-gathers its parts into whole chunks first.
  auto gather = [&](StateBuffer which) {
    const ChunkValues values = state->full_values(which);
    return gather_full_model(config, placement, model, values.chunks, world.comm(),
                             world.rank());
  };
  auto save = [&](const std::string& path, bool with_optimizer, int64_t next_step, float val) {
    std::vector<float> params = gather(StateBuffer::kParams);
    std::vector<float> m, v;
    if (with_optimizer) {
      m = gather(StateBuffer::kAdamM);
      v = gather(StateBuffer::kAdamV);
    }
    if (leader) {
      save_checkpoint(path, make_checkpoint(o, config, std::move(params), std::move(m),
                                            std::move(v), next_step, val));
    }
  };

  // Universal sharded checkpoints: lock the folder, resume from the newest complete one, if
  // any, and settle the learning-rate schedule.
  set_setup_stage("reading the checkpoint");
  const uint64_t job =  // drawn by rank 0, shared: it names the job's temporary folders
      o.checkpoint_dir.empty() ? 0
                               : world.broadcast(world.rank() == 0 ? random_job_number() : 0,
                                                 "job id");
  const ShardedCheckpointContext sharded{o.checkpoint_dir, config, o.placement, data_degree, d,
                                         job_id(job)};
  ResumeState resume;
  try {
    resume = resume_training(o, sharded, model, *state, world);
  } catch (const CheckpointError& e) {
    throw UsageError(e.what());  // a damaged or mismatched checkpoint is bad input (exit 2)
  }
  float last_val = resume.run ? resume.run->last_val_loss : NAN;
  int64_t step = resume.run ? resume.run->next_step : 0;
  const uint64_t data_seed = resume.run ? resume.run->seed : o.seed;
  // The step of the sharded checkpoint on disk that this run has (-1: none).
  int64_t saved_step = resume.run ? resume.run->next_step : -1;
  const LrSchedule& schedule = resume.schedule;
  // Fresh: truncated. Resumed: the earlier runs' lines up to the checkpoint's step kept.
  std::unique_ptr<std::ofstream> metrics;
  if (leader && !o.metrics_path.empty()) {
    metrics = open_metrics_file(o.metrics_path,
                                saved_step >= 0 ? std::optional<int64_t>(saved_step)
                                                : std::nullopt);
  }
  auto save_sharded = [&](int64_t next_step) {
    if (o.checkpoint_dir.empty() || next_step == saved_step) return;
    const std::string path = save_sharded_checkpoint(
        sharded, CheckpointRun{next_step, data_seed, o.global_batch, last_val, schedule}, model,
        *state, world);
    saved_step = next_step;
    if (leader) {
      std::printf("plexus-train: saved sharded checkpoint %s\n", path.c_str());
      std::fflush(stdout);
    }
  };

  AdamWConfig adam;
  adam.weight_decay = o.weight_decay;
  std::vector<int32_t> tokens, targets;
  setup_stop.reset();  // from here on a signal stops after the step, which saves
  set_setup_stage("training");
  const auto start = std::chrono::steady_clock::now();
  for (; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    data.train_batch(data_seed, step, d * local_rows, local_rows, tokens, targets);
    model.set_batch(tokens.data(), targets.data(), local_rows, o.model.seq_len, o.microbatches);
    state->zero_grad();
    if (P > 1) {
      char err[1024] = {};
      plx_result_t r = pipeliner->run_pipeline()(pipeliner->state, model.stage_ops(), err,
                                                 sizeof(err));
      if (r != PLX_SUCCESS) throw CommFailure(r, err);
    } else {
      model.run_local();
    }
    state->reduce_gradients();
    const double sum_squares = state->grad_sum_squares();
    const float grad_norm = static_cast<float>(std::sqrt(sum_squares));
    state->scale_grads(clip_coefficient(sum_squares, o.grad_clip));
    adam.lr = learning_rate(schedule, step);
    state->step(step + 1, adam);
    const float loss = static_cast<float>(
        replica_mean(world, model, model.mean_loss(), data_degree, "training loss"));
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const bool validate = o.val_every > 0 && ((step + 1) % o.val_every == 0 || step + 1 == o.steps);
    if (validate) {
      last_val = validation_loss(model, data, o, world, d, local_rows, data_degree);
    }
    if (leader) {
      if ((step + 1) % o.log_every == 0 || step == 0 || validate || step + 1 == o.steps) {
        std::printf("step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %7.0f tok/s | %.3f s "
                    "| elapsed %.1f s\n",
                    static_cast<long long>(step + 1), static_cast<long long>(o.steps), loss,
                    adam.lr, grad_norm, tokens_per_step / step_s, step_s, elapsed);
      }
      if (validate) std::printf("step %5lld | validation loss %.4f\n",
                                static_cast<long long>(step + 1), last_val);
      std::fflush(stdout);
      if (metrics) {
        nlohmann::json row = {{"step", step + 1}, {"loss", loss}, {"lr", adam.lr},
                              {"grad_norm", grad_norm}, {"elapsed_s", elapsed},
                              {"step_s", step_s}};
        if (step_s > 0) row["tokens_per_s"] = tokens_per_step / step_s;
        if (validate) row["val_loss"] = last_val;
        *metrics << row.dump() << "\n" << std::flush;
      }
    }
    if (o.save_every > 0 && (step + 1) % o.save_every == 0) {
      if (!o.checkpoint_path.empty()) save(o.checkpoint_path, true, step + 1, last_val);
      save_sharded(step + 1);
    }
    const bool reached = validate && o.target_val_loss > 0 && last_val < o.target_val_loss;
    const bool timed_out =
        o.time_limit_s > 0 && world.any(elapsed > o.time_limit_s, "time limit");
    const bool signalled = world.any(stop_requested(), "stop request");
    if (reached || timed_out || signalled) {
      ++step;
      if (leader) {
        std::printf("plexus-train: stopping after step %lld (%s)\n", static_cast<long long>(step),
                    reached     ? "validation loss reached the target"
                    : timed_out ? "time limit reached"
                                : "stop requested by a signal; run the same command to resume");
      }
      break;
    }
  }
  set_setup_stage("saving the checkpoints and outputs");
  save_sharded(step);
  if (!o.checkpoint_path.empty()) {
    save(o.checkpoint_path, true, step, last_val);
    if (leader) {
      std::printf("plexus-train: saved checkpoint %s (step %lld)\n", o.checkpoint_path.c_str(),
                  static_cast<long long>(step));
    }
  }
  if (!o.save_params_path.empty()) {
    save(o.save_params_path, false, step, last_val);
    if (leader) std::printf("plexus-train: saved parameters %s\n", o.save_params_path.c_str());
  }
  if (leader) {
    std::printf("plexus-train: memory peaks (rank 0), the device pool in %s\n%s\n",
                device_pool_description(world.local_rank()).c_str(),
                memory_tracker().summary().c_str());
  }
  if (!o.memory_report_path.empty()) {
    write_memory_report(memory_report_path(o.memory_report_path, world.rank()), world.rank(),
                        o.placement, memory_tracker());
  }
  std::fflush(stdout);
  state.reset();    // unhook the model before the plugins whose collectives the hooks call
  plugins.clear();  // destroy the plugins before their groups
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
