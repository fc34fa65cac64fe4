// memory_plan.h - the memory plan of a run: what the loaded plugins ask of the engine's
// memory-saving mechanisms (plugin ABI v3, plx_memory_plan_t), merged and checked once after the
// plugins are created.
//
// The plan starts as PLX_MEMORY_PLAN_INIT (everything off) and goes through every plugin with a
// plan_memory hook, in placement order; each sets the fields of its own feature. The engine then
// refuses, with a message naming the placement and the plugins:
//   - a field set by two plugins (e.g. +zero1+zero3, or two +ckpt);
//   - a value out of range (zero_stage not 0..3, prefetch_units < 0, checkpoint_every < 0,
//     activation_loading_horizon < 1, a flag not 0 or 1);
//   - offload_activations without checkpoint_every (only checkpointed inputs are offloaded);
//   - zero_stage > 0 with no plugin providing both reduce_scatter and all_gather, or with two
//     plugins providing them (the sharded state needs exactly one set of data-group collectives).
// Every rank computes the same plan (same placement, same plugins).
#pragma once

#include <string>

#include "engine/model/activation_policy.h"
#include "engine/plugin/active_plugins.h"
#include "plexus/plugin.h"

namespace plexus::engine {

struct MemoryPlan {
  plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  // The plugin whose reduce_scatter and all_gather the sharded state calls (zero_stage > 0),
  // else nullptr. Owned by the ActivePlugins the plan was made from.
  const ActivePlugin* sharder = nullptr;

  bool sharded() const { return plan.zero_stage > 0; }
  // The model's part of the plan (GptShard::set_activation_policy).
  ActivationPolicy activation_policy() const;
  // "zero3 (persist <= 1000 elements, prefetch 1 unit), activation checkpointing every 1
  // block, activations offloaded (horizon 4), optimizer offloaded"; "" when everything is off.
  std::string describe() const;
};

// Runs every plugin's plan_memory and checks the result (see above). Throws
// std::invalid_argument (bad input, exit code 2) for a refused plan or a plugin returning
// PLX_ERROR_INVALID_ARGUMENT / PLX_ERROR_INVALID_USAGE, CommFailure for another error code.
MemoryPlan make_memory_plan(const ActivePlugins& plugins, const std::string& placement);

}  // namespace plexus::engine
