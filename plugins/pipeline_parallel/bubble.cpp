// bubble.cpp - measuring the pipeline bubble (bubble.h).
#include "bubble.h"

#include <fmt/format.h>

namespace plexus::pipeline {

double theoretical_bubble(int stages, int chunks, int microbatches) {
  return static_cast<double>(stages - 1) / (static_cast<double>(chunks) * microbatches);
}

void BubbleMeter::add_step(double step_s, double blocked_s) {
  step_s_ += step_s;
  blocked_s_ += blocked_s;
  ++steps_;
}

void BubbleMeter::take(double sums[2]) {
  sums[0] = blocked_s_;
  sums[1] = step_s_;
  reported_steps_ += steps_;
  blocked_s_ = step_s_ = 0;
  steps_ = 0;
}

std::string BubbleMeter::line(const double sums[2], double theoretical,
                              const std::string& schedule, int stages, int chunks,
                              int microbatches, int64_t first_step, int64_t last_step) {
  const double compute = sums[1] - sums[0];
  const double measured = compute > 0 ? sums[0] / compute : 0.0;
  const int64_t steps = last_step - first_step + 1;
  return fmt::format(
      "pipeline bubble: measured {:.3f}, theoretical {:.3f} ({}, P={}, v={}, M={}, steps {}-{}; "
      "per stage and step {:.4f} s blocked of {:.4f} s)",
      measured, theoretical, schedule, stages, chunks, microbatches, first_step, last_step,
      sums[0] / (stages * steps), sums[1] / (stages * steps));
}

}  // namespace plexus::pipeline
