// offload.cpp - the +offload(...) plugin: moving training state from the device pool to the
// host pool.
//
//   activations  the checkpointed block inputs go to host memory after each forward and come
//                back ahead of the backward that needs them (SageMaker model parallel's
//                activation offloading); needs +ckpt.
//   optimizer    the optimizer state (AdamW's moments) lives in host memory and the optimizer
//                step runs there, on a host copy of the gradient (ZeRO-Offload, Ren et al.,
//                "ZeRO-Offload: Democratizing Billion-Scale Model Training", USENIX ATC 2021).
//   horizon=N    with activations: bring each group's inputs back while the backward of the N-1
//                groups after it runs (SageMaker's activation_loading_horizon), default 4.
// At least one of activations and optimizer. The engine moves the data (docs/memory.md).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace {

constexpr int kDefaultHorizon = 4;  // SageMaker's default activation_loading_horizon

struct Offload {
  bool activations = false;
  bool optimizer = false;
  int horizon = kDefaultHorizon;
  bool horizon_given = false;
};

plx_result_t offload_create(const plx_plugin_context_t* context, void** state, char* err,
                            size_t err_len) {
  if (context == nullptr || state == nullptr) {
    std::snprintf(err, err_len, "offload: create: context and state must be non-NULL");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  Offload offload;
  for (size_t i = 0; i < context->num_args; ++i) {
    const char* arg = context->args[i];
    if (std::strcmp(arg, "activations") == 0) {
      offload.activations = true;
    } else if (std::strcmp(arg, "optimizer") == 0) {
      offload.optimizer = true;
    } else if (std::strncmp(arg, "horizon=", 8) == 0) {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(arg + 8, &end, 10);
      if (arg[8] < '0' || arg[8] > '9' || *end != '\0' || errno != 0 || v < 1 || v > 1024) {
        std::snprintf(err, err_len,
                      "offload: rank %d: argument '%s': horizon must be a whole number in 1..1024",
                      context->coordinate, arg);
        return PLX_ERROR_INVALID_ARGUMENT;
      }
      offload.horizon = static_cast<int>(v);
      offload.horizon_given = true;
    } else {
      std::snprintf(err, err_len,
                    "offload: rank %d: unknown argument '%s' (takes activations, optimizer, "
                    "horizon=N)",
                    context->coordinate, arg);
      return PLX_ERROR_INVALID_ARGUMENT;
    }
  }
  if (!offload.activations && !offload.optimizer) {
    std::snprintf(err, err_len,
                  "offload: rank %d: say what to offload: +offload(activations), "
                  "+offload(optimizer) or both",
                  context->coordinate);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (offload.horizon_given && !offload.activations) {
    std::snprintf(err, err_len,
                  "offload: rank %d: horizon=%d applies to offloaded activations, which are not "
                  "offloaded here (add 'activations')",
                  context->coordinate, offload.horizon);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  auto* owned = new (std::nothrow) Offload(offload);
  if (owned == nullptr) {
    std::snprintf(err, err_len, "offload: out of memory");
    return PLX_ERROR_SYSTEM;
  }
  *state = owned;
  return PLX_SUCCESS;
}

plx_result_t offload_plan_memory(void* state, plx_memory_plan_t* plan, char* err,
                                 size_t err_len) {
  const auto* offload = static_cast<const Offload*>(state);
  if (plan == nullptr || plan->struct_size < sizeof(plx_memory_plan_t)) {
    std::snprintf(err, err_len, "offload: plan_memory: needs a plugin ABI 3 plan");
    return PLX_ERROR_INVALID_USAGE;
  }
  if (offload->activations) {
    plan->offload_activations = 1;
    plan->activation_loading_horizon = offload->horizon;
  }
  if (offload->optimizer) plan->offload_optimizer = 1;
  return PLX_SUCCESS;
}

void offload_destroy(void* state) { delete static_cast<Offload*>(state); }

plx_plugin_t make_plugin() {
  plx_plugin_t p{};
  p.struct_size = sizeof(plx_plugin_t);
  p.abi_version = PLX_PLUGIN_ABI_VERSION;
  p.name = "offload";
  p.version = "0.1.0";
  p.description = "offloading of checkpointed activations and/or optimizer state to host memory";
  p.create = offload_create;
  p.destroy = offload_destroy;
  p.plan_memory = offload_plan_memory;
  return p;
}

const plx_plugin_t kPlugin = make_plugin();

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
