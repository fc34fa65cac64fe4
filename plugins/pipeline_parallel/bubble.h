// bubble.h - measuring the pipeline bubble against its theoretical size.
//
// The bubble is the time a stage waits for its neighbours instead of computing. Narayanan et al.
// (SC 2021) give its size relative to the ideal (compute) time as (P-1)/(v*M) for P stages, v
// chunks per stage and M microbatches (GPipe and 1F1B: v = 1). The meter adds up, per step, the
// time this rank spent blocked in its exchanges (waiting for an activation or a gradient, or for
// a neighbour to take one) and the step's wall time; every kReportSteps steps the sums of all
// stages give measured = blocked / (step time - blocked), on the same footing as the theory.
#pragma once

#include <cstdint>
#include <string>

namespace plexus::pipeline {

constexpr int kReportSteps = 10;

double theoretical_bubble(int stages, int chunks, int microbatches);

class BubbleMeter {
 public:
  void add_step(double step_s, double blocked_s);
  // True when kReportSteps steps have been added since the last report.
  bool due() const { return steps_ == kReportSteps; }
  // The two sums (blocked seconds, step seconds) to add up over the stages, then reset.
  void take(double sums[2]);
  int64_t first_step() const { return reported_steps_ + 1; }

  // "pipeline bubble: measured X, theoretical Y (...)" from the stages' summed seconds.
  static std::string line(const double sums[2], double theoretical, const std::string& schedule,
                          int stages, int chunks, int microbatches, int64_t first_step,
                          int64_t last_step);

 private:
  double blocked_s_ = 0;
  double step_s_ = 0;
  int steps_ = 0;
  int64_t reported_steps_ = 0;
};

}  // namespace plexus::pipeline
