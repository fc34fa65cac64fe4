// plan_candidate.cpp - see plan_candidate.h.
#include "engine/plan/plan_candidate.h"

#include <fmt/format.h>

namespace plexus::engine {

std::string PlanCandidate::placement() const {
  std::string text;
  if (data > 1) text += fmt::format("D{}", data);
  if (pipeline > 1) text += fmt::format("P{}", pipeline);
  if (tensor > 1) text += fmt::format("T{}", tensor);
  if (text.empty()) text = "D1";
  if (const std::string plugins = memory_plugins(); !plugins.empty()) text += "+" + plugins;
  return text;
}

std::string PlanCandidate::memory_plugins() const {
  std::string text;
  auto add = [&](const std::string& plugin) { text += (text.empty() ? "" : "+") + plugin; };
  if (zero_stage > 0) add(fmt::format("zero{}", zero_stage));
  if (checkpointing) add("ckpt");
  if (offload_activations && offload_optimizer) {
    add("offload(activations,optimizer)");
  } else if (offload_activations) {
    add("offload(activations)");
  } else if (offload_optimizer) {
    add("offload(optimizer)");
  }
  return text;
}

}  // namespace plexus::engine
