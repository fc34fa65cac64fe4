// tp_ops.h - the communication a tensor-parallel layer needs (Megatron-LM's "f" and "g"
// operators, Shoeybi et al. 2019): an in-place sum- or max-allreduce over the tensor group.
//
// The engine fills TensorParallelOps from the T plugin's tensor_allreduce hook; tests fill it
// with threads that meet at a barrier. TpGroup is what the layers see: with degree 1 every
// call is a no-op, so a single rank needs no functions at all.
#pragma once

#include <cstddef>
#include <functional>

namespace plexus::engine {

// Sum-allreduce or max-allreduce in place over the tensor-parallel group, count floats. Every
// rank of the group calls them in the same order with the same count; every rank must get the
// same result (bit for bit) so that replicated tensors stay equal. They may throw; the
// exception leaves the layer that called them (the shard's slot is then undefined).
struct TensorParallelOps {
  std::function<void(float* data, size_t count)> allreduce_sum;
  std::function<void(float* data, size_t count)> allreduce_max;
};

// This rank's place in the tensor group and the group's collectives.
struct TpGroup {
  int degree = 1;
  int rank = 0;
  const TensorParallelOps* ops = nullptr;  // used only when degree > 1

  void sum(float* data, size_t count) const {
    if (degree > 1) ops->allreduce_sum(data, count);
  }
  void max(float* data, size_t count) const {
    if (degree > 1) ops->allreduce_max(data, count);
  }
};

}  // namespace plexus::engine
