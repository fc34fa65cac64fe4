// schedule_interleaved.cpp - the "interleaved" schedule: Megatron-LM's interleaved 1F1B
// (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC 2021, section 2.2.2).
//
// Each rank holds v model chunks: chunk c of stage p is global chunk c*P + p, so a microbatch
// visits every stage v times. Forwards go in groups of P microbatches per chunk: forward number
// k (0..v*M-1) is chunk (k mod P*v) / P on microbatch (k / (P*v))*P + k mod P; backward number
// k is on the same microbatch and chunk v-1 minus that. For P = 2, v = 2, M = 4:
//   forward order   (c0,m0) (c0,m1) (c1,m0) (c1,m1) (c0,m2) (c0,m3) (c1,m2) (c1,m3)
//   backward order  (c1,m0) (c1,m1) (c0,m0) (c0,m1) (c1,m2) (c1,m3) (c0,m2) (c0,m3)
// Stage p runs W = (P-p-1)*2 + (v-1)*P warm-up forwards (all v*M of them when M == P, then the
// schedule is all forwards then all backwards), then alternates forward W+k and backward k
// (steady state), then runs the remaining backwards (cool-down). The bubble shrinks to
// (P-1)/(v*M) for v times as many point-to-point messages.
//
// Steps on stage p (every exchange is one group of up to two sends and two receives):
//   1. receive forward 0's input (unless p = 0);
//   2. warm-up, k = 0..W-1: forward k; send its output (unless it is the last global chunk) and
//      receive the next forward's input (not when stage 0's next forward is on chunk 0, not after
//      the last forward); the last warm-up exchange also receives the first output gradient
//      (unless p = P-1, or when everything was warm-up);
//   3. steady, k = 0..R-1: forward W+k, backward k, then one exchange: send both results,
//      receive the next input and output gradient. Stage 0 runs P-1 forwards ahead of stage P-1,
//      so it receives nothing when stage P-1 just ran a last-chunk forward; likewise stage P-1
//      receives no gradient when stage 0 just ran a chunk-0 backward;
//   4. (everything was warm-up: receive the first output gradient now);
//   5. cool-down, k = R..v*M-1: backward k; send its input gradient (unless global chunk 0) and
//      receive the next backward's output gradient (not when stage P-1's next backward is on
//      chunk v-1, not after the last backward).
// Bytes per stage and step: v*M activations each way, B*T*C floats each.
#include <algorithm>

#include "plan.h"

namespace plexus::pipeline {

namespace {

// Forward or backward number k -> chunk and microbatch (k may be negative: it then wraps as a
// non-negative modulo, which the steady state uses to look P-1 steps back).
struct Order {
  int stages, chunks;
  int group() const { return stages * chunks; }
  int forward_chunk(int k) const { return (((k % group()) + group()) % group()) / stages; }
  int backward_chunk(int k) const { return chunks - 1 - forward_chunk(k); }
  int microbatch(int k) const { return (k / group()) * stages + k % stages; }
};

}  // namespace

Plan plan_interleaved(const Geometry& g) {
  const Order order{g.stages, g.chunks};
  const bool first = g.stage == 0, last = g.stage == g.stages - 1;
  const int total = g.microbatches * g.chunks;
  const bool all_warmup = g.microbatches == g.stages;
  const int warmup =
      all_warmup ? total
                 : std::min((g.stages - g.stage - 1) * 2 + (g.chunks - 1) * g.stages, total);
  const int remaining = total - warmup;
  Plan plan;

  add_exchange(&plan, false, false, !first, false);
  for (int k = 0; k < warmup; ++k) {
    const int chunk = order.forward_chunk(k);
    add_forward(&plan, chunk, order.microbatch(k));
    const bool recv_activation =
        !(first && order.forward_chunk(k + 1) == 0) && k != total - 1;
    const bool recv_gradient = k == warmup - 1 && !all_warmup && !last;
    add_exchange(&plan, g.gives_output(chunk), false, recv_activation, recv_gradient);
  }

  for (int k = 0; k < remaining; ++k) {
    const int forward_k = warmup + k, backward_k = k;
    const int forward_chunk = order.forward_chunk(forward_k);
    const int backward_chunk = order.backward_chunk(backward_k);
    add_forward(&plan, forward_chunk, order.microbatch(forward_k));
    add_backward(&plan, backward_chunk, order.microbatch(backward_k));
    bool recv_activation =
        first ? order.forward_chunk(forward_k - (g.stages - 1)) != g.chunks - 1 : true;
    if (k == remaining - 1) recv_activation = false;
    const bool recv_gradient =
        last ? order.backward_chunk(backward_k - (g.stages - 1)) != 0 : true;
    add_exchange(&plan, g.gives_output(forward_chunk), g.takes_input(backward_chunk),
                 recv_activation, recv_gradient);
  }

  if (all_warmup) add_exchange(&plan, false, false, false, !last);
  for (int k = remaining; k < total; ++k) {
    const int chunk = order.backward_chunk(k);
    add_backward(&plan, chunk, order.microbatch(k));
    const bool recv_gradient =
        !(last && order.backward_chunk(k + 1) == g.chunks - 1) && k != total - 1;
    add_exchange(&plan, false, g.takes_input(chunk), false, recv_gradient);
  }
  return plan;
}

}  // namespace plexus::pipeline
