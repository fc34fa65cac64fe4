// data_parallel.cpp - the D plugin: data parallelism by gradient averaging.
//
// Every rank of the data-parallel group holds a full replica of the model and processes its own
// slice of the global batch. After backward, the gradients are averaged over the group with
// plx_allreduce(PLX_AVG), bucket by bucket (buckets of context->bucket_bytes, default 25 MiB, as
// PyTorch DDP), walking the flat gradient buffer from its end, where backward finishes first.
// Because the averaged gradient equals the gradient of the mean loss over the global batch, every
// replica then takes the same optimizer step (Goyal et al., "Accurate, Large Minibatch SGD", 2017;
// Li et al., "PyTorch Distributed", VLDB 2020).
#include <cstdio>
#include <new>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace {

constexpr size_t kDefaultBucketBytes = 25u << 20;

struct DataParallel {
  plx_comm_t group = nullptr;
  int degree = 1;
  int coordinate = 0;
  size_t bucket_elems = kDefaultBucketBytes / sizeof(float);
};

plx_result_t dp_create(const plx_plugin_context_t* context, void** state, char* err,
                       size_t err_len) {
  if (context == nullptr || state == nullptr || context->group == nullptr) {
    std::snprintf(err, err_len, "D: create: context, state and context->group must be non-NULL");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (context->num_args != 0) {
    std::snprintf(err, err_len, "D: rank %d: takes no arguments, got %zu (first: '%s')",
                  context->coordinate, context->num_args, context->args[0]);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  int size = 0;
  if (plx_result_t r = plx_comm_size(context->group, &size); r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "D: %s", plx_get_last_error(context->group));
    return r;
  }
  if (size != context->degree) {
    std::snprintf(err, err_len, "D: rank %d: group has %d ranks but the placement says D%d",
                  context->coordinate, size, context->degree);
    return PLX_ERROR_INVALID_USAGE;
  }
  auto* dp = new (std::nothrow) DataParallel;
  if (dp == nullptr) {
    std::snprintf(err, err_len, "D: out of memory");
    return PLX_ERROR_SYSTEM;
  }
  dp->group = context->group;
  dp->degree = context->degree;
  dp->coordinate = context->coordinate;
  size_t bucket_bytes = context->bucket_bytes ? context->bucket_bytes : kDefaultBucketBytes;
  dp->bucket_elems = bucket_bytes / sizeof(float) ? bucket_bytes / sizeof(float) : 1;
  *state = dp;
  return PLX_SUCCESS;
}

// Averages the gradient over the group, one bucket per allreduce, last bucket first.
plx_result_t dp_after_backward(void* state, const plx_grad_view_t* view, char* err,
                               size_t err_len) {
  auto* dp = static_cast<DataParallel*>(state);
  if (dp->degree == 1) return PLX_SUCCESS;
  size_t end = view->count;
  while (end > 0) {
    size_t begin = end > dp->bucket_elems ? end - dp->bucket_elems : 0;
    float* bucket = view->grads + begin;
    plx_result_t r = plx_allreduce(bucket, bucket, end - begin, PLX_FLOAT32, PLX_AVG, dp->group,
                                   nullptr);
    if (r != PLX_SUCCESS) {
      std::snprintf(err, err_len, "D: rank %d: gradient allreduce of elements [%zu, %zu): %s",
                    dp->coordinate, begin, end, plx_get_last_error(dp->group));
      return r;
    }
    end = begin;
  }
  return PLX_SUCCESS;
}

void dp_destroy(void* state) { delete static_cast<DataParallel*>(state); }

const plx_plugin_t kPlugin = {
    sizeof(plx_plugin_t),
    PLX_PLUGIN_ABI_VERSION,
    "D",
    "0.1.0",
    "data parallelism: replicas average gradients with bucketed plx_allreduce(avg)",
    dp_create,
    dp_after_backward,
    dp_destroy,
    nullptr,  // run_pipeline: not a pipeline plugin
    nullptr,  // tensor_allreduce: not a tensor plugin
    nullptr,  // plan_memory: not a memory plugin
    nullptr,  // reduce_scatter: not a sharding plugin
    nullptr,  // all_gather
};

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
