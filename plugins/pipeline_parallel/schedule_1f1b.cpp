// schedule_1f1b.cpp - the "1f1b" schedule: PipeDream-Flush (Narayanan et al., "Memory-Efficient
// Pipeline-Parallel DNN Training", ICML 2021), as Megatron-LM's non-interleaved schedule runs it.
//
// Stage p first runs W = min(P-p-1, M) warm-up forwards, then alternates one forward and one
// backward (steady state) until every forward has run, then runs the remaining W backwards
// (cool-down). A backward starts as soon as its gradient can arrive, so stage p holds at most
// W+1 <= P-p microbatches of activations (GPipe holds M); the bubble is still (P-1)/M.
//
// The order on each stage (warm-up | steady | cool-down), P = 4, M = 6:
//   stage 0  F0 F1 F2 | F3 B0 F4 B1 F5 B2 | B3 B4 B5
//   stage 1  F0 F1 | F2 B0 F3 B1 F4 B2 F5 B3 | B4 B5
//   stage 2  F0 | F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 | B5
//   stage 3  | F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 |
//
// Steps on stage p (one model chunk per stage), with R = M - W:
//   1. warm-up, i = 0..W-1: receive i's input, forward i, send its output;
//   2. receive microbatch W's input (if R > 0);
//   3. steady, i = 0..R-1: forward W+i; send its output and receive i's output gradient at once;
//      backward i; send its input gradient and receive W+i+1's input at once;
//   4. cool-down, i = R..M-1: receive i's output gradient, backward i, send its input gradient.
// The first stage never receives activations nor sends gradients; the last never sends
// activations nor receives gradients. Bytes per stage and step: as GPipe.
#include <algorithm>

#include "plan.h"

namespace plexus::pipeline {

Plan plan_1f1b(const Geometry& g) {
  const bool first = g.stage == 0, last = g.stage == g.stages - 1;
  const int m_count = g.microbatches;
  const int warmup = std::min(g.stages - g.stage - 1, m_count);
  const int remaining = m_count - warmup;
  Plan plan;
  for (int i = 0; i < warmup; ++i) {
    add_exchange(&plan, false, false, !first, false);
    add_forward(&plan, 0, i);
    add_exchange(&plan, !last, false, false, false);
  }
  if (remaining > 0) add_exchange(&plan, false, false, !first, false);
  for (int i = 0; i < remaining; ++i) {
    add_forward(&plan, 0, warmup + i);
    add_exchange(&plan, !last, false, false, !last);
    add_backward(&plan, 0, i);
    add_exchange(&plan, false, !first, !first && i + 1 < remaining, false);
  }
  for (int i = remaining; i < m_count; ++i) {
    add_exchange(&plan, false, false, false, !last);
    add_backward(&plan, 0, i);
    add_exchange(&plan, false, !first, false, false);
  }
  return plan;
}

}  // namespace plexus::pipeline
