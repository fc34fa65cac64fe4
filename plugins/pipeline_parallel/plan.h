// plan.h - a pipeline schedule, written out for one rank as a list of actions.
//
// A schedule (schedule_gpipe.cpp, schedule_1f1b.cpp, schedule_interleaved.cpp) only decides the
// order of this rank's forwards and backwards and where it talks to its neighbours; the executor
// (executor.cpp) runs the list. An exchange sends what this rank produced and receives what it
// will need, all at once (one plx_group_start/plx_group_end), as Megatron-LM batches its isend
// and irecv. Messages on a link are matched in order, so an exchange names no microbatch:
//   - send_activation sends the oldest forward output not yet sent, to the next stage;
//   - send_gradient sends the oldest input gradient not yet sent, to the previous stage;
//   - recv_activation receives the input of the next forward (in plan order) that takes one;
//   - recv_gradient receives the output gradient of the next backward that takes one.
// This holds because every rank runs its forwards, and its backwards, in the same (chunk,
// microbatch) order, and global chunk k+1 follows global chunk k.
#pragma once

#include <vector>

namespace plexus::pipeline {

// The shape of the pipeline as one rank sees it. Chunk c of stage p is global chunk c*P + p.
struct Geometry {
  int stages = 1;        // P, the pipeline degree
  int stage = 0;         // p, this rank's pipeline coordinate
  int chunks = 1;        // v, model chunks (virtual stages) per rank
  int microbatches = 1;  // M

  bool first_global(int chunk) const { return stage == 0 && chunk == 0; }
  bool last_global(int chunk) const { return stage == stages - 1 && chunk == chunks - 1; }
  // The forward of `chunk` takes an activation from another chunk (not the tokens), and so its
  // backward gives an input gradient back.
  bool takes_input(int chunk) const { return !first_global(chunk); }
  // The forward of `chunk` gives an activation to a later chunk (not the loss), and so its
  // backward takes an output gradient.
  bool gives_output(int chunk) const { return !last_global(chunk); }
};

enum class ActionKind { kForward, kBackward, kExchange };

struct Action {
  ActionKind kind = ActionKind::kExchange;
  int chunk = 0;        // kForward, kBackward: local chunk 0..v-1
  int microbatch = 0;   // kForward, kBackward
  bool send_activation = false;  // kExchange (see above)
  bool send_gradient = false;
  bool recv_activation = false;
  bool recv_gradient = false;
};

using Plan = std::vector<Action>;

// Appends a forward, a backward, or an exchange (nothing when the exchange moves nothing).
void add_forward(Plan* plan, int chunk, int microbatch);
void add_backward(Plan* plan, int chunk, int microbatch);
void add_exchange(Plan* plan, bool send_activation, bool send_gradient, bool recv_activation,
                  bool recv_gradient);

// The schedules. gpipe and 1f1b need chunks == 1; interleaved needs microbatches % stages == 0.
Plan plan_gpipe(const Geometry& g);
Plan plan_1f1b(const Geometry& g);
Plan plan_interleaved(const Geometry& g);

}  // namespace plexus::pipeline
