// active_plugins.h - the plugins a placement names, loaded and created for this rank.
//
// One plugin per written axis and per implied axis of degree > 1 (D, P, T), then one per
// "+name" (which acts on the data-parallel group). Each gets a context (plugin ABI v2) with the
// world, its own axis group as `group`, all three axis groups, its degree and coordinate, its
// arguments and the pipeline options (ABI v2 fields; v3 adds no context fields). Plugins are created in placement order on every rank (a
// plugin's create may be collective over its group) and destroyed in reverse order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/placement/placement.h"
#include "engine/plugin/plugin_loader.h"
#include "engine/world/parallel_groups.h"

namespace plexus::engine {

struct PipelineSettings {
  int schedule = PLX_PIPELINE_1F1B;  // plx_pipeline_schedule_t
  int microbatches = 1;
  int virtual_stages = 1;
};

// A plugin loaded and created for this rank. Held by unique_ptr and never moved, because the
// context handed to create() (its args, in particular) must stay valid until destroy().
struct ActivePlugin {
  LoadedPlugin library;
  void* state = nullptr;
  std::vector<std::string> args;
  std::vector<const char*> arg_pointers;
  plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;

  ActivePlugin() = default;
  ActivePlugin(const ActivePlugin&) = delete;
  ActivePlugin& operator=(const ActivePlugin&) = delete;
  ~ActivePlugin();

  // The v2 hooks, or nullptr when the plugin's table is a v1 one (too small to hold them).
  decltype(plx_plugin_t::run_pipeline) run_pipeline() const;
  decltype(plx_plugin_t::tensor_allreduce) tensor_allreduce() const;
  // The v3 hooks, or nullptr when the plugin's table is a v1 or v2 one.
  decltype(plx_plugin_t::plan_memory) plan_memory() const;
  decltype(plx_plugin_t::reduce_scatter) reduce_scatter() const;
  decltype(plx_plugin_t::all_gather) all_gather() const;
  const char* name() const { return library.api().name; }
};
using ActivePlugins = std::vector<std::unique_ptr<ActivePlugin>>;

// Loads and creates the plugins. Throws PluginError (not found, bad ABI), UsageError-like
// std::invalid_argument when create() refuses its arguments (PLX_ERROR_INVALID_ARGUMENT or
// PLX_ERROR_INVALID_USAGE), CommFailure otherwise.
ActivePlugins create_plugins(const Placement& placement, plx_comm_t world, int world_rank,
                             const ParallelGroups& groups, size_t bucket_bytes,
                             const PipelineSettings& pipeline);

}  // namespace plexus::engine
