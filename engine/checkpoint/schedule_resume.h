// schedule_resume.h - what a resumed run does with the learning-rate schedule its checkpoint
// recorded (lr_schedule.h) when this run's options give another one: by default it is refused,
// naming the options that differ and the jump it would cause, as Megatron-LM refuses a changed
// scheduler unless told --override-opt_param-scheduler or --use-checkpoint-opt_param-scheduler.
// --lr-schedule-on-resume says which:
//   check       (default) the same schedule, or refuse the run (exit 2) naming each option
//               that differs (--lr, --warmup-steps, --steps) with both values and the learning
//               rate before and after the resume;
//   checkpoint  continue the checkpoint's schedule: the learning rate goes on exactly as it
//               would have (past the checkpoint's decay end it stays at its minimum); --steps
//               only says where this run stops;
//   override    this run's options from the resume on, announced with the jump.
// A run with nothing left to train (its --steps already reached) is never refused. See
// docs/checkpoints.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/optim/lr_schedule.h"

namespace plexus::engine {

enum class ResumeSchedule { kCheck, kCheckpoint, kOverride };

// "check", "checkpoint", "override"; false for anything else.
bool parse_resume_schedule(std::string_view text, ResumeSchedule* out);

struct ScheduleChoice {
  LrSchedule schedule;  // what the run uses from the resume on
  std::string note;     // for rank 0 to print ("" when the schedules are equal)
};

// `saved`: the checkpoint's schedule (nullopt: saved before plexus-train recorded it; this
// run's is used, with a note, except under kCheckpoint, which is refused). `requested`: this
// run's options; `next_step` the checkpoint's next step (0-based); `steps` this run's --steps.
// Throws std::invalid_argument (bad input, exit 2) naming `checkpoint` and the options.
ScheduleChoice resume_schedule(const std::string& checkpoint,
                               const std::optional<LrSchedule>& saved,
                               const LrSchedule& requested, ResumeSchedule mode,
                               int64_t next_step, int64_t steps);

}  // namespace plexus::engine
