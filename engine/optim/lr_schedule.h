// lr_schedule.h - the learning-rate schedule: linear warm-up over warmup_steps, then cosine decay
// from lr to lr * min_lr_ratio, reached at step decay_steps (as in nanoGPT). Steps past
// decay_steps stay at the minimum. plexus-train decays over its --steps; a resumed run keeps the
// schedule of its checkpoint or refuses a changed one (engine/checkpoint/schedule_resume.h).
#pragma once

#include <cstdint>

namespace plexus::engine {

struct LrSchedule {
  float lr = 3e-3f;           // peak (--lr)
  float min_lr_ratio = 0.1f;  // the decay ends at lr * min_lr_ratio
  int64_t warmup_steps = 50;  // --warmup-steps
  int64_t decay_steps = 1000; // the decay ends here (--steps of the run that set it)

  bool operator==(const LrSchedule& o) const {
    return lr == o.lr && min_lr_ratio == o.min_lr_ratio && warmup_steps == o.warmup_steps &&
           decay_steps == o.decay_steps;
  }
  bool operator!=(const LrSchedule& o) const { return !(*this == o); }
};

// The learning rate of step `step` (0-based: the first step is 0): lr * (step + 1) / warmup_steps
// during warm-up, then min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2 with
// p = min(1, (step - warmup_steps) / max(1, decay_steps - warmup_steps)).
float learning_rate(const LrSchedule& schedule, int64_t step);

}  // namespace plexus::engine
