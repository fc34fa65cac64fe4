// shard_activations.cpp - the layout of an activation slot and the moves of its group inputs
// between the device and host pools (see shard_activations.h).
#include "engine/model/shard_activations.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/model/carver.h"

namespace plexus::engine {

namespace {

bool checkpoints(const SlotShape& shape, const ActivationPolicy& policy) {
  return policy.checkpoint_every > 0 && shape.num_blocks > 0;
}

// The slot's pointers, carved from base (nullptr: only counts). Inputs come first, so under
// offloading [0, inputs * BTC) is the part that moves and the rest stays committed.
struct Carved {
  std::vector<TpBlockActs> blocks;
  float* output = nullptr;
  SlotHead head{};
  int32_t *tokens = nullptr, *targets = nullptr;
};

Carved carve(Carver& c, const SlotShape& s, const ActivationPolicy& policy) {
  const TpBlockDims d = s.dims();
  const size_t BT = d.rows(), BTC = BT * s.C, V = s.vocab_rows;
  const int inputs = slot_inputs(s, policy);
  Carved out;
  float* x0 = c.take(inputs * BTC);
  if (checkpoints(s, policy)) {
    out.output = s.head ? c.take(BTC) : nullptr;
  } else {
    const size_t per_block = tp_block_acts_floats(d, s.tp_degree);
    for (int i = 0; i < s.num_blocks; ++i) {
      float* base = c.take(per_block);
      out.blocks.push_back(base != nullptr ? tp_block_acts_at(base, d, s.tp_degree)
                                           : TpBlockActs{});
    }
    out.output = s.num_blocks > 0 ? out.blocks.back().res3 : x0;
  }
  if (s.head) {
    out.head.lnf = c.take(BTC);
    out.head.lnf_mean = c.take(BT), out.head.lnf_rstd = c.take(BT);
    out.head.logits = c.take(BT * V), out.head.probs = c.take(BT * V);
    out.head.losses = c.take(BT);
  }
  // int32 tokens in float-sized cells of an mmap'd buffer, only ever accessed as int32
  if (s.embed) out.tokens = reinterpret_cast<int32_t*>(c.take(BT));
  if (s.head) out.targets = reinterpret_cast<int32_t*>(c.take(BT));
  return out;
}

}  // namespace

int slot_inputs(const SlotShape& shape, const ActivationPolicy& policy) {
  if (!checkpoints(shape, policy)) return 1;
  return (shape.num_blocks + policy.checkpoint_every - 1) / policy.checkpoint_every;
}

size_t slot_floats(const SlotShape& shape, const ActivationPolicy& policy) {
  Carver c(nullptr);
  carve(c, shape, policy);
  return c.used();
}

void ActivationSlot::prepare(const SlotShape& shape, const ActivationPolicy& policy) {
  discard();
  const bool checkpointing = checkpoints(shape, policy);
  const bool offloading = checkpointing && policy.offload;
  const int inputs = slot_inputs(shape, policy);
  const size_t need = slot_floats(shape, policy);
  const size_t input_floats = static_cast<size_t>(shape.B) * shape.T * shape.C;
  const size_t moving = offloading ? inputs * input_floats : 0;
  if (!laid_out_ || !(policy == policy_) || acts_.size() < need) {
    acts_ = TrackedBuffer();  // give the old one back first: the peak is the larger, not both
    acts_ = TrackedBuffer(need, MemoryPool::kDevice, MemoryCategory::kActivations, !offloading,
                          tracker_);
    if (offloading) acts_.commit(moving, need - moving);
  } else if (offloading && !(shape == shape_)) {
    acts_.release_all();
    acts_.commit(moving, need - moving);
  }
  if (!offloading) {
    host_ = TrackedBuffer();
  } else if (host_.size() < moving) {
    host_ = TrackedBuffer();
    host_ = TrackedBuffer(moving, MemoryPool::kHost, MemoryCategory::kActivations, false,
                          tracker_);
  }
  shape_ = shape, policy_ = policy, laid_out_ = true;
  checkpointing_ = checkpointing, offloading_ = offloading;
  input_floats_ = input_floats;
  where_.assign(inputs, offloading ? Where::kNowhere : Where::kDevice);
  Carver c(acts_.data());
  Carved carved = carve(c, shape, policy);
  blocks_ = std::move(carved.blocks);
  output_ = carved.output;
  head_ = carved.head;
  tokens_ = carved.tokens, targets_ = carved.targets;
  busy = false;
  B = shape.B, T = shape.T, num_targets = 0;
}

void ActivationSlot::discard() {
  if (!offloading_) return;
  for (int g = 0; g < num_inputs(); ++g) {
    const size_t at = static_cast<size_t>(g) * input_floats_;
    if (where_[g] == Where::kHost) host_.release(at, input_floats_);
    if (where_[g] == Where::kDevice) acts_.release(at, input_floats_);
    where_[g] = Where::kNowhere;
  }
}

void ActivationSlot::check_group(const char* what, int g) const {
  if (g < 0 || g >= num_inputs()) {
    throw std::logic_error("ActivationSlot::" + std::string(what) + ": group " +
                           std::to_string(g) + " not in 0.." + std::to_string(num_inputs() - 1));
  }
}

float* ActivationSlot::open_input(int g) {
  check_group("open_input", g);
  if (offloading_ && where_[g] != Where::kDevice) {
    if (where_[g] == Where::kHost) host_.release(g * input_floats_, input_floats_);
    acts_.commit(g * input_floats_, input_floats_);
    where_[g] = Where::kDevice;
  }
  return device_input(g);
}

float* ActivationSlot::input(int g) {
  check_group("input", g);
  if (where_[g] != Where::kDevice) {
    throw std::logic_error("ActivationSlot::input: the input of group " + std::to_string(g) +
                           " is not on the device (" +
                           (where_[g] == Where::kHost ? "offloaded, not fetched" : "dropped") +
                           ")");
  }
  return device_input(g);
}

void ActivationSlot::offload(int g) {
  if (!offloading_) return;
  float* device = input(g);
  const size_t at = static_cast<size_t>(g) * input_floats_;
  host_.commit(at, input_floats_);
  std::memcpy(host_.data() + at, device, input_floats_ * sizeof(float));
  acts_.release(at, input_floats_);
  where_[g] = Where::kHost;
}

void ActivationSlot::fetch(int g) {
  if (!offloading_ || g < 0 || g >= num_inputs() || where_[g] == Where::kDevice) return;
  if (where_[g] != Where::kHost) {
    throw std::logic_error("ActivationSlot::fetch: the input of group " + std::to_string(g) +
                           " was dropped, not offloaded");
  }
  const size_t at = static_cast<size_t>(g) * input_floats_;
  acts_.commit(at, input_floats_);
  std::memcpy(acts_.data() + at, host_.data() + at, input_floats_ * sizeof(float));
  host_.release(at, input_floats_);
  where_[g] = Where::kDevice;
}

void ActivationSlot::drop(int g) {
  if (!offloading_) return;
  check_group("drop", g);
  if (where_[g] == Where::kHost) host_.release(g * input_floats_, input_floats_);
  if (where_[g] == Where::kDevice) acts_.release(g * input_floats_, input_floats_);
  where_[g] = Where::kNowhere;
}

}  // namespace plexus::engine
