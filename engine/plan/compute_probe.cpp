// compute_probe.cpp - see compute_probe.h.
#include "engine/plan/compute_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/model/gpt_shard.h"
#include "engine/model/rng.h"
#include "engine/optim/adamw.h"

namespace plexus::engine {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Counts the allreduces a tensor-parallel slice would make, and makes none.
struct AllreduceCounter {
  int calls = 0;
  double floats = 0;
  TensorParallelOps ops() {
    TensorParallelOps o;
    o.allreduce_sum = [this](float*, size_t count) { ++calls, floats += count; };
    o.allreduce_max = [this](float*, size_t count) { ++calls, floats += count; };
    return o;
  }
};

struct PassTimes {
  double forward_s = 0, backward_s = 0;
  int forward_calls = 0, backward_calls = 0;
  double forward_floats = 0, backward_floats = 0;
};

// Forward and backward of one shard, `reps` times after a warm-up: the medians, and the
// allreduces of one pass.
PassTimes time_shard(const GptConfig& config, const ShardSpec& spec, int rows, int reps,
                     MemoryTracker* tracker) {
  AllreduceCounter counter;
  GptShard shard(config, spec, counter.ops(), tracker);
  shard.init_parameters(1234);
  const int T = config.max_seq_len;
  const size_t BT = static_cast<size_t>(rows) * T, BTC = BT * config.n_embd;
  std::vector<int32_t> tokens(BT), targets(BT);
  for (size_t i = 0; i < BT; ++i) {
    tokens[i] = static_cast<int32_t>((i * 7 + 3) % config.vocab_size);
    targets[i] = static_cast<int32_t>((i * 13 + 5) % config.vocab_size);
  }
  TrackedBuffer input(spec.embed ? 0 : BTC, MemoryPool::kDevice, MemoryCategory::kActivations,
                      true, tracker);
  TrackedBuffer output(spec.head ? 0 : BTC, MemoryPool::kDevice, MemoryCategory::kActivations,
                       true, tracker);
  TrackedBuffer grad_output(spec.head ? 0 : BTC, MemoryPool::kDevice,
                            MemoryCategory::kActivations, true, tracker);
  TrackedBuffer grad_input(spec.embed ? 0 : BTC, MemoryPool::kDevice,
                           MemoryCategory::kActivations, true, tracker);
  NormalSampler normal(99);
  std::vector<float> values(BTC);
  for (float& x : values) x = static_cast<float>(normal.next()) * 0.5f;
  if (!spec.embed) std::copy(values.begin(), values.end(), input.data());
  if (!spec.head) {
    for (size_t i = 0; i < BTC; ++i) grad_output.data()[i] = values[(i * 31) % BTC] * 1e-3f;
  }
  PassTimes out;
  std::vector<double> forward, backward;
  for (int r = 0; r <= reps; ++r) {  // r = 0 warms up
    const int calls0 = counter.calls;
    const double floats0 = counter.floats;
    auto t0 = Clock::now();
    shard.forward(0, spec.embed ? tokens.data() : nullptr, spec.embed ? nullptr : input.data(),
                  spec.head ? targets.data() : nullptr, rows, T,
                  spec.head ? nullptr : output.data());
    const double f = seconds_since(t0);
    const int calls1 = counter.calls;
    const double floats1 = counter.floats;
    t0 = Clock::now();
    shard.backward(0, spec.head ? nullptr : grad_output.data(),
                   spec.embed ? nullptr : grad_input.data(), 1.0f);
    const double b = seconds_since(t0);
    if (r == 0) {
      out.forward_calls = calls1 - calls0, out.forward_floats = floats1 - floats0;
      out.backward_calls = counter.calls - calls1, out.backward_floats = counter.floats - floats1;
      continue;
    }
    forward.push_back(f);
    backward.push_back(b);
  }
  out.forward_s = median(forward);
  out.backward_s = median(backward);
  return out;
}

}  // namespace

ProbeTimes probe_compute(const GptConfig& config, const ProbeShape& shape, int reps) {
  MemoryTracker tracker;  // the probe's own: the run's report never sees it
  ShardSpec block;
  block.first_block = 0, block.last_block = 1;
  block.embed = false, block.head = false;
  block.tp_degree = shape.tensor, block.tp_rank = 0;
  ShardSpec ends = block;
  ends.embed = true, ends.head = true;
  const PassTimes b = time_shard(config, block, shape.rows, reps, &tracker);
  const PassTimes e = time_shard(config, ends, shape.rows, reps, &tracker);
  ProbeTimes out;
  out.block_forward_s = b.forward_s;
  out.block_backward_s = b.backward_s;
  out.ends_forward_s = std::max(0.0, e.forward_s - b.forward_s);
  out.ends_backward_s = std::max(0.0, e.backward_s - b.backward_s);
  out.block_allreduces = b.forward_calls + b.backward_calls;
  out.block_allreduce_floats = b.forward_floats + b.backward_floats;
  out.ends_allreduces = e.forward_calls + e.backward_calls - out.block_allreduces;
  out.ends_allreduce_floats =
      e.forward_floats + e.backward_floats - out.block_allreduce_floats;
  return out;
}

double probe_adamw_seconds_per_element(int reps) {
  constexpr size_t kN = size_t{1} << 20;
  MemoryTracker tracker;
  TrackedBuffer p(kN, MemoryPool::kDevice, MemoryCategory::kParameters, true, &tracker);
  TrackedBuffer g(kN, MemoryPool::kDevice, MemoryCategory::kGradients, true, &tracker);
  TrackedBuffer m(kN, MemoryPool::kDevice, MemoryCategory::kOptimizer, true, &tracker);
  TrackedBuffer v(kN, MemoryPool::kDevice, MemoryCategory::kOptimizer, true, &tracker);
  for (size_t i = 0; i < kN; ++i) g.data()[i] = 1e-3f * static_cast<float>(i % 17);
  AdamWConfig config;
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    adamw_step(p.data(), g.data(), m.data(), v.data(), kN, r + 1, config, nullptr);
    if (r > 0) times.push_back(seconds_since(t0));
  }
  return median(times) / static_cast<double>(kN);
}

double probe_commit_seconds_per_float(int reps) {
  constexpr size_t kN = size_t{1} << 20;
  MemoryTracker tracker;
  TrackedBuffer buffer(kN, MemoryPool::kDevice, MemoryCategory::kParameters, true, &tracker);
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    buffer.release(0, kN);
    buffer.commit(0, kN);
    if (r > 0) times.push_back(seconds_since(t0));
  }
  return median(times) / static_cast<double>(kN);
}

}  // namespace plexus::engine
