// gpt_shard_units.cpp - a GptShard's parameter units (param_units.h): the table that cuts its
// flat buffer into "wte", "wpe", "blocks.<i>", "ln_f" (and the head's own "wte"), a unit's
// initial values (init_unit_parameters), and the end of a unit's backward: the tensor-parallel
// sync of its replicated gradients, then gradient_ready.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/gpt_shard.h"

namespace plexus::engine {

namespace {

// "blocks.3.attn.qkv.weight" -> "blocks.3"; "ln_f.bias" -> "ln_f"; "wte" -> "wte".
std::string unit_of(const std::string& tensor) {
  if (tensor.rfind("blocks.", 0) == 0) return tensor.substr(0, tensor.find('.', 7));
  if (tensor.rfind("ln_f.", 0) == 0) return "ln_f";
  return tensor;
}

}  // namespace

ShardUnitTable shard_units(const std::vector<ShardTensor>& tensors) {
  ShardUnitTable table;
  size_t replicated = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const ShardTensor& t = tensors[k];
    const std::string name = unit_of(t.name);
    if (table.units.empty() || table.units.back().name != name) {
      table.units.push_back(ParamUnit{name, t.offset, 0});
      table.tensors.emplace_back(k, k);
      replicated = 0;
    }
    table.units.back().count += t.numel();
    table.tensors.back().second = k + 1;
    if (t.replicated_in_tp) replicated += t.numel();
    table.replicated_max = std::max(table.replicated_max, replicated);
  }
  return table;
}

void GptShard::build_units() {
  ShardUnitTable table = shard_units(tensors_);
  units_ = std::move(table.units);
  unit_tensors_ = std::move(table.tensors);
  for (size_t u = 0; u < units_.size(); ++u) {
    const std::string& name = units_[u].name;
    const int i = static_cast<int>(u);
    if (name == "wte") (spec_.embed && i == 0 ? unit_wte_ : unit_head_wte_) = i;
    if (name == "wpe") unit_wpe_ = i;
    if (name == "ln_f") unit_lnf_ = i;
    if (name.rfind("blocks.", 0) == 0 && unit_block0_ < 0) unit_block0_ = i;
  }
  if (spec_.tp_degree > 1 && table.replicated_max > 0) {
    replicated_ = TrackedBuffer(table.replicated_max, MemoryPool::kDevice,
                                MemoryCategory::kCommunication, true, tracker_);
  }
}

// A unit is whole tensors, so its values are those tensors' init_parameters values.
void GptShard::init_unit_parameters(uint64_t seed, int unit) {
  if (unit < 0 || static_cast<size_t>(unit) >= units_.size()) {
    throw std::invalid_argument(where("init_unit_parameters") + ": unit " +
                                std::to_string(unit) + " not in 0.." +
                                std::to_string(static_cast<long long>(units_.size()) - 1));
  }
  const ParamUnit& u = units_[unit];
  if (!params_.is_committed(u.offset, u.count)) {
    throw std::logic_error(where("init_unit_parameters") + ": unit " + std::to_string(unit) +
                           " ('" + u.name + "', elements [" + std::to_string(u.offset) + ", " +
                           std::to_string(u.offset + u.count) +
                           ")) is not committed; commit it first");
  }
  std::vector<float> full;
  const auto [first, end] = unit_tensors_[unit];
  for (size_t k = first; k < end; ++k) init_tensor(seed, k, full);
}

// Replicated tensors get equal gradients on every tensor rank in exact arithmetic; one packed
// sum-allreduce per unit, divided by tp, keeps them bit-identical whatever the rounding.
void GptShard::finish_unit(int unit, bool sync) {
  if (sync && spec_.tp_degree > 1) {
    const auto [first, end] = unit_tensors_[unit];
    float* p = replicated_.data();
    for (size_t k = first; k < end; ++k) {
      const ShardTensor& t = tensors_[k];
      if (!t.replicated_in_tp) continue;
      std::memcpy(p, grads_.data() + t.offset, t.numel() * sizeof(float));
      p += t.numel();
    }
    const size_t count = static_cast<size_t>(p - replicated_.data());
    if (count > 0) {
      tp().sum(replicated_.data(), count);
      const float tp = static_cast<float>(spec_.tp_degree);
      p = replicated_.data();
      for (size_t k = first; k < end; ++k) {
        const ShardTensor& t = tensors_[k];
        if (!t.replicated_in_tp) continue;
        float* g = grads_.data() + t.offset;
        for (size_t i = 0; i < t.numel(); ++i) g[i] = p[i] / tp;
        p += t.numel();
      }
    }
  }
  if (hooks_ != nullptr) hooks_->gradient_ready(unit);
}

}  // namespace plexus::engine
