// zero.cpp - the +zero1, +zero2 and +zero3 plugins: ZeRO sharding of the optimizer state, the
// gradients and the parameters over the data-parallel group (Rajbhandari et al., "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", SC 2020).
//
// One source, built three times with PLEXUS_ZERO_STAGE = 1, 2, 3. The plugin asks the engine
// for its stage through plan_memory and supplies the data group's two collectives the engine's
// sharded state runs on: reduce_scatter (the gradient average, plx_reduce_scatter with PLX_AVG)
// and all_gather (plx_allgather, or plx_iallgather for the prefetch of stage 3). The engine owns
// the memory, the units and the optimizer arithmetic (docs/memory.md).
//
// Arguments (stage 3 only; DeepSpeed's names in brackets):
//   persist=N   units of at most N elements stay gathered [stage3_param_persistence_threshold],
//               default 100000
//   prefetch=K  units gathered ahead of their use, default 1 [stage3_prefetch_bucket_size, in
//               units rather than elements]
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

#ifndef PLEXUS_ZERO_STAGE
#error "build with -DPLEXUS_ZERO_STAGE=1, 2 or 3"
#endif

namespace {

#define PLX_STR2(x) #x
#define PLX_STR(x) PLX_STR2(x)
constexpr const char* kName = "zero" PLX_STR(PLEXUS_ZERO_STAGE);
constexpr int kStage = PLEXUS_ZERO_STAGE;
constexpr size_t kDefaultPersistenceThreshold = 100000;  // DeepSpeed's default (elements)
constexpr int kDefaultPrefetchUnits = 1;

struct Zero {
  plx_comm_t group = nullptr;
  int degree = 1;
  int coordinate = 0;
  size_t persistence_threshold = kDefaultPersistenceThreshold;
  int prefetch_units = kDefaultPrefetchUnits;
};

// "key=<unsigned>": true and *value set if arg starts with key= and the rest is a whole number
// of at most max; false if arg has another key; sets *bad if the key matches but the value does
// not parse.
bool parse_count(const char* arg, const char* key, unsigned long long max,
                 unsigned long long* value, bool* bad) {
  const size_t n = std::strlen(key);
  if (std::strncmp(arg, key, n) != 0 || arg[n] != '=') return false;
  const char* digits = arg + n + 1;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(digits, &end, 10);
  *bad = *digits < '0' || *digits > '9' || *end != '\0' || errno != 0 || v > max;
  *value = v;
  return true;
}

plx_result_t zero_create(const plx_plugin_context_t* context, void** state, char* err,
                         size_t err_len) {
  if (context == nullptr || state == nullptr) {
    std::snprintf(err, err_len, "%s: create: context and state must be non-NULL", kName);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (context->struct_size < sizeof(plx_plugin_context_t) || context->data_group == nullptr) {
    std::snprintf(err, err_len,
                  "%s: create: needs a plugin ABI 2 context with data_group set (context of %zu "
                  "bytes, version %u)",
                  kName, context->struct_size, context->abi_version);
    return PLX_ERROR_INVALID_USAGE;
  }
  Zero zero;
  zero.group = context->data_group;
  zero.degree = context->degree;
  zero.coordinate = context->coordinate;
  for (size_t i = 0; i < context->num_args; ++i) {
    const char* arg = context->args[i];
    unsigned long long value = 0;
    bool bad = false;
    if (kStage == 3 && parse_count(arg, "persist", ~0ull, &value, &bad)) {
      if (!bad) {
        zero.persistence_threshold = static_cast<size_t>(value);
        continue;
      }
      std::snprintf(err, err_len,
                    "%s: rank %d: argument '%s': persist must be a whole number of elements "
                    ">= 0",
                    kName, context->coordinate, arg);
      return PLX_ERROR_INVALID_ARGUMENT;
    }
    if (kStage == 3 && parse_count(arg, "prefetch", 64, &value, &bad)) {
      if (!bad) {
        zero.prefetch_units = static_cast<int>(value);
        continue;
      }
      std::snprintf(err, err_len,
                    "%s: rank %d: argument '%s': prefetch must be a whole number of units in "
                    "0..64",
                    kName, context->coordinate, arg);
      return PLX_ERROR_INVALID_ARGUMENT;
    }
    std::snprintf(err, err_len, "%s: rank %d: unknown argument '%s' (%s)", kName,
                  context->coordinate, arg,
                  kStage == 3 ? "zero3 takes persist=N and prefetch=K" : "it takes none");
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  int size = 0;
  if (plx_result_t r = plx_comm_size(zero.group, &size); r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "%s: %s", kName, plx_get_last_error(zero.group));
    return r;
  }
  if (size != zero.degree) {
    std::snprintf(err, err_len,
                  "%s: rank %d: data group has %d ranks but the placement says D%d", kName,
                  zero.coordinate, size, zero.degree);
    return PLX_ERROR_INVALID_USAGE;
  }
  auto* owned = new (std::nothrow) Zero(zero);
  if (owned == nullptr) {
    std::snprintf(err, err_len, "%s: out of memory", kName);
    return PLX_ERROR_SYSTEM;
  }
  *state = owned;
  return PLX_SUCCESS;
}

plx_result_t zero_plan_memory(void* state, plx_memory_plan_t* plan, char* err, size_t err_len) {
  const auto* zero = static_cast<const Zero*>(state);
  if (plan == nullptr || plan->struct_size < sizeof(plx_memory_plan_t)) {
    std::snprintf(err, err_len, "%s: plan_memory: needs a plugin ABI 3 plan", kName);
    return PLX_ERROR_INVALID_USAGE;
  }
  plan->zero_stage = kStage;
  if (kStage == 3) {
    plan->param_persistence_threshold = zero->persistence_threshold;
    plan->prefetch_units = zero->prefetch_units;
  }
  return PLX_SUCCESS;
}

plx_result_t zero_reduce_scatter(void* state, const float* full, float* shard,
                                 size_t shard_count, char* err, size_t err_len) {
  const auto* zero = static_cast<const Zero*>(state);
  if (shard_count > 0 && (full == nullptr || shard == nullptr)) {
    std::snprintf(err, err_len, "%s: rank %d: reduce_scatter: full and shard must be non-NULL",
                  kName, zero->coordinate);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  plx_result_t r = plx_reduce_scatter(full, shard, shard_count, PLX_FLOAT32, PLX_AVG,
                                      zero->group, nullptr);
  if (r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "%s: rank %d: gradient reduce-scatter of %zu elements per rank: %s",
                  kName, zero->coordinate, shard_count, plx_get_last_error(zero->group));
  }
  return r;
}

plx_result_t zero_all_gather(void* state, const float* shard, float* full, size_t shard_count,
                             plx_request_t* request, char* err, size_t err_len) {
  const auto* zero = static_cast<const Zero*>(state);
  if (shard_count > 0 && (full == nullptr || shard == nullptr)) {
    std::snprintf(err, err_len, "%s: rank %d: all_gather: shard and full must be non-NULL",
                  kName, zero->coordinate);
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  plx_result_t r =
      request == nullptr
          ? plx_allgather(shard, full, shard_count, PLX_FLOAT32, zero->group, nullptr)
          : plx_iallgather(shard, full, shard_count, PLX_FLOAT32, zero->group, request);
  if (r != PLX_SUCCESS) {
    std::snprintf(err, err_len, "%s: rank %d: parameter all-gather of %zu elements per rank: %s",
                  kName, zero->coordinate, shard_count, plx_get_last_error(zero->group));
  }
  return r;
}

void zero_destroy(void* state) { delete static_cast<Zero*>(state); }

const std::string kDescription =
    std::string("ZeRO stage ") + std::to_string(kStage) +
    (kStage == 1   ? ": optimizer state sharded over the data-parallel group"
     : kStage == 2 ? ": optimizer state and gradients sharded over the data-parallel group"
                   : ": optimizer state, gradients and parameters sharded over the "
                     "data-parallel group");

plx_plugin_t make_plugin() {
  plx_plugin_t p{};
  p.struct_size = sizeof(plx_plugin_t);
  p.abi_version = PLX_PLUGIN_ABI_VERSION;
  p.name = kName;
  p.version = "0.1.0";
  p.description = kDescription.c_str();
  p.create = zero_create;
  p.destroy = zero_destroy;
  p.plan_memory = zero_plan_memory;
  p.reduce_scatter = zero_reduce_scatter;
  p.all_gather = zero_all_gather;
  return p;
}

const plx_plugin_t kPlugin = make_plugin();

}  // namespace

PLX_PLUGIN_EXPORT const plx_plugin_t* PLX_PLUGIN_ENTRY(void) {
  return &kPlugin;
}
