// sampler.cpp - text generation from a checkpoint: autoregressive sampling with temperature and
// optional top-k, over a sliding context window of the model's max_seq_len bytes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/device/compute.h"
#include "engine/model/gpt.h"
#include "engine/model/rng.h"
#include "engine/train/checkpoint.h"
#include "engine/train/trainer.h"

namespace plexus::engine {

namespace {

// Draws a token from logits / temperature, keeping only the top_k largest when top_k > 0.
int draw(const float* logits, int vocab, float temperature, int top_k, SplitMix64& rng) {
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

}  // namespace

int run_sampling(const SampleOptions& o) {
  try {
    if (!(o.temperature > 0) || !std::isfinite(o.temperature)) {
      std::fprintf(stderr, "plexus-train: --temperature must be a finite positive number, got %g\n",
                   o.temperature);
      return 2;
    }
    if (o.tokens < 0 || o.top_k < 0) {
      std::fprintf(stderr, "plexus-train: --tokens and --top-k must be >= 0, got %d and %d\n",
                   o.tokens, o.top_k);
      return 2;
    }
    if (std::string why = select_compute_device(o.device, 0, o.autocast); !why.empty()) {
      std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
      return 2;
    }
    Checkpoint ck = load_checkpoint(o.checkpoint_path);
    const auto& m = ck.header.at("model");
    GptConfig config;
    config.vocab_size = m.at("vocab_size").get<int>();
    config.max_seq_len = m.at("max_seq_len").get<int>();
    config.n_layer = m.at("n_layer").get<int>();
    config.n_head = m.at("n_head").get<int>();
    config.n_embd = m.at("n_embd").get<int>();
    Gpt model(config);  // on the selected device
    const std::vector<float>* params = ck.find("params");
    if (params == nullptr || params->size() != model.num_params()) {
      std::fprintf(stderr, "plexus-train: checkpoint '%s' has %zu parameters, the model %zu\n",
                   o.checkpoint_path.c_str(), params ? params->size() : 0, model.num_params());
      return 2;
    }
    std::copy(params->begin(), params->end(), model.params());

    std::vector<int32_t> context(o.prompt.begin(), o.prompt.end());
    for (int32_t& t : context) t = static_cast<uint8_t>(t);
    if (context.empty()) context.push_back('\n');
    std::fputs(o.prompt.c_str(), stdout);
    SplitMix64 rng(o.seed);  // a seed gives the same text everywhere
    for (int i = 0; i < o.tokens; ++i) {
      const int T = std::min<int>(static_cast<int>(context.size()), config.max_seq_len);
      const int32_t* window = context.data() + context.size() - T;
      model.forward(window, nullptr, 1, T);
      const float* last = model.logits() + static_cast<size_t>(T - 1) * config.vocab_size;
      int next = draw(last, config.vocab_size, o.temperature, o.top_k, rng);
      context.push_back(next);
      std::fputc(next, stdout);
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return 0;
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "plexus-train: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-train: sampling from '%s': %s\n", o.checkpoint_path.c_str(),
                 e.what());
    return 1;
  }
}

}  // namespace plexus::engine
