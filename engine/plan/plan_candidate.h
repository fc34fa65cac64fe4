// plan_candidate.h - one way to run a training job that the placement planner weighs: the data,
// pipeline and tensor degrees, the microbatches, the ZeRO stage, activation checkpointing and
// offloading, and the placement string and options that run it.
#pragma once

#include <string>

namespace plexus::engine {

struct PlanCandidate {
  int data = 1, pipeline = 1, tensor = 1;  // D, P, T degrees; their product is the world size
  int microbatches = 1;                   // per step and data-parallel rank (1F1B when P > 1)
  int zero_stage = 0;                     // 0: plain data parallelism; 1..3: +zero1..3
  bool checkpointing = false;             // +ckpt (every block)
  bool offload_activations = false;       // +offload(activations): needs checkpointing
  bool offload_optimizer = false;         // +offload(optimizer)

  // The placement string that runs it, axes in cluster order (tensor partners neighbours):
  // "D2P2T2+zero1+ckpt+offload(activations,optimizer)"; an axis of degree 1 is left out,
  // and a world of one rank is "D1".
  std::string placement() const;
  // The memory plugins' part of the placement: "zero1+ckpt", "" when none.
  std::string memory_plugins() const;
};

}  // namespace plexus::engine
