// p2p.h - the links between neighbouring pipeline stages.
//
// Activations flow from stage p to stage p+1 (and from the last stage back to stage 0 when
// ranks hold several chunks); gradients flow the other way. Each direction has its own
// communicator, split from the pipeline group when the plugin is created: on a link whose two
// ends are each other's previous and next stage (P = 2, or a rank sending to itself when P = 1)
// the k-th message is then always the k-th of its own kind, so an activation can never be
// matched with a gradient's receive (messages of one pair are matched in posting order).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "plexus/plexus.h"

namespace plexus::pipeline {

// What one exchange moves; NULL = nothing of that kind. Every buffer holds `count` floats.
struct Transfer {
  const float* send_activation = nullptr;  // to the next stage
  const float* send_gradient = nullptr;    // to the previous stage
  float* recv_activation = nullptr;        // from the previous stage
  float* recv_gradient = nullptr;          // from the next stage
};

class Links {
 public:
  // Collective over the pipeline group (every member calls it at the same point): splits it
  // into the activation and the gradient communicator. On failure *why names the call.
  static plx_result_t open(plx_comm_t pipeline_group, std::unique_ptr<Links>* out,
                           std::string* why);
  Links(const Links&) = delete;
  Links& operator=(const Links&) = delete;
  // Destroys both communicators (a barrier with the other stages), or only frees them after a
  // failure (mark_failed), so that a lost peer cannot hold this rank until the timeout.
  ~Links();

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  int next() const { return (stage_ + 1) % stages_; }
  int previous() const { return (stage_ + stages_ - 1) % stages_; }

  // Posts every send and receive of `t` at once (one plx_group_start/plx_group_end, as
  // Megatron-LM batches isend/irecv) and returns when all are done: no two neighbours can each
  // wait for the other to receive first.
  plx_result_t exchange(const Transfer& t, size_t count, std::string* why);
  // Sums `count` doubles in place over the stages (for the bubble report).
  plx_result_t sum(double* values, size_t count, std::string* why);
  void mark_failed() { failed_ = true; }
  bool failed() const { return failed_; }

 private:
  Links() = default;
  plx_comm_t activations_ = nullptr;
  plx_comm_t gradients_ = nullptr;
  int stage_ = 0;
  int stages_ = 1;
  bool failed_ = false;
};

}  // namespace plexus::pipeline
