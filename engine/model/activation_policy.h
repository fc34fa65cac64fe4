// activation_policy.h - what a GptShard keeps of a microbatch's forward pass for its backward
// pass: everything (the default), only the inputs of every N-th block with the blocks' forward
// run again during backward (activation checkpointing, Chen et al. 2016, "Training Deep Nets
// with Sublinear Memory Cost"), and those inputs parked in the host pool between the two passes
// (activation offloading, as the SageMaker model-parallel library's offload_activations with its
// activation_loading_horizon).
//
// Groups: with checkpoint_every N the shard's n blocks form ceil(n/N) groups of N consecutive
// blocks (the last may be shorter); group g's input is the input of block g*N. N >= n is one
// group, the whole shard, as Megatron-LM's "uniform" recompute with recompute_num_layers equal
// to the stage's layers: a microbatch keeps only the shard's input, and the backward recomputes
// all n blocks at once (n blocks' activations in the recompute area). So it saves memory only
// for the microbatches a pipeline schedule keeps in flight, (in flight - 1) x n blocks' worth;
// with one microbatch in flight its peak is the plain one plus one input. For one microbatch
// the smallest peak is near N = sqrt(n) (Chen et al.), or N = 1 when a block's activations
// dwarf its input.
// Offloading: each group's input leaves the device pool as soon as the group's forward is done;
// before the backward of group g the inputs of groups g, g-1, ..., g-loading_horizon+1 that are
// not yet back are brought back, and a group's input leaves the device after its backward.
#pragma once

#include <string>

namespace plexus::engine {

struct ActivationPolicy {
  int checkpoint_every = 0;  // 0: keep every block's activations; N >= 1: checkpoint groups of N
  bool offload = false;      // move the groups' inputs to the host pool (needs checkpointing)
  int loading_horizon = 1;   // groups brought back ahead of the backward that needs them (>= 1)

  // "" if valid; otherwise one message naming the first bad field, its value and the valid
  // range, e.g. "ActivationPolicy: loading_horizon 0 < 1".
  std::string validate() const {
    if (checkpoint_every < 0) {
      return "ActivationPolicy: checkpoint_every " + std::to_string(checkpoint_every) +
             " < 0 (0: no checkpointing)";
    }
    if (offload && checkpoint_every == 0) {
      return "ActivationPolicy: offload needs checkpoint_every >= 1 (got 0): only the "
             "checkpointed block inputs are offloaded";
    }
    if (loading_horizon < 1) {
      return "ActivationPolicy: loading_horizon " + std::to_string(loading_horizon) + " < 1";
    }
    return "";
  }
  bool operator==(const ActivationPolicy&) const = default;
};

}  // namespace plexus::engine
