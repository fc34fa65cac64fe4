// schedule_gpipe.cpp - the "simple" schedule: GPipe (Huang et al., "GPipe: Efficient Training of
// Giant Neural Networks using Pipeline Parallelism", NeurIPS 2019).
//
// Every stage runs the forwards of all M microbatches, then their backwards, so a stage holds M
// microbatches of activations at the peak. The backwards go in microbatch order 0..M-1, as in
// the other two schedules and in the engine's own loop, so every schedule accumulates each
// parameter's gradient over the microbatches in the same order: the same bits. With P stages of
// equal cost per microbatch the step takes (M + P - 1) * (t_f + t_b): the bubble is (P-1)/M of
// the ideal time.
//
//   stage 0  F0 F1 F2 F3 .. .. .. .. .. .. B0 B1 B2 B3
//   stage 1  .. F0 F1 F2 F3 .. .. .. .. B0 B1 B2 B3 ..
//   stage 2  .. .. F0 F1 F2 F3 .. .. B0 B1 B2 B3 .. ..
//   stage 3  .. .. .. F0 F1 F2 F3 B0 B1 B2 B3 .. .. ..
//
// Steps on stage p (one model chunk per stage):
//   1. receive microbatch 0's activation (unless p is the first stage);
//   2. for m = 0..M-1: forward m; send its output (unless last) and, at once, receive m+1's input;
//   3. receive microbatch 0's output gradient (unless last);
//   4. for m = 0..M-1: backward m; send its input gradient (unless first) and, at once, receive
//      m+1's output gradient.
// Bytes on the wire per stage and step: M activations each way, B*T*C floats each.
#include "plan.h"

namespace plexus::pipeline {

Plan plan_gpipe(const Geometry& g) {
  const bool first = g.stage == 0, last = g.stage == g.stages - 1;
  const int m_count = g.microbatches;
  Plan plan;
  add_exchange(&plan, false, false, !first, false);
  for (int m = 0; m < m_count; ++m) {
    add_forward(&plan, 0, m);
    add_exchange(&plan, !last, false, !first && m + 1 < m_count, false);
  }
  add_exchange(&plan, false, false, false, !last);
  for (int m = 0; m < m_count; ++m) {
    add_backward(&plan, 0, m);
    add_exchange(&plan, false, !first, false, !last && m + 1 < m_count);
  }
  return plan;
}

}  // namespace plexus::pipeline
