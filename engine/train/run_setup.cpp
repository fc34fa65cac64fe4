// run_setup.cpp - the set-up steps of a training run (training_run.h): check, groups, plugins,
// plan, model, state, with --estimate-memory and --evaluate, which end the run after the plan
// and after the state.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/core.h>

#include "engine/config/blas_threads.h"
#include "engine/config/model_config.h"
#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/plan/auto_placement.h"
#include "engine/plan/memory_model.h"
#include "engine/train/device_choice.h"
#include "engine/train/evaluate.h"
#include "engine/train/explain.h"
#include "engine/train/memory_report.h"
#include "engine/train/option_checks.h"
#include "engine/train/output_checks.h"
#include "engine/train/stop_request.h"
#include "engine/train/training_run.h"
#include "topology/host.h"
#include "topology/output_path.h"
#include "topology/topology_file.h"

namespace plexus::engine {

namespace {

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

// "D4", "D2P2", "D1P2T2": the degrees of a resolved placement, for the run's first line.
std::string degrees_text(const Placement& placement) {
  std::string text = fmt::format("D{}", placement.degree('D'));
  if (placement.degree('P') > 1) text += fmt::format("P{}", placement.degree('P'));
  if (placement.degree('T') > 1) text += fmt::format("T{}", placement.degree('T'));
  return text;
}

// --placement auto: the planner chooses the placement and options, then the run goes on as if
// they had been written (engine/plan/auto_placement.h).
void plan_auto_placement_if_asked(TrainingRun& r) {
  if (r.o.placement != "auto") return;
  if (r.o.evaluate) {
    throw UsageError("--placement auto plans a training run; --evaluate needs a placement "
                     "(any: D, P, T, their products)");
  }
  set_setup_stage("planning the placement");
  if (std::string why = select_rank_device(r.o.device, r.o.autocast, r.world.local_rank());
      !why.empty()) {
    throw UsageError(why);
  }
  r.o = plan_auto_placement(r.o, r.world);
  set_setup_stage("checking the options");
}

}  // namespace

void check_run(TrainingRun& r) {
  TrainOptions& o = r.o;
  World& world = r.world;
  set_setup_stage("checking the options");
  if (o.evaluate) {
    set_setup_stage("reading the checkpoint");
    try {
      r.evaluated.emplace(evaluation_checkpoint(&o));
    } catch (const CheckpointError& e) {
      throw UsageError(e.what());  // a missing, damaged or crafted checkpoint is bad input
    }
    set_setup_stage("checking the options");
  }
  plan_auto_placement_if_asked(r);
  r.placement = parse_placement(o.placement);
  resolve_placement(r.placement, world.size(), o.pipeline_degree, o.tensor_degree);
  r.data_degree = r.placement.degree('D');
  r.P = r.placement.degree('P');
  r.d = r.placement.coordinate(world.rank(), 'D');
  check_options(o, r.placement);
  // Sizes before anything is allocated or partitioned: refused at once, naming the options.
  if (std::string why = check_model_sizes(o, r.P, r.data_degree); !why.empty()) {
    throw UsageError(why);
  }
  std::error_code size_ec;
  const uintmax_t data_bytes = std::filesystem::file_size(o.data_path, size_ec);
  r.floor = memory_floor(o, world.size(), r.data_degree, r.placement.degree('T'),
                         size_ec ? 0 : static_cast<uint64_t>(data_bytes));
  if (std::string why = check_memory_floor(o, r.floor, world.size(), world.local_size(),
                                           host_memory_bytes());
      !why.empty()) {
    throw UsageError(why);
  }
  // The compute device, before any model buffer exists (they are allocated where it works).
  if (std::string why = select_rank_device(o.device, o.autocast, world.local_rank());
      !why.empty()) {
    throw UsageError(why);
  }
  r.config = model_config(o.model);
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
  if (o.evaluate && r.leader() && !o.metrics_path.empty()) {
    if (std::string why = topology::output_file_problem(o.metrics_path); !why.empty()) {
      throw UsageError("--metrics-file " + why);
    }
  }
  r.layout = stage_layout(r.placement, world.rank(), o.virtual_stages);
  ShardSpec first = chunk_spec(r.config, r.layout, 0);
  if (std::string why = first.validate(r.config); !why.empty()) {
    throw UsageError(fmt::format("placement '{}' with --n-head {}: {}", o.placement,
                                 r.config.n_head, why));
  }
  r.local_rows = o.global_batch / r.data_degree;
}

void set_up_groups(TrainingRun& r, std::unique_ptr<ParallelGroups>& groups_out) {
  set_setup_stage("creating the groups and plugins");
  groups_out = std::make_unique<ParallelGroups>(r.world.comm(), r.world.rank(), r.placement);
  r.groups = groups_out.get();
}

void create_run_plugins(TrainingRun& r) {
  const PipelineSettings pipeline{schedule_code(r.o.pipeline_schedule), r.o.microbatches,
                                  r.o.virtual_stages};
  r.plugins = create_plugins(r.placement, r.world.comm(), r.world.rank(), *r.groups,
                             r.o.bucket_bytes, pipeline);
  r.pipeliner = plugin_with(
      r.plugins, [](const ActivePlugin& p) { return p.run_pipeline() != nullptr; },
      "run_pipeline");
  r.tensorer = plugin_with(
      r.plugins, [](const ActivePlugin& p) { return p.tensor_allreduce() != nullptr; },
      "tensor_allreduce");
  if (r.P > 1 && r.pipeliner == nullptr) {
    throw UsageError(fmt::format("placement '{}' has pipeline degree {} but no loaded plugin "
                                 "provides run_pipeline",
                                 r.o.placement, r.P));
  }
  if (r.layout.tensor_degree > 1 && r.tensorer == nullptr) {
    throw UsageError(fmt::format("placement '{}' has tensor degree {} but no loaded plugin "
                                 "provides tensor_allreduce",
                                 r.o.placement, r.layout.tensor_degree));
  }
}

void plan_memory(TrainingRun& r) { r.memory.emplace(make_memory_plan(r.plugins, r.o.placement)); }

void report_memory_estimate(const TrainingRun& r) {
  const TrainOptions& o = r.o;
  const MemoryModelInput in =
      memory_model_input(o, r.data_degree, r.P, r.placement.degree('T'), r.memory->plan);
  if (std::string why = check_memory_model_input(in); !why.empty()) {
    throw UsageError(fmt::format("--estimate-memory: placement '{}': {}", o.placement, why));
  }
  const MemoryPrediction prediction = predict_memory(in);
  if (r.leader()) {
    std::printf("plexus-train: predicted memory peaks per rank of each pipeline stage, "
                "placement %s (docs/memory.md):\n%s\n",
                o.placement.c_str(), describe_prediction(prediction).c_str());
  }
  if (!o.memory_report_path.empty()) {
    write_predicted_memory_report(memory_report_path(o.memory_report_path, r.world.rank()),
                                  r.world.rank(), o.placement,
                                  prediction_json(prediction.stages.at(r.layout.stage)));
  }
}

void build_model(TrainingRun& r) {
  set_setup_stage("reading the data");
  r.data.emplace(r.o.data_path, r.o.model.seq_len);
  choose_blas_threads(r.world.local_size());
  if (r.leader()) {
    std::printf("plexus-train: building the model: %d blocks, %.0f parameters (at least %s per "
                "rank with gradients and AdamW state)\n",
                r.config.n_layer, r.floor.parameters, format_bytes(r.floor.model_state).c_str());
    std::fflush(stdout);
  }
  set_setup_stage("building the model");
  r.model = std::make_unique<StageModel>(r.config, r.layout, tensor_ops(r.tensorer),
                                         r.groups->pipeline(), model_storage(r.memory->plan));
  r.model->set_activation_policy(r.memory->activation_policy());
}

void build_state(TrainingRun& r) {
  set_setup_stage("initialising the optimizer state");
  r.state = make_training_state(*r.memory, *r.model, *r.groups, r.plugins, r.world.rank(),
                                r.data_degree, r.d, r.o.seed, memory_tracker());
  if (r.o.explain) {
    print_explanation(explain_line(r.placement, r.world.rank(), *r.model, r.plugins),
                      r.world.comm(), r.world.rank(), r.world.size());
  }
}

void evaluate_run(TrainingRun& r) {
  const TrainOptions& o = r.o;
  set_setup_stage("evaluating");
  load_full_parameters(r.evaluated->params(), *r.model, *r.state);
  const EvaluationResult result = evaluate_validation(*r.model, *r.data, r.world, r.data_degree,
                                                      r.d, o.global_batch, o.model.seq_len);
  const int64_t step = r.evaluated->file.header.at("step").get<int64_t>();
  if (!r.leader()) return;
  std::printf("%s\n", evaluation_line(o.checkpoint_path, step, result, o.model.seq_len).c_str());
  std::fflush(stdout);
  if (o.metrics_path.empty()) return;
  std::string error;
  if (topology::write_text_file(o.metrics_path,
                                evaluation_json(o.checkpoint_path, step, o.placement,
                                                r.world.size(), result, o.model.seq_len),
                                &error) != PLX_SUCCESS) {
    throw std::runtime_error("--metrics-file: " + error);
  }
}

void announce_run(const TrainingRun& r) {
  if (!r.leader()) return;
  const TrainOptions& o = r.o;
  size_t local_params = 0;
  for (int c = 0; c < r.model->num_chunks(); ++c) local_params += r.model->chunk(c).num_params();
  std::printf("plexus-train: %d ranks, placement %s (%s), model %d layers x %d dims x %d heads "
              "(%zu parameters, %zu on rank 0), context %d, global batch %d (%d per rank, %d "
              "microbatches), transport %s\n",
              r.world.size(), o.placement.c_str(), degrees_text(r.placement).c_str(),
              r.config.n_layer, r.config.n_embd, r.config.n_head, full_num_params(r.config),
              local_params, r.config.max_seq_len, o.global_batch, r.local_rows, o.microbatches,
              r.world.transport_name());
  std::printf("plexus-train: data %s: %zu training and %zu validation bytes\n",
              o.data_path.c_str(), r.data->size(Split::kTrain),
              r.data->size(Split::kValidation));
  std::printf("plexus-train: %s\n", describe_compute_device(r.world.local_rank()).c_str());
  if (const std::string plan = r.memory->describe(); !plan.empty()) {
    std::printf("plexus-train: memory: %s\n", plan.c_str());
  }
  std::fflush(stdout);
}

}  // namespace plexus::engine
