#include "engine/plugin/active_plugins.h"

#include <cstddef>
#include <stdexcept>

#include "engine/world/world.h"

namespace plexus::engine {

ActivePlugin::~ActivePlugin() {
  if (state && library.api().destroy) library.api().destroy(state);
}

namespace {

// The hook `field` of the plugin's table, or nullptr when the table is too small to hold it (a
// plugin built for an older ABI: the table grows only by appending).
template <typename Hook>
Hook hook_if_present(const plx_plugin_t& api, Hook plx_plugin_t::*field) {
  const size_t end = static_cast<size_t>(reinterpret_cast<const char*>(&(api.*field)) -
                                         reinterpret_cast<const char*>(&api)) +
                     sizeof(Hook);
  return api.struct_size >= end ? api.*field : nullptr;
}

}  // namespace

decltype(plx_plugin_t::run_pipeline) ActivePlugin::run_pipeline() const {
  return hook_if_present(library.api(), &plx_plugin_t::run_pipeline);
}

decltype(plx_plugin_t::tensor_allreduce) ActivePlugin::tensor_allreduce() const {
  return hook_if_present(library.api(), &plx_plugin_t::tensor_allreduce);
}

decltype(plx_plugin_t::plan_memory) ActivePlugin::plan_memory() const {
  return hook_if_present(library.api(), &plx_plugin_t::plan_memory);
}

decltype(plx_plugin_t::reduce_scatter) ActivePlugin::reduce_scatter() const {
  return hook_if_present(library.api(), &plx_plugin_t::reduce_scatter);
}

decltype(plx_plugin_t::all_gather) ActivePlugin::all_gather() const {
  return hook_if_present(library.api(), &plx_plugin_t::all_gather);
}

ActivePlugins create_plugins(const Placement& placement, plx_comm_t world, int world_rank,
                             const ParallelGroups& groups, size_t bucket_bytes,
                             const PipelineSettings& pipeline) {
  struct Wanted {
    std::string name;
    std::vector<std::string> args;
    char axis;  // the axis whose group and coordinate the plugin gets
  };
  std::vector<Wanted> wanted;
  for (const Axis& axis : placement.axes) {
    if (axis.written || axis.degree > 1) {
      wanted.push_back({std::string(1, axis.letter), {}, axis.letter});
    }
  }
  for (const PluginSpec& spec : placement.plugins) wanted.push_back({spec.name, spec.args, 'D'});

  ActivePlugins plugins;
  for (auto& [name, args, letter] : wanted) {
    auto owned = std::make_unique<ActivePlugin>();
    ActivePlugin& plugin = *owned;
    plugin.library = load_plugin(name);
    plugin.args = args;
    for (const std::string& a : plugin.args) plugin.arg_pointers.push_back(a.c_str());
    plx_plugin_context_t& context = plugin.context;
    context.world = world;
    context.group = letter == 'P' ? groups.pipeline()
                    : letter == 'T' ? groups.tensor()
                                    : groups.data();
    context.degree = placement.degree(letter);
    context.coordinate = placement.coordinate(world_rank, letter);
    context.args = plugin.arg_pointers.data();
    context.num_args = plugin.arg_pointers.size();
    context.bucket_bytes = bucket_bytes;
    context.data_group = groups.data();
    context.pipeline_group = groups.pipeline();
    context.tensor_group = groups.tensor();
    context.pipeline_schedule = pipeline.schedule;
    context.num_microbatches = pipeline.microbatches;
    context.virtual_stages = pipeline.virtual_stages;
    if (plugin.library.api().create) {
      char err[512] = {};
      plx_result_t r = plugin.library.api().create(&context, &plugin.state, err, sizeof(err));
      if (r != PLX_SUCCESS) {
        if (r == PLX_ERROR_INVALID_ARGUMENT || r == PLX_ERROR_INVALID_USAGE) {
          throw std::invalid_argument(err);
        }
        throw CommFailure(r, err);
      }
    }
    plugins.push_back(std::move(owned));
  }
  return plugins;
}

}  // namespace plexus::engine
