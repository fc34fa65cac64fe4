// checkpoint_model.cpp - see checkpoint_model.h.
#include "engine/checkpoint/checkpoint_model.h"

#include <fmt/format.h>

#include <climits>
#include <cstdint>

#include "engine/model/gpt_shard.h"

namespace plexus::engine {

namespace {

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

ModelCheckpoint load_model_checkpoint(const std::string& path) {
  ModelCheckpoint m;
  m.file = load_checkpoint(path);
  m.config = header_model(path, m.file.header);
  // Its parameters are in the file, so the model is no larger than the file: checked before
  // the model is allocated.
  const std::vector<float>* params = m.file.find("params");
  if (params == nullptr || params->size() != full_num_params(m.config)) {
    throw CheckpointError(fmt::format(
        "checkpoint '{}' has {} parameters in its params section; its header's model (n_layer "
        "{}, n_embd {}, vocab_size {}, max_seq_len {}) has {}",
        path, params ? params->size() : 0, m.config.n_layer, m.config.n_embd,
        m.config.vocab_size, m.config.max_seq_len, full_num_params(m.config)));
  }
  check_header_fields(path, m.file.header, m.config);
  return m;
}

}  // namespace plexus::engine
