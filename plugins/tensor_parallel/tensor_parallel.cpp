// tensor_parallel.cpp - the T plugin: tensor (intra-layer) parallelism, Megatron-LM style.
//
// The engine splits each layer's weights across the T ranks of the tensor group (Shoeybi et al.,
// "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism",
// 2019): column-parallel then row-parallel matrix products, whose partial results the layers
// combine with the two communication operators of the paper, f (identity forward, allreduce
// backward) and g (allreduce forward, identity backward), and a vocabulary-parallel softmax that
// needs a max-allreduce. All of them come down to tensor_allreduce: an in-place plx_allreduce of
// float32 over context->tensor_group, PLX_SUM or PLX_MAX. Every rank gets bit-identical results
// (plexus.h), so the replicated parts of the model stay equal on every tensor rank.
#include <cstdio>
#include <new>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace {

struct TensorParallel {
  plx_comm_t group = nullptr;
  int degree = 1;
  int coordinate = 0;
};

plx_result_t tp_create(const plx_plugin_context_t* context, void** state, char* err,
                       size_t err_len) {
  if (context == nullptr || state == nullptr) {
    std::snprintf(err, err_len, "T: create: context and state must be non-NULL");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (context->struct_size < sizeof(plx_plugin_context_t) || context->tensor_group == nullptr) {
    std::snprintf(err, err_len,
                  "T: create: needs a plugin ABI 2 context with tensor_group set (context of %zu "
                  "bytes, version %u)",
                  context->struct_size, context->abi_version);
    return PLX_ERROR_INVALID_USAGE;
  }
  if (context->num_args != 0) {
    std::snprintf(err, err_len, "T: rank %d: takes no arguments, got %zu (first: '%s')",
                  context->coordinate, context->num_args, context->args[0]);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  int size = 0;
  if (plx_result_t r = plx_comm_size(context->tensor_group, &size); r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "T: %s", plx_get_last_error(context->tensor_group));
    return r;
  }
  if (size != context->degree) {
    std::snprintf(err, err_len, "T: rank %d: tensor group has %d ranks but the placement says T%d",
                  context->coordinate, size, context->degree);
    return PLX_ERROR_INVALID_USAGE;
  }
  auto* tp = new (std::nothrow) TensorParallel;
  if (tp == nullptr) {
    std::snprintf(err, err_len, "T: out of memory");
    return PLX_ERROR_SYSTEM;
  }
  tp->group = context->tensor_group;
  tp->degree = context->degree;
  tp->coordinate = context->coordinate;
  *state = tp;
  return PLX_SUCCESS;
}

plx_result_t tp_tensor_allreduce(void* state, float* data, size_t count, plx_red_op_t op,
                                 char* err, size_t err_len) {
  auto* tp = static_cast<TensorParallel*>(state);
  if (tp == nullptr) {
    std::snprintf(err, err_len, "T: tensor_allreduce: state is NULL");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (op != PLX_SUM && op != PLX_MAX) {
    std::snprintf(err, err_len, "T: rank %d: tensor_allreduce: op %d is not PLX_SUM (%d) or "
                  "PLX_MAX (%d)", tp->coordinate, static_cast<int>(op), PLX_SUM, PLX_MAX);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (data == nullptr && count > 0) {
    std::snprintf(err, err_len, "T: rank %d: tensor_allreduce: data is NULL with count %zu",
                  tp->coordinate, count);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (tp->degree == 1) return PLX_SUCCESS;
  plx_result_t r = plx_allreduce(data, data, count, PLX_FLOAT32, op, tp->group, nullptr);
  if (r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "T: rank %d: tensor_allreduce of %zu floats (%s): %s",
                  tp->coordinate, count, op == PLX_SUM ? "sum" : "max",
                  plx_get_last_error(tp->group));
  }
  return r;
}

void tp_destroy(void* state) { delete static_cast<TensorParallel*>(state); }

const plx_plugin_t kPlugin = {
    sizeof(plx_plugin_t),
    PLX_PLUGIN_ABI_VERSION,
    "T",
    "0.1.0",
    "tensor parallelism (Megatron-LM): in-layer sum/max allreduce over the tensor group",
    tp_create,
    nullptr,
    tp_destroy,
    nullptr,
    tp_tensor_allreduce,
    nullptr,  // plan_memory
    nullptr,  // reduce_scatter
    nullptr,  // all_gather
};

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
