// ckpt.cpp - the +ckpt plugin: activation checkpointing (Chen et al., "Training Deep Nets with
// Sublinear Memory Cost", 2016; Megatron-LM's full recomputation; SageMaker model parallel's
// activation checkpointing).
//
// The forward pass keeps only the input of every N-th transformer block of each model chunk;
// the backward pass of each group of N blocks runs their forward again from that input. Memory
// for activations drops from n_blocks block-activations to n_blocks/N inputs plus N blocks'
// worth, for one more forward pass per step. The engine does the recomputation
// (docs/memory.md); this plugin chooses N.
//
// Arguments: none or "each" (N = 1), or "every=N" (N >= 1). N at or past a stage's blocks is
// one group, the whole stage (Megatron-LM's "uniform" method): each microbatch keeps only the
// stage's input, and the backward recomputes the whole stage at once, so it lowers the peak
// only when a pipeline keeps several microbatches in flight (engine/model/activation_policy.h).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace {

struct Checkpointing {
  int every = 1;
};

plx_result_t ckpt_create(const plx_plugin_context_t* context, void** state, char* err,
                         size_t err_len) {
  if (context == nullptr || state == nullptr) {
    std::snprintf(err, err_len, "ckpt: create: context and state must be non-NULL");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  Checkpointing ckpt;
  if (context->num_args > 1) {
    std::snprintf(err, err_len,
                  "ckpt: rank %d: takes at most one argument ('each' or 'every=N'), got %zu",
                  context->coordinate, context->num_args);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (context->num_args == 1) {
    const char* arg = context->args[0];
    if (std::strcmp(arg, "each") == 0) {
      ckpt.every = 1;
    } else if (std::strncmp(arg, "every=", 6) == 0) {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(arg + 6, &end, 10);
      if (arg[6] < '0' || arg[6] > '9' || *end != '\0' || errno != 0 || v < 1 || v > 1 << 20) {
        std::snprintf(err, err_len,
                      "ckpt: rank %d: argument '%s': every must be a whole number of blocks in "
                      "1..%d",
                      context->coordinate, arg, 1 << 20);
        return PLX_ERROR_INVALID_ARGUMENT;
      }
      ckpt.every = static_cast<int>(v);
    } else {
      std::snprintf(err, err_len,
                    "ckpt: rank %d: unknown argument '%s' (takes 'each' or 'every=N')",
                    context->coordinate, arg);
      return PLX_ERROR_INVALID_ARGUMENT;
    }
  }
  auto* owned = new (std::nothrow) Checkpointing(ckpt);
  if (owned == nullptr) {
    std::snprintf(err, err_len, "ckpt: out of memory");
    return PLX_ERROR_SYSTEM;
  }
  *state = owned;
  return PLX_SUCCESS;
}

plx_result_t ckpt_plan_memory(void* state, plx_memory_plan_t* plan, char* err, size_t err_len) {
  if (plan == nullptr || plan->struct_size < sizeof(plx_memory_plan_t)) {
    std::snprintf(err, err_len, "ckpt: plan_memory: needs a plugin ABI 3 plan");
    return PLX_ERROR_INVALID_USAGE;
  }
  plan->checkpoint_every = static_cast<const Checkpointing*>(state)->every;
  return PLX_SUCCESS;
}

void ckpt_destroy(void* state) { delete static_cast<Checkpointing*>(state); }

plx_plugin_t make_plugin() {
  plx_plugin_t p{};
  p.struct_size = sizeof(plx_plugin_t);
  p.abi_version = PLX_PLUGIN_ABI_VERSION;
  p.name = "ckpt";
  p.version = "0.1.0";
  p.description = "activation checkpointing: keep every N-th block's input, recompute in backward";
  p.create = ckpt_create;
  p.destroy = ckpt_destroy;
  p.plan_memory = ckpt_plan_memory;
  return p;
}

const plx_plugin_t kPlugin = make_plugin();

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
