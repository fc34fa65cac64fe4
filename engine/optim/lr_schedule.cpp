#include "engine/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace plexus::engine {

float learning_rate(const LrSchedule& s, int64_t step) {
  if (step < s.warmup_steps) {
    return s.lr * static_cast<float>(step + 1) / static_cast<float>(s.warmup_steps);
  }
  const double span = static_cast<double>(std::max<int64_t>(1, s.decay_steps - s.warmup_steps));
  const double progress = std::min(1.0, static_cast<double>(step - s.warmup_steps) / span);
  const double min_lr = s.lr * s.min_lr_ratio;
  return static_cast<float>(min_lr + 0.5 * (s.lr - min_lr) * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace plexus::engine
