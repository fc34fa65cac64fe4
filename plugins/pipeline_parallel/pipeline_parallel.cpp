// pipeline_parallel.cpp - the P plugin: pipeline parallelism.
//
// The model is cut into P*v consecutive chunks; pipeline stage p holds chunks p, P+p, ... (v of
// them, v > 1 only with the interleaved schedule). Each step the engine hands run_pipeline its
// chunks as forward and backward callbacks; the plugin writes out this stage's order of
// forwards, backwards and exchanges for the schedule chosen by context->pipeline_schedule
// (schedule_gpipe.cpp, schedule_1f1b.cpp, schedule_interleaved.cpp), then runs it
// (executor.cpp), moving activations to the next stage and gradients to the previous one with
// plx_send/plx_recv in groups (p2p.cpp), and measures the bubble (bubble.cpp).
//
// Call order (include/plexus/plugin.h): create (collective over the pipeline group: it splits
// the group into the two links), run_pipeline once per step on every stage, destroy. A failed
// step leaves the plugin unusable (later steps return PLX_ERROR_INVALID_USAGE); the engine then
// aborts its world communicator, so that stages blocked on this one fail with PLX_ERROR_REMOTE
// instead of waiting out PLEXUS_TIMEOUT_MS.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "bubble.h"
#include "executor.h"
#include "p2p.h"
#include "plan.h"
#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace {

using plexus::pipeline::BubbleMeter;
using plexus::pipeline::Geometry;
using plexus::pipeline::Links;
using plexus::pipeline::Plan;

const char* schedule_name(int schedule) {
  switch (schedule) {
    case PLX_PIPELINE_SIMPLE: return "simple";
    case PLX_PIPELINE_1F1B: return "1f1b";
    case PLX_PIPELINE_INTERLEAVED: return "interleaved";
  }
  return "?";
}

// True when libplexus's log shows INFO lines (PLEXUS_DEBUG=INFO or TRACE).
bool info_enabled() {
  int level = 0;
  return plx_get_log_level(&level) == PLX_SUCCESS && level >= 1;
}

struct Pipeline {
  std::unique_ptr<Links> links;
  int schedule = PLX_PIPELINE_1F1B;
  int chunks = 1;
  int world_rank = 0;    // named in messages (the stage when the context has no world)
  bool printer = false;  // world rank 0 (else stage 0) prints the bubble report
  bool failed = false;
  std::string failure;
  BubbleMeter bubble;
};

plx_result_t fail(char* err, size_t err_len, plx_result_t code, const std::string& text) {
  if (err != nullptr && err_len > 0) std::snprintf(err, err_len, "%s", text.c_str());
  return code;
}

plx_result_t pp_create(const plx_plugin_context_t* context, void** state, char* err,
                       size_t err_len) {
  if (context == nullptr || state == nullptr) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                "P: create: context and state must be non-NULL");
  }
  if (context->struct_size < sizeof(plx_plugin_context_t) || context->pipeline_group == nullptr) {
    return fail(err, err_len, PLX_ERROR_INVALID_USAGE,
                "P: create: needs a plugin ABI 2 context with pipeline_group set (context of " +
                    std::to_string(context->struct_size) + " bytes, version " +
                    std::to_string(context->abi_version) + ")");
  }
  const std::string who = "P: rank " + std::to_string(context->coordinate) + ": ";
  if (context->num_args != 0) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                who + "takes no arguments, got " + std::to_string(context->num_args) +
                    " (first: '" + context->args[0] + "')");
  }
  const int schedule = context->pipeline_schedule;
  if (schedule < PLX_PIPELINE_SIMPLE || schedule > PLX_PIPELINE_INTERLEAVED) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                who + "pipeline_schedule " + std::to_string(schedule) +
                    " not in 0..2 (simple, 1f1b, interleaved)");
  }
  if (context->virtual_stages < 1 || context->num_microbatches < 1) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                who + "virtual_stages " + std::to_string(context->virtual_stages) +
                    " and num_microbatches " + std::to_string(context->num_microbatches) +
                    " must be at least 1");
  }
  if (context->virtual_stages > 1 && schedule != PLX_PIPELINE_INTERLEAVED) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                who + "virtual_stages " + std::to_string(context->virtual_stages) +
                    " needs the interleaved schedule, not " + schedule_name(schedule));
  }
  int size = 0;
  if (plx_result_t r = plx_comm_size(context->pipeline_group, &size); r != PLX_SUCCESS) {
    return fail(err, err_len, r, who + plx_get_last_error(context->pipeline_group));
  }
  if (size != context->degree) {
    return fail(err, err_len, PLX_ERROR_INVALID_USAGE,
                who + "pipeline group has " + std::to_string(size) +
                    " ranks but the placement says P" + std::to_string(context->degree));
  }
  if (schedule == PLX_PIPELINE_INTERLEAVED && context->num_microbatches % size != 0) {
    return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT,
                who + "the interleaved schedule needs num_microbatches " +
                    std::to_string(context->num_microbatches) +
                    " to be a multiple of the pipeline degree " + std::to_string(size));
  }
  auto pipeline = std::unique_ptr<Pipeline>(new (std::nothrow) Pipeline);
  if (!pipeline) return fail(err, err_len, PLX_ERROR_SYSTEM, who + "out of memory");
  pipeline->schedule = schedule;
  pipeline->chunks = context->virtual_stages;
  pipeline->world_rank = context->coordinate;
  if (context->world != nullptr) plx_comm_rank(context->world, &pipeline->world_rank);
  pipeline->printer = pipeline->world_rank == 0;
  std::string why;
  if (plx_result_t r = Links::open(context->pipeline_group, &pipeline->links, &why);
      r != PLX_SUCCESS) {
    return fail(err, err_len, r, who + why);
  }
  *state = pipeline.release();
  return PLX_SUCCESS;
}

