#include "engine/checkpoint/schedule_resume.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace plexus::engine {

namespace {

// "--steps 400 (the checkpoint's: 200)" for each option that differs.
std::vector<std::string> differences(const LrSchedule& saved, const LrSchedule& now) {
  std::vector<std::string> out;
  if (now.decay_steps != saved.decay_steps) {
    out.push_back(fmt::format("--steps {} (the checkpoint's: {})", now.decay_steps,
                              saved.decay_steps));
  }
  if (now.lr != saved.lr) {
    out.push_back(fmt::format("--lr {:g} (the checkpoint's: {:g})", now.lr, saved.lr));
  }
  if (now.warmup_steps != saved.warmup_steps) {
    out.push_back(fmt::format("--warmup-steps {} (the checkpoint's: {})", now.warmup_steps,
                              saved.warmup_steps));
  }
  if (now.min_lr_ratio != saved.min_lr_ratio) {
    out.push_back(fmt::format("min-lr-ratio {:g} (the checkpoint's: {:g})", now.min_lr_ratio,
                              saved.min_lr_ratio));
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

// "the learning rate would go from 3.00e-04 at step 200 to 2.33e-03 at step 201" (steps
// 1-based, as the log prints them).
std::string transition(const LrSchedule& before, const LrSchedule& after, int64_t next_step,
                       const char* verb) {
  const float last = next_step > 0 ? learning_rate(before, next_step - 1) : 0.0f;
  return fmt::format("the learning rate {} from {:.2e} at step {} to {:.2e} at step {}", verb,
                     last, next_step, learning_rate(after, next_step), next_step + 1);
}

}  // namespace

bool parse_resume_schedule(std::string_view text, ResumeSchedule* out) {
  if (text == "check") *out = ResumeSchedule::kCheck;
  else if (text == "checkpoint") *out = ResumeSchedule::kCheckpoint;
  else if (text == "override") *out = ResumeSchedule::kOverride;
  else return false;
  return true;
}

ScheduleChoice resume_schedule(const std::string& checkpoint,
                               const std::optional<LrSchedule>& saved,
                               const LrSchedule& requested, ResumeSchedule mode,
                               int64_t next_step, int64_t steps) {
  if (!saved) {
    if (mode == ResumeSchedule::kCheckpoint) {
      throw std::invalid_argument(fmt::format(
          "--lr-schedule-on-resume checkpoint: checkpoint {} records no learning-rate schedule "
          "(saved by an earlier plexus-train); resume with the options it was started with and "
          "--lr-schedule-on-resume check",
          checkpoint));
    }
    return {requested, fmt::format("checkpoint {} records no learning-rate schedule (saved by "
                                   "an earlier plexus-train): using this run's options",
                                   checkpoint)};
  }
  if (*saved == requested) return {requested, ""};
  const std::vector<std::string> changes = differences(*saved, requested);
  const std::string changed = joined(changes);
  const bool one = changes.size() == 1;
  switch (mode) {
    case ResumeSchedule::kCheckpoint:
      return {*saved, fmt::format("continuing the learning-rate schedule of checkpoint {} "
                                  "(--lr-schedule-on-resume checkpoint; this run's {} {}): "
                                  "--lr {:g}, --warmup-steps {}, decay ending at step {}",
                                  checkpoint, changed, one ? "is ignored" : "are ignored",
                                  saved->lr, saved->warmup_steps, saved->decay_steps)};
    case ResumeSchedule::kOverride:
      return {requested, fmt::format("the learning-rate schedule of this run's options "
                                     "(--lr-schedule-on-resume override; {}): {}",
                                     changed,
                                     transition(*saved, requested, next_step, "goes"))};
    case ResumeSchedule::kCheck:
      break;
  }
  if (next_step >= steps) return {requested, ""};  // nothing left to train: no jump to refuse
  throw std::invalid_argument(fmt::format(
      "{} {} from the learning-rate schedule saved in checkpoint {}: resumed, {}. Pass "
      "--lr-schedule-on-resume checkpoint to continue the saved schedule (then --steps only says "
      "where to stop), --lr-schedule-on-resume override to switch to this run's, or the "
      "checkpoint's values",
      changed, one ? "differs" : "differ", checkpoint,
      transition(*saved, requested, next_step, "would jump")));
}

}  // namespace plexus::engine
