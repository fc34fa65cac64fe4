// token_sampling.cpp - see token_sampling.h.
#include "engine/train/token_sampling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace plexus::engine {

std::string check_sampling_options(const SampleOptions& o) {
  if (!(o.temperature > 0) || !std::isfinite(o.temperature)) {
    return fmt::format("--temperature must be a finite positive number, got {}", o.temperature);
  }
  if (o.tokens < 0 || o.top_k < 0) {
    return fmt::format("--tokens and --top-k must be >= 0, got {} and {}", o.tokens, o.top_k);
  }
  if (o.tokens > kMaxSampleTokens) {
    return fmt::format("--tokens {} is more than the {} bytes one prompt may generate",
                       o.tokens, kMaxSampleTokens);
  }
  return "";
}

const float* next_token_logits(Gpt& model, const std::vector<int32_t>& context) {
  const GptConfig& config = model.config();
  const int T = std::min<int>(static_cast<int>(context.size()), config.max_seq_len);
  const int32_t* window = context.data() + context.size() - T;
  model.forward(window, nullptr, 1, T);
  return model.logits() + static_cast<size_t>(T - 1) * config.vocab_size;
}

int draw_token(const float* logits, int vocab, float temperature, int top_k, SplitMix64& rng) {
  std::vector<double> p(vocab);
  double max_logit = *std::max_element(logits, logits + vocab);
  double cutoff = -INFINITY;
  if (top_k > 0 && top_k < vocab) {
    std::vector<float> sorted(logits, logits + vocab);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    cutoff = sorted[top_k - 1];
  }
  double total = 0;
  for (int i = 0; i < vocab; ++i) {
    p[i] = logits[i] < cutoff ? 0.0 : std::exp((logits[i] - max_logit) / temperature);
    total += p[i];
  }
  double u = rng.uniform_open0() * total;
  for (int i = 0; i < vocab; ++i) {
    u -= p[i];
    if (u <= 0) return i;
  }
  return vocab - 1;
}

}  // namespace plexus::engine