plx_result_t check_ops(const Pipeline& pp, const plx_stage_ops_t* ops, std::string* why) {
  if (ops == nullptr || ops->struct_size < sizeof(plx_stage_ops_t) || ops->forward == nullptr ||
      ops->backward == nullptr) {
    *why = "ops must be a plx_stage_ops_t (PLX_STAGE_OPS_INIT) with forward and backward set";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (ops->num_microbatches < 1) {
    *why = "num_microbatches " + std::to_string(ops->num_microbatches) + " must be at least 1";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (ops->num_chunks != pp.chunks) {
    *why = "num_chunks " + std::to_string(ops->num_chunks) + " differs from the context's " +
           "virtual_stages " + std::to_string(pp.chunks);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  const int stages = pp.links->stages();
  if (pp.schedule == PLX_PIPELINE_INTERLEAVED && ops->num_microbatches % stages != 0) {
    *why = "the interleaved schedule needs num_microbatches " +
           std::to_string(ops->num_microbatches) + " to be a multiple of the pipeline degree " +
           std::to_string(stages);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  return PLX_SUCCESS;
}

// Adds the step to the bubble meter; every kReportSteps steps sums it over the stages and,
// at INFO, prints the line on world rank 0.
plx_result_t report_bubble(Pipeline* pp, const Geometry& g, double step_s, double blocked_s,
                           std::string* why) {
  pp->bubble.add_step(step_s, blocked_s);
  if (!pp->bubble.due()) return PLX_SUCCESS;
  const int64_t first = pp->bubble.first_step();
  double sums[2];
  pp->bubble.take(sums);
  if (plx_result_t r = pp->links->sum(sums, 2, why); r != PLX_SUCCESS) return r;
  if (pp->printer && info_enabled()) {
    const std::string line = BubbleMeter::line(
        sums, plexus::pipeline::theoretical_bubble(g.stages, g.chunks, g.microbatches),
        schedule_name(pp->schedule), g.stages, g.chunks, g.microbatches, first,
        first + plexus::pipeline::kReportSteps - 1);
    std::fprintf(stderr, "plexus rank %d: INFO %s\n", pp->world_rank, line.c_str());
    std::fflush(stderr);
  }
  return PLX_SUCCESS;
}

plx_result_t pp_run_pipeline(void* state, const plx_stage_ops_t* ops, char* err,
                             size_t err_len) {
  auto* pp = static_cast<Pipeline*>(state);
  if (pp == nullptr) return fail(err, err_len, PLX_ERROR_INVALID_ARGUMENT, "P: state is NULL");
  const std::string who = "P: rank " + std::to_string(pp->world_rank) + " (stage " +
                          std::to_string(pp->links->stage()) + "): ";
  if (pp->failed) {
    return fail(err, err_len, PLX_ERROR_INVALID_USAGE,
                who + "unusable after an earlier failure (" + pp->failure + ")");
  }
  std::string why;
  if (plx_result_t r = check_ops(*pp, ops, &why); r != PLX_SUCCESS) {
    return fail(err, err_len, r, who + "run_pipeline: " + why);
  }
  Geometry g;
  g.stages = pp->links->stages();
  g.stage = pp->links->stage();
  g.chunks = ops->num_chunks;
  g.microbatches = ops->num_microbatches;
  const Plan plan = pp->schedule == PLX_PIPELINE_SIMPLE ? plexus::pipeline::plan_gpipe(g)
                    : pp->schedule == PLX_PIPELINE_1F1B ? plexus::pipeline::plan_1f1b(g)
                                                        : plexus::pipeline::plan_interleaved(g);
  const auto start = std::chrono::steady_clock::now();
  double blocked_s = 0;
  plx_result_t r = plexus::pipeline::run_plan(plan, g, *ops, pp->links.get(), &blocked_s, &why);
  if (r == PLX_SUCCESS) {
    const double step_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r = report_bubble(pp, g, step_s, blocked_s, &why);
  }
  if (r != PLX_SUCCESS) {
    pp->failed = true;
    pp->failure = why;
    pp->links->mark_failed();
    return fail(err, err_len, r, who + why);
  }
  return PLX_SUCCESS;
}

void pp_destroy(void* state) { delete static_cast<Pipeline*>(state); }

const plx_plugin_t kPlugin = {
    sizeof(plx_plugin_t),
    PLX_PLUGIN_ABI_VERSION,
    "P",
    "0.1.0",
    "pipeline parallelism: simple (GPipe), 1f1b (PipeDream-Flush) and interleaved (Megatron-LM) "
    "schedules over plx_send/plx_recv",
    pp_create,
    nullptr,
    pp_destroy,
    pp_run_pipeline,
    nullptr,  // tensor_allreduce
    nullptr,  // plan_memory
    nullptr,  // reduce_scatter
    nullptr,  // all_gather
};

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
