// sampler.cpp - text generation from a checkpoint: autoregressive sampling with temperature and
// optional top-k, over a sliding context window of the model's max_seq_len bytes.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "engine/device/compute.h"
#include "engine/model/gpt.h"
#include "engine/model/gpt_shard.h"
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

// The checkpoint header's model, every field range-checked before anything is sized by it.
GptConfig header_model(const std::string& path, const nlohmann::json& header) {
  auto bad = [&](const std::string& field, const nlohmann::json& value, const std::string& valid) {
    return header_field_error(path, field, value, valid);
  };
  const nlohmann::json model = header.contains("model") ? header.at("model") : nlohmann::json();
  if (!model.is_object()) throw bad("model", model, "an object of the model's sizes");
  auto dim = [&](const char* name) {
    const nlohmann::json v = model.contains(name) ? model.at(name) : nlohmann::json();
    const std::string valid = "an integer in 1.." + std::to_string(GptConfig::kMaxDim);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > GptConfig::kMaxDim)) {
      throw bad(std::string("model.") + name, v, valid);
    }
    const int64_t x = v.get<int64_t>();
    if (x < 1 || x > GptConfig::kMaxDim) throw bad(std::string("model.") + name, v, valid);
    return static_cast<int>(x);
  };
  GptConfig config;
  config.vocab_size = dim("vocab_size");
  config.max_seq_len = dim("max_seq_len");
  config.n_layer = dim("n_layer");
  config.n_head = dim("n_head");
  config.n_embd = dim("n_embd");
  if (std::string why = config.validate(); !why.empty()) {
    throw CheckpointError("checkpoint '" + path + "': header's model is invalid: " + why);
  }
  return config;
}

// The header's other fields, as make_checkpoint (trainer.cpp) writes them: checked though
// sampling reads none of them, so that a crafted file is refused naming the field rather than
// accepted with a wrong record of its run. Called once the params section is known to match
// config, so the tensor list it builds is no longer than the file.
void check_header_fields(const std::string& path, const nlohmann::json& header,
                         const GptConfig& config) {
  auto field = [&](const char* name) {
    return header.contains(name) ? header.at(name) : nlohmann::json();
  };
  auto bad = [&](const std::string& name, const nlohmann::json& value, const std::string& valid) {
    return header_field_error(path, name, value, valid);
  };
  if (field("format") != "plexus-gpt") throw bad("format", field("format"), "\"plexus-gpt\"");
  // nlohmann reads a whole number >= 0 as unsigned, a negative one as signed, others as float.
  auto in_range = [](const nlohmann::json& v, uint64_t low, uint64_t high) {
    return v.is_number_unsigned() && v.get<uint64_t>() >= low && v.get<uint64_t>() <= high;
  };
  if (!in_range(field("step"), 0, INT64_MAX)) {
    throw bad("step", field("step"), "an integer in 0.." + std::to_string(INT64_MAX));
  }
  if (!in_range(field("seed"), 0, UINT64_MAX)) {
    throw bad("seed", field("seed"), "an integer in 0..2^64-1");
  }
  if (!in_range(field("global_batch"), 1, INT32_MAX)) {
    throw bad("global_batch", field("global_batch"),
              "an integer in 1.." + std::to_string(INT32_MAX));
  }
  if (!field("placement").is_string()) throw bad("placement", field("placement"), "a string");
  const nlohmann::json val_loss = field("val_loss");
  if (!val_loss.is_number() && !val_loss.is_null()) {
    throw bad("val_loss", val_loss, "a number, or null when none was measured");
  }
  // The parameter tensors as the model lays them out, each where this model puts it.
  const nlohmann::json tensors = field("tensors");
  const std::vector<ShardTensor> layout = shard_tensors(config, ShardSpec{0, config.n_layer});
  if (!tensors.is_array() || tensors.size() != layout.size()) {
    throw bad("tensors", tensors,
              fmt::format("the {} tensors of the header's model (name, offset, shape)",
                          layout.size()));
  }
  for (size_t i = 0; i < layout.size(); ++i) {
    const nlohmann::json expected = {{"name", layout[i].name},
                                     {"offset", layout[i].full_offset},
                                     {"shape", layout[i].full_shape}};
    if (tensors[i] != expected) {
      throw bad(fmt::format("tensors[{}]", i), tensors[i], expected.dump());
    }
  }
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
    const GptConfig config = header_model(o.checkpoint_path, ck.header);
    // Its parameters are in the file, so the model is no larger than the file: checked before
    // the model is allocated.
    const std::vector<float>* params = ck.find("params");
    if (params == nullptr || params->size() != full_num_params(config)) {
      std::fprintf(stderr,
                   "plexus-train: checkpoint '%s' has %zu parameters in its params section; its "
                   "header's model (n_layer %d, n_embd %d, vocab_size %d, max_seq_len %d) has "
                   "%zu\n",
                   o.checkpoint_path.c_str(), params ? params->size() : 0, config.n_layer,
                   config.n_embd, config.vocab_size, config.max_seq_len,
                   full_num_params(config));
      return 2;
    }
    check_header_fields(o.checkpoint_path, ck.header, config);
    Gpt model(config);  // on the selected device
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
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "plexus-train: sampling from '%s': out of memory (std::bad_alloc) for "
                 "its model with --tokens %d\n",
                 o.checkpoint_path.c_str(), o.tokens);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plexus-train: sampling from '%s': %s\n", o.checkpoint_path.c_str(),
                 e.what());
    return 1;
  }
}

}  // namespace plexus::engine
