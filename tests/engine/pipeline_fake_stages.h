// pipeline_fake_stages.h - a fake engine for the P plugin's tests, its serial reference and
// the expected orders of the three schedules.
//
// Global chunk k maps an activation x to 2x + k; its backward maps an output gradient g to
// 2g + 1 and accumulates sum(x * g) as its "weight gradient"; the last chunk's output is the
// microbatch's "loss" and also its own output gradient; microbatch m's tokens are
// m + 1 + (i % 3). All values stay small integers, exact in float and double, so a schedule
// either reproduces the serial reference exactly or is wrong. The fake records every call.
#pragma once

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace plexus::test {

// ---- the fake engine -------------------------------------------------------------------------

struct Call {
  bool forward;
  int chunk;
  int microbatch;
  bool operator==(const Call& o) const {
    return forward == o.forward && chunk == o.chunk && microbatch == o.microbatch;
  }
};

inline std::string to_string(const Call& c) {
  return std::string(c.forward ? "F" : "B") + "(c" + std::to_string(c.chunk) + ",m" +
         std::to_string(c.microbatch) + ")";
}

inline std::string to_string(const std::vector<Call>& calls) {
  std::string s;
  for (const Call& c : calls) {
    if (!s.empty()) s += ' ';
    s += to_string(c);
  }
  return s;
}

// Microbatch m's "tokens": the input of global chunk 0.
inline float token(int m, size_t i) {
  return static_cast<float>(m + 1 + static_cast<int>(i % 3));
}

class FakeStages {
 public:
  FakeStages(int stages, int stage, int chunks, int microbatches, size_t count)
      : stages_(stages), stage_(stage), chunks_(chunks), count_(count), accum_(chunks, 0.0) {
    (void)microbatches;
  }

  plx_stage_ops_t ops(int microbatches) {
    plx_stage_ops_t ops = PLX_STAGE_OPS_INIT;
    ops.engine = this;
    ops.num_microbatches = microbatches;
    ops.num_chunks = chunks_;
    ops.activation_count = count_;
    ops.forward = &FakeStages::forward;
    ops.backward = &FakeStages::backward;
    return ops;
  }

  // Makes the given call fail with `message`.
  void fail_at(const Call& call, const std::string& message) {
    fail_ = true;
    fail_call_ = call;
    fail_message_ = message;
  }

  const std::vector<Call>& calls() const { return calls_; }
  const std::vector<double>& accum() const { return accum_; }
  const std::map<int, std::vector<float>>& losses() const { return losses_; }
  const std::map<int, std::vector<float>>& input_grads() const { return input_grads_; }
  std::string problem() const { return problem_; }

 private:
  int global(int chunk) const { return chunk * stages_ + stage_; }
  bool last_global(int chunk) const { return global(chunk) == stages_ * chunks_ - 1; }

  static plx_result_t forward(void* self, int chunk, int m, const float* input, float* output,
                              char* err, size_t err_len) {
    auto* f = static_cast<FakeStages*>(self);
    f->calls_.push_back({true, chunk, m});
    if (f->fail_ && f->fail_call_ == Call{true, chunk, m}) {
      std::snprintf(err, err_len, "%s", f->fail_message_.c_str());
      return PLX_ERROR_SYSTEM;
    }
    const int k = f->global(chunk);
    if ((k == 0) != (input == nullptr) || f->last_global(chunk) != (output == nullptr)) {
      f->problem_ += "forward of global chunk " + std::to_string(k) + ": input/output NULL-ness "
                     "wrong; ";
    }
    std::vector<float> x(f->count_);
    for (size_t i = 0; i < f->count_; ++i) x[i] = input ? input[i] : token(m, i);
    std::vector<float> y(f->count_);
    for (size_t i = 0; i < f->count_; ++i) y[i] = x[i] * 2 + static_cast<float>(k);
    if (output) std::copy(y.begin(), y.end(), output);
    else f->losses_[m] = y;
    f->saved_[{chunk, m}] = {std::move(x), std::move(y)};
    return PLX_SUCCESS;
  }

  static plx_result_t backward(void* self, int chunk, int m, const float* grad_output,
                               float* grad_input, char* err, size_t err_len) {
    auto* f = static_cast<FakeStages*>(self);
    f->calls_.push_back({false, chunk, m});
    if (f->fail_ && f->fail_call_ == Call{false, chunk, m}) {
      std::snprintf(err, err_len, "%s", f->fail_message_.c_str());
      return PLX_ERROR_SYSTEM;
    }
    const int k = f->global(chunk);
    if (f->last_global(chunk) != (grad_output == nullptr) || (k == 0) != (grad_input == nullptr)) {
      f->problem_ += "backward of global chunk " + std::to_string(k) + ": NULL-ness wrong; ";
    }
    auto it = f->saved_.find({chunk, m});
    if (it == f->saved_.end()) {
      f->problem_ += "backward of " + to_string(Call{false, chunk, m}) + " without forward; ";
      return PLX_SUCCESS;
    }
    const auto& [x, y] = it->second;
    std::vector<float> gin(f->count_);
    for (size_t i = 0; i < f->count_; ++i) {
      const float g = grad_output ? grad_output[i] : y[i];
      f->accum_[chunk] += static_cast<double>(x[i]) * g;
      gin[i] = g * 2 + 1;
    }
    if (grad_input) std::copy(gin.begin(), gin.end(), grad_input);
    else f->input_grads_[m] = gin;
    f->saved_.erase(it);
    return PLX_SUCCESS;
  }

  int stages_, stage_, chunks_;
  size_t count_;
  std::vector<Call> calls_;
  std::vector<double> accum_;
  std::map<std::pair<int, int>, std::pair<std::vector<float>, std::vector<float>>> saved_;
  std::map<int, std::vector<float>> losses_, input_grads_;
  bool fail_ = false;
  Call fail_call_{};
  std::string fail_message_;
  std::string problem_;
};

// ---- the serial reference --------------------------------------------------------------------

struct Reference {
  std::vector<double> accum;                 // per global chunk
  std::vector<std::vector<float>> losses;    // per microbatch
  std::vector<std::vector<float>> input_grads;
};

inline Reference serial_reference(int num_chunks, int microbatches, size_t count) {
  Reference ref;
  ref.accum.assign(num_chunks, 0.0);
  for (int m = 0; m < microbatches; ++m) {
    std::vector<std::vector<float>> xs(num_chunks + 1, std::vector<float>(count));
    for (size_t i = 0; i < count; ++i) xs[0][i] = token(m, i);
    for (int k = 0; k < num_chunks; ++k) {
      for (size_t i = 0; i < count; ++i) xs[k + 1][i] = xs[k][i] * 2 + static_cast<float>(k);
    }
    ref.losses.push_back(xs[num_chunks]);
    std::vector<float> g = xs[num_chunks];
    for (int k = num_chunks - 1; k >= 0; --k) {
      for (size_t i = 0; i < count; ++i) {
        ref.accum[k] += static_cast<double>(xs[k][i]) * g[i];
        g[i] = g[i] * 2 + 1;
      }
    }
    ref.input_grads.push_back(g);
  }
  return ref;
}

// ---- expected orders -------------------------------------------------------------------------

inline std::vector<Call> gpipe_order(int microbatches) {
  std::vector<Call> order;
  for (int m = 0; m < microbatches; ++m) order.push_back({true, 0, m});
  for (int m = 0; m < microbatches; ++m) order.push_back({false, 0, m});
  return order;
}

inline std::vector<Call> one_f_one_b_order(int stages, int stage, int microbatches) {
  const int warmup = std::min(stages - stage - 1, microbatches);
  std::vector<Call> order;
  for (int i = 0; i < warmup; ++i) order.push_back({true, 0, i});
  for (int i = 0; i < microbatches - warmup; ++i) {
    order.push_back({true, 0, warmup + i});
    order.push_back({false, 0, i});
  }
  for (int i = microbatches - warmup; i < microbatches; ++i) order.push_back({false, 0, i});
  return order;
}

// Megatron-LM's interleaved 1F1B (Narayanan et al. 2021): forwards in groups of P microbatches
// per chunk, backwards likewise from the last chunk; W = 2(P-p-1) + (v-1)P warm-up forwards
// (all of them when M == P), then one forward and one backward at a time.
inline std::vector<Call> interleaved_order(int stages, int stage, int chunks,
                                           int microbatches) {
  const int total = chunks * microbatches, group = stages * chunks;
  auto forward = [&](int k) {
    return Call{true, (k % group) / stages, (k / group) * stages + k % stages};
  };
  auto backward = [&](int k) {
    return Call{false, chunks - 1 - (k % group) / stages, (k / group) * stages + k % stages};
  };
  const int warmup = microbatches == stages
                         ? total
                         : std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  std::vector<Call> order;
  for (int k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(forward(warmup + k));
    order.push_back(backward(k));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

}  // namespace plexus::test
