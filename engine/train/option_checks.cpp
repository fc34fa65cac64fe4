#include "engine/train/option_checks.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "plexus/plugin.h"

namespace plexus::engine {

int schedule_code(const std::string& name) {
  if (name == "simple") return PLX_PIPELINE_SIMPLE;
  if (name == "1f1b") return PLX_PIPELINE_1F1B;
  if (name == "interleaved") return PLX_PIPELINE_INTERLEAVED;
  throw std::invalid_argument(
      fmt::format("--pipeline-schedule '{}' is not one of simple, 1f1b, interleaved", name));
}

ResumeSchedule resume_schedule_option(const std::string& name) {
  ResumeSchedule mode = ResumeSchedule::kCheck;
  if (!parse_resume_schedule(name, &mode)) {
    throw std::invalid_argument(fmt::format(
        "--lr-schedule-on-resume '{}' is not one of check, checkpoint, override", name));
  }
  return mode;
}

void check_options(const TrainOptions& o, const Placement& placement) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw std::invalid_argument(fmt::format("--{} must be at least 1, got {}", name, v));
  };
  positive("steps", o.steps);
  positive("batch-size", o.global_batch);
  positive("seq-len", o.model.seq_len);
  positive("val-batches", o.val_batches);
  positive("log-every", o.log_every);
  positive("microbatches", o.microbatches);
  positive("virtual-stages", o.virtual_stages);
  auto at_least_zero = [](const char* name, double v) {
    if (!(v >= 0) || !std::isfinite(v)) {
      throw std::invalid_argument(
          fmt::format("--{} must be a finite number >= 0, got {}", name, v));
    }
  };
  at_least_zero("warmup-steps", static_cast<double>(o.warmup_steps));
  at_least_zero("val-every", static_cast<double>(o.val_every));
  at_least_zero("save-every", static_cast<double>(o.save_every));
  at_least_zero("weight-decay", o.weight_decay);
  at_least_zero("grad-clip", o.grad_clip);
  at_least_zero("time-limit", o.time_limit_s);
  at_least_zero("target-val-loss", o.target_val_loss);
  at_least_zero("min-lr-ratio", o.min_lr_ratio);
  const int data_degree = placement.degree('D'), P = placement.degree('P');
  if (o.global_batch % data_degree != 0) {
    throw std::invalid_argument(
        fmt::format("--batch-size {} is not divisible by the data-parallel degree {}",
                    o.global_batch, data_degree));
  }
  const int rows = o.global_batch / data_degree;
  if (rows % o.microbatches != 0) {
    throw std::invalid_argument(
        fmt::format("--batch-size {} gives {} rows per data-parallel rank, which do "
                    "not split into --microbatches {} equal microbatches",
                    o.global_batch, rows, o.microbatches));
  }
  const int schedule = schedule_code(o.pipeline_schedule);
  if (o.virtual_stages > 1 && schedule != PLX_PIPELINE_INTERLEAVED) {
    throw std::invalid_argument(
        fmt::format("--virtual-stages {} needs --pipeline-schedule interleaved, got {}",
                    o.virtual_stages, o.pipeline_schedule));
  }
  if (o.virtual_stages > 1 && P == 1) {
    throw std::invalid_argument(
        fmt::format("--virtual-stages {} needs a pipeline degree above 1 (placement "
                    "'{}' has P1)",
                    o.virtual_stages, o.placement));
  }
  if (schedule == PLX_PIPELINE_INTERLEAVED && P > 1 && o.microbatches % P != 0) {
    throw std::invalid_argument(
        fmt::format("--microbatches {} is not a multiple of the pipeline degree {} "
                    "(the interleaved schedule needs it)",
                    o.microbatches, P));
  }
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    throw std::invalid_argument(fmt::format("--lr must be a finite positive number, got {}", o.lr));
  }
  resume_schedule_option(o.lr_schedule_on_resume);
}

}  // namespace plexus::engine
