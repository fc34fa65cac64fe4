// gpt_params.cpp - Gpt's configuration check, parameter table and GPT-2 initialization.
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/gpt.h"
#include "engine/model/rng.h"

namespace plexus::engine {

namespace {
constexpr double kInitStd = 0.02;
constexpr int kMaxDim = GptConfig::kMaxDim;  // far above any CPU model
}  // namespace

std::string GptConfig::validate() const {
  const struct {
    const char* name;
    int value;
  } fields[] = {{"vocab_size", vocab_size},
                {"max_seq_len", max_seq_len},
                {"n_layer", n_layer},
                {"n_head", n_head},
                {"n_embd", n_embd}};
  for (const auto& f : fields) {
    if (f.value < 1 || f.value > kMaxDim) {
      return "GptConfig: " + std::string(f.name) + " " + std::to_string(f.value) +
             " not in 1.." + std::to_string(kMaxDim);
    }
  }
  if (n_embd % n_head != 0) {
    return "GptConfig: n_embd " + std::to_string(n_embd) + " is not a multiple of n_head " +
           std::to_string(n_head);
  }
  return "";
}

size_t ParamTensor::numel() const {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t Gpt::add_tensor(const std::string& name, std::vector<int> shape, bool decay, Init init) {
  ParamTensor t;
  t.name = name;
  t.offset = table_.empty() ? 0 : table_.back().offset + table_.back().numel();
  t.shape = std::move(shape);
  t.decay = decay;
  table_.push_back(std::move(t));
  init_.push_back(init);
  return table_.back().offset;
}

Gpt::Gpt(const GptConfig& config) : config_(config) {
  const std::string problem = config.validate();
  if (!problem.empty()) throw std::invalid_argument(problem);
  const int V = config.vocab_size, C = config.n_embd, L = config.n_layer;
  wte_ = add_tensor("wte", {V, C}, true, Init::kNormal);
  wpe_ = add_tensor("wpe", {config.max_seq_len, C}, true, Init::kNormal);
  for (int l = 0; l < L; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    BlockOffsets o{};
    o.ln1_w = add_tensor(p + "ln1.weight", {C}, false, Init::kOnes);
    o.ln1_b = add_tensor(p + "ln1.bias", {C}, false, Init::kZeros);
    o.qkv_w = add_tensor(p + "attn.qkv.weight", {3 * C, C}, true, Init::kNormal);
    o.qkv_b = add_tensor(p + "attn.qkv.bias", {3 * C}, false, Init::kZeros);
    o.proj_w = add_tensor(p + "attn.proj.weight", {C, C}, true, Init::kResidualNormal);
    o.proj_b = add_tensor(p + "attn.proj.bias", {C}, false, Init::kZeros);
    o.ln2_w = add_tensor(p + "ln2.weight", {C}, false, Init::kOnes);
    o.ln2_b = add_tensor(p + "ln2.bias", {C}, false, Init::kZeros);
    o.fc_w = add_tensor(p + "mlp.fc.weight", {4 * C, C}, true, Init::kNormal);
    o.fc_b = add_tensor(p + "mlp.fc.bias", {4 * C}, false, Init::kZeros);
    o.fcproj_w = add_tensor(p + "mlp.proj.weight", {C, 4 * C}, true, Init::kResidualNormal);
    o.fcproj_b = add_tensor(p + "mlp.proj.bias", {C}, false, Init::kZeros);
    blocks_.push_back(o);
  }
  lnf_w_ = add_tensor("ln_f.weight", {C}, false, Init::kOnes);
  lnf_b_ = add_tensor("ln_f.bias", {C}, false, Init::kZeros);
  const size_t n = table_.back().offset + table_.back().numel();
  params_.assign(n, 0.0f);
  grads_.assign(n, 0.0f);
}

std::vector<uint8_t> Gpt::decay_mask() const {
  std::vector<uint8_t> mask(params_.size(), 0);
  for (const ParamTensor& t : table_) {
    if (t.decay) std::memset(mask.data() + t.offset, 1, t.numel());
  }
  return mask;
}

void Gpt::init_parameters(uint64_t seed) {
  const double residual_std = kInitStd / std::sqrt(2.0 * config_.n_layer);
  for (size_t i = 0; i < table_.size(); ++i) {
    float* p = params_.data() + table_[i].offset;
    const size_t n = table_[i].numel();
    switch (init_[i]) {
      case Init::kZeros:
        for (size_t j = 0; j < n; ++j) p[j] = 0.0f;
        break;
      case Init::kOnes:
        for (size_t j = 0; j < n; ++j) p[j] = 1.0f;
        break;
      case Init::kNormal:
      case Init::kResidualNormal: {
        const double std = init_[i] == Init::kNormal ? kInitStd : residual_std;
        // one stream per tensor: (seed, index) mixed through one splitmix64 step
        NormalSampler normal(SplitMix64(seed ^ (0xD1B54A32D192ED03ull * (i + 1))).next());
        for (size_t j = 0; j < n; ++j) p[j] = static_cast<float>(std * normal.next());
        break;
      }
    }
  }
}

}  // namespace plexus::engine
