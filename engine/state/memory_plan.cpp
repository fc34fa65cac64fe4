// memory_plan.cpp - merging and checking the plugins' memory plans (see memory_plan.h).
#include "engine/state/memory_plan.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "engine/world/world.h"

namespace plexus::engine {

namespace {

// The plan's fields, by name, read as integers (to see which a plugin changed).
struct Field {
  const char* name;
  int64_t (*read)(const plx_memory_plan_t&);
};
constexpr std::array<Field, 7> kFields = {{
    {"zero_stage", [](const plx_memory_plan_t& p) -> int64_t { return p.zero_stage; }},
    {"param_persistence_threshold",
     [](const plx_memory_plan_t& p) -> int64_t {
       return static_cast<int64_t>(p.param_persistence_threshold);
     }},
    {"prefetch_units", [](const plx_memory_plan_t& p) -> int64_t { return p.prefetch_units; }},
    {"checkpoint_every",
     [](const plx_memory_plan_t& p) -> int64_t { return p.checkpoint_every; }},
    {"offload_activations",
     [](const plx_memory_plan_t& p) -> int64_t { return p.offload_activations; }},
    {"activation_loading_horizon",
     [](const plx_memory_plan_t& p) -> int64_t { return p.activation_loading_horizon; }},
    {"offload_optimizer",
     [](const plx_memory_plan_t& p) -> int64_t { return p.offload_optimizer; }},
}};

std::string plural(int64_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

ActivationPolicy MemoryPlan::activation_policy() const {
  ActivationPolicy policy;
  policy.checkpoint_every = plan.checkpoint_every;
  policy.offload = plan.offload_activations != 0;
  policy.loading_horizon = plan.activation_loading_horizon;
  return policy;
}

std::string MemoryPlan::describe() const {
  std::vector<std::string> parts;
  if (plan.zero_stage > 0) {
    std::string zero = fmt::format("zero{}", plan.zero_stage);
    if (plan.zero_stage == 3) {
      zero += fmt::format(" (units of at most {} stay gathered, prefetch {})",
                          plural(static_cast<int64_t>(plan.param_persistence_threshold),
                                 "element"),
                          plural(plan.prefetch_units, "unit"));
    }
    parts.push_back(zero);
  }
  if (plan.checkpoint_every > 0) {
    parts.push_back("activation checkpointing every " + plural(plan.checkpoint_every, "block"));
  }
  if (plan.offload_activations) {
    parts.push_back(fmt::format("activations offloaded (horizon {})",
                                plural(plan.activation_loading_horizon, "group")));
  }
  if (plan.offload_optimizer) parts.push_back("optimizer offloaded");
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

MemoryPlan make_memory_plan(const ActivePlugins& plugins, const std::string& placement) {
  MemoryPlan result;
  plx_memory_plan_t& plan = result.plan;
  std::array<const ActivePlugin*, kFields.size()> setter{};
  for (const auto& owned : plugins) {
    const ActivePlugin& p = *owned;
    auto hook = p.plan_memory();
    if (hook == nullptr) continue;
    const plx_memory_plan_t before = plan;
    char err[512] = {};
    const plx_result_t r = hook(p.state, &plan, err, sizeof(err));
    if (r != PLX_SUCCESS) {
      if (r == PLX_ERROR_INVALID_ARGUMENT || r == PLX_ERROR_INVALID_USAGE) {
        throw std::invalid_argument(err);
      }
      throw CommFailure(r, err);
    }
    plan.struct_size = before.struct_size;  // the engine's, whatever the plugin wrote
    plan.abi_version = before.abi_version;
    for (size_t f = 0; f < kFields.size(); ++f) {
      if (kFields[f].read(plan) == kFields[f].read(before)) continue;
      if (setter[f] != nullptr) {
        throw std::invalid_argument(fmt::format(
            "placement '{}': plugins '{}' and '{}' both set the memory plan's {} ({} then {}); "
            "use one of them",
            placement, setter[f]->name(), p.name(), kFields[f].name, kFields[f].read(before),
            kFields[f].read(plan)));
      }
      setter[f] = &p;
    }
  }
  auto refuse = [&](size_t field, const std::string& why) {
    const char* who = setter[field] != nullptr ? setter[field]->name() : "no plugin";
    throw std::invalid_argument(fmt::format("placement '{}': plugin '{}' set the memory plan's "
                                            "{} to {}: {}",
                                            placement, who, kFields[field].name,
                                            kFields[field].read(plan), why));
  };
  if (plan.zero_stage < 0 || plan.zero_stage > 3) refuse(0, "not in 0..3");
  if (plan.prefetch_units < 0) refuse(2, "not >= 0");
  if (plan.checkpoint_every < 0) refuse(3, "not >= 0 (0: no checkpointing)");
  if (plan.offload_activations != 0 && plan.offload_activations != 1) refuse(4, "not 0 or 1");
  if (plan.activation_loading_horizon < 1) refuse(5, "not >= 1");
  if (plan.offload_optimizer != 0 && plan.offload_optimizer != 1) refuse(6, "not 0 or 1");
  if (plan.offload_activations && plan.checkpoint_every == 0) {
    refuse(4, "offloading moves the checkpointed block inputs, and no plugin turned on "
              "activation checkpointing (add +ckpt)");
  }

  const ActivePlugin* sharder = nullptr;
  for (const auto& owned : plugins) {
    const ActivePlugin& p = *owned;
    const bool rs = p.reduce_scatter() != nullptr, ag = p.all_gather() != nullptr;
    if (!rs && !ag) continue;
    if (sharder != nullptr) {
      throw std::invalid_argument(fmt::format(
          "placement '{}': plugins '{}' and '{}' both provide the sharded state's collectives "
          "(reduce_scatter, all_gather); only one sharding plugin may be loaded",
          placement, sharder->name(), p.name()));
    }
    if (plan.zero_stage > 0 && !(rs && ag)) {
      throw std::invalid_argument(fmt::format(
          "placement '{}': plugin '{}' provides {} but not {}; ZeRO stage {} needs both",
          placement, p.name(), rs ? "reduce_scatter" : "all_gather",
          rs ? "all_gather" : "reduce_scatter", plan.zero_stage));
    }
    sharder = &p;
  }
  if (plan.zero_stage > 0) {
    if (sharder == nullptr) {
      std::string names;
      for (const auto& p : plugins) names += (names.empty() ? "" : ", ") + std::string(p->name());
      throw std::invalid_argument(fmt::format(
          "placement '{}': plugin '{}' asks for ZeRO stage {}, but none of the loaded plugins "
          "({}) provides reduce_scatter and all_gather",
          placement, setter[0]->name(), plan.zero_stage, names));
    }
    result.sharder = sharder;
  }
  return result;
}

}  // namespace plexus::engine
