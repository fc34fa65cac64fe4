// tp_partition.cpp - how the full Gpt's tensors are cut into a shard (gpt_shard.h): which
// tensors a pipeline chunk holds, which slice of each a tensor rank holds (Megatron-LM), where
// the slice sits in Gpt's flat layout, the copies between the two layouts, and the init that
// reproduces Gpt::init_parameters slice by slice.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/model/gpt_shard.h"
#include "engine/model/rng.h"

namespace plexus::engine {

namespace {

constexpr double kInitStd = 0.02;  // as gpt_params.cpp

enum class Split { kWhole, kRows, kCols };

// One tensor of a block, in Gpt's order: its name, full shape in units of C, how it splits.
struct BlockTensor {
  const char* suffix;
  int rows_c, cols_c;  // full shape (rows_c*C, cols_c*C), or (rows_c*C) when cols_c == 0
  Split split;
  int parts;
};
constexpr BlockTensor kBlockTensors[] = {
    {"ln1.weight", 1, 0, Split::kWhole, 1},     {"ln1.bias", 1, 0, Split::kWhole, 1},
    {"attn.qkv.weight", 3, 1, Split::kRows, 3}, {"attn.qkv.bias", 3, 0, Split::kRows, 3},
    {"attn.proj.weight", 1, 1, Split::kCols, 1}, {"attn.proj.bias", 1, 0, Split::kWhole, 1},
    {"ln2.weight", 1, 0, Split::kWhole, 1},     {"ln2.bias", 1, 0, Split::kWhole, 1},
    {"mlp.fc.weight", 4, 1, Split::kRows, 1},   {"mlp.fc.bias", 4, 0, Split::kRows, 1},
    {"mlp.proj.weight", 1, 4, Split::kCols, 1}, {"mlp.proj.bias", 1, 0, Split::kWhole, 1},
};
constexpr int kTensorsPerBlock = 12;

size_t product(const std::vector<int>& shape) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t block_numel(size_t C) { return 12 * C * C + 13 * C; }

// Appends tensors to a shard's table, computing local shapes and offsets.
class TableBuilder {
 public:
  TableBuilder(const GptConfig& config, const ShardSpec& spec) : c_(config), s_(spec) {}

  void add(const std::string& name, int full_index, size_t full_offset,
           std::vector<int> full_shape, Split split, int parts) {
    ShardTensor t;
    t.name = name;
    t.offset = next_;
    t.full_shape = full_shape;
    t.shape = full_shape;
    t.full_index = full_index;
    t.full_offset = full_offset;
    t.decay = full_shape.size() == 2;  // matmul weights and the embeddings, as Gpt
    const int tp = s_.tp_degree, r = s_.tp_rank;
    if (name == "wte" && tp > 1) {  // vocabulary-parallel, padded
      const int rows = padded_vocab(c_.vocab_size, tp) / tp;
      t.shape[0] = rows;
      t.split_dim = 0;
      t.split_begin = std::min(r * rows, c_.vocab_size);
      t.split_end = std::min((r + 1) * rows, c_.vocab_size);
    } else if (split != Split::kWhole && tp > 1) {
      const int dim = split == Split::kRows ? 0 : 1;
      const int part = full_shape[dim] / parts, local = part / tp;
      t.shape[dim] = parts * local;
      t.split_dim = dim;
      t.split_parts = parts;
      t.split_begin = r * local;
      t.split_end = (r + 1) * local;
    }
    t.replicated_in_tp = t.split_dim < 0;
    next_ += t.numel();
    table_.push_back(std::move(t));
  }

  std::vector<ShardTensor> take() { return std::move(table_); }

 private:
  const GptConfig& c_;
  const ShardSpec& s_;
  std::vector<ShardTensor> table_;
  size_t next_ = 0;
};

// Calls fn(local, full, n) for each run of n contiguous elements that the shard's tensor
// (from element `local`) and the full tensor (from element `full`) share.
template <class Fn>
void for_each_run(const ShardTensor& t, Fn fn) {
  if (t.split_dim < 0) {
    fn(size_t{0}, size_t{0}, t.numel());
    return;
  }
  const size_t held = static_cast<size_t>(t.split_end - t.split_begin);
  if (t.split_dim == 0) {
    size_t row = 1;  // elements per row (1 for a vector)
    for (size_t d = 1; d < t.shape.size(); ++d) row *= static_cast<size_t>(t.shape[d]);
    const size_t local_part = static_cast<size_t>(t.shape[0] / t.split_parts);
    const size_t full_part = static_cast<size_t>(t.full_shape[0] / t.split_parts);
    for (int k = 0; k < t.split_parts; ++k) {
      fn(k * local_part * row, (k * full_part + t.split_begin) * row, held * row);
    }
    return;
  }
  const size_t local_cols = static_cast<size_t>(t.shape[1]);
  const size_t full_cols = static_cast<size_t>(t.full_shape[1]);
  for (size_t i = 0; i < static_cast<size_t>(t.shape[0]); ++i) {
    fn(i * local_cols, i * full_cols + t.split_begin, held);
  }
}

enum class Init { kNormal, kResidualNormal, kZeros, kOnes };

// Gpt's init kind for a tensor name (gpt_params.cpp's table).
Init init_kind(std::string_view name) {
  auto ends = [&](std::string_view s) {
    return name.size() >= s.size() && name.substr(name.size() - s.size()) == s;
  };
  if (ends("ln1.weight") || ends("ln2.weight") || ends("ln_f.weight")) return Init::kOnes;
  if (ends(".bias")) return Init::kZeros;
  if (ends("attn.proj.weight") || ends("mlp.proj.weight")) return Init::kResidualNormal;
  return Init::kNormal;
}

// The full tensor as Gpt::init_parameters draws it: stream (seed, tensor index).
void init_full_tensor(float* p, size_t n, Init kind, int full_index, uint64_t seed,
                      int n_layer) {
  if (kind == Init::kZeros || kind == Init::kOnes) {
    std::fill(p, p + n, kind == Init::kOnes ? 1.0f : 0.0f);
    return;
  }
  const double sigma = kind == Init::kNormal ? kInitStd : kInitStd / std::sqrt(2.0 * n_layer);
  const uint64_t i = static_cast<uint64_t>(full_index);
  NormalSampler normal(SplitMix64(seed ^ (0xD1B54A32D192ED03ull * (i + 1))).next());
  for (size_t j = 0; j < n; ++j) p[j] = static_cast<float>(sigma * normal.next());
}

}  // namespace

size_t ShardTensor::numel() const { return product(shape); }
size_t ShardTensor::full_numel() const { return product(full_shape); }

int padded_vocab(int vocab_size, int tp_degree) {
  return (vocab_size + tp_degree - 1) / tp_degree * tp_degree;
}

size_t full_num_params(const GptConfig& c) {
  const size_t C = c.n_embd;
  return (static_cast<size_t>(c.vocab_size) + c.max_seq_len) * C + c.n_layer * block_numel(C) +
         2 * C;
}

std::string ShardSpec::validate(const GptConfig& config) const {
  const std::string problem = config.validate();
  if (!problem.empty()) return problem;
  const auto range = [](const char* field, int value, int lo, int hi, const char* what) {
    return "ShardSpec: " + std::string(field) + " " + std::to_string(value) + " not in " +
           std::to_string(lo) + ".." + std::to_string(hi) + " (" + what + ")";
  };
  if (tp_degree < 1 || tp_degree > config.n_head) {
    return range("tp_degree", tp_degree, 1, config.n_head, "n_head");
  }
  if (config.n_head % tp_degree != 0) {
    return "ShardSpec: tp_degree " + std::to_string(tp_degree) + " does not divide n_head " +
           std::to_string(config.n_head);
  }
  if (tp_rank < 0 || tp_rank >= tp_degree) {
    return range("tp_rank", tp_rank, 0, tp_degree - 1, "tp_degree - 1");
  }
  if (first_block < 0 || first_block > config.n_layer) {
    return range("first_block", first_block, 0, config.n_layer, "n_layer");
  }
  if (last_block < first_block || last_block > config.n_layer) {
    return range("last_block", last_block, first_block, config.n_layer, "first_block..n_layer");
  }
  return "";
}

std::string ShardSpec::describe() const {
  std::string s = first_block < last_block ? "blocks " + std::to_string(first_block) + "-" +
                                                 std::to_string(last_block - 1)
                                           : std::string("no blocks");
  if (embed) s += " +embed";
  if (head) s += " +head";
  return s + ", tp " + std::to_string(tp_rank) + "/" + std::to_string(tp_degree);
}

std::vector<ShardTensor> shard_tensors(const GptConfig& c, const ShardSpec& spec) {
  const std::string problem = spec.validate(c);
  if (!problem.empty()) throw std::invalid_argument(problem);
  const int C = c.n_embd, V = c.vocab_size, L = c.n_layer;
  const size_t blocks_begin = (static_cast<size_t>(V) + c.max_seq_len) * C;
  const size_t lnf_offset = blocks_begin + L * block_numel(C);
  const int lnf_index = 2 + kTensorsPerBlock * L;
  TableBuilder b(c, spec);
  if (spec.embed) {
    b.add("wte", 0, 0, {V, C}, Split::kRows, 1);
    b.add("wpe", 1, static_cast<size_t>(V) * C, {c.max_seq_len, C}, Split::kWhole, 1);
  }
  for (int l = spec.first_block; l < spec.last_block; ++l) {
    size_t offset = blocks_begin + l * block_numel(C);
    for (int j = 0; j < kTensorsPerBlock; ++j) {
      const BlockTensor& t = kBlockTensors[j];
      std::vector<int> shape{t.rows_c * C};
      if (t.cols_c > 0) shape.push_back(t.cols_c * C);
      const std::string name = "blocks." + std::to_string(l) + "." + t.suffix;
      b.add(name, 2 + kTensorsPerBlock * l + j, offset, shape, t.split, t.parts);
      offset += product(shape);
    }
  }
  if (spec.head) {
    b.add("ln_f.weight", lnf_index, lnf_offset, {C}, Split::kWhole, 1);
    b.add("ln_f.bias", lnf_index + 1, lnf_offset + C, {C}, Split::kWhole, 1);
    if (!spec.embed) b.add("wte", 0, 0, {V, C}, Split::kRows, 1);
  }
  return b.take();
}

void scatter_into_full(const std::vector<ShardTensor>& tensors, const float* shard_values,
                       float* full) {
  for (const ShardTensor& t : tensors) {
    for_each_run(t, [&](size_t local, size_t at, size_t n) {
      std::memcpy(full + t.full_offset + at, shard_values + t.offset + local, n * sizeof(float));
    });
  }
}

void extract_from_full(const std::vector<ShardTensor>& tensors, const float* full,
                       float* shard_values) {
  for (const ShardTensor& t : tensors) {
    std::fill(shard_values + t.offset, shard_values + t.offset + t.numel(), 0.0f);
    for_each_run(t, [&](size_t local, size_t at, size_t n) {
      std::memcpy(shard_values + t.offset + local, full + t.full_offset + at, n * sizeof(float));
    });
  }
}

// The full tensor from Gpt's stream, then this shard's runs of it; padding rows 0.
void GptShard::init_tensor(uint64_t seed, size_t k, std::vector<float>& full) {
  const ShardTensor& t = tensors_[k];
  full.resize(t.full_numel());
  init_full_tensor(full.data(), full.size(), init_kind(t.name), t.full_index, seed,
                   config_.n_layer);
  float* local = params_.data() + t.offset;
  std::fill(local, local + t.numel(), 0.0f);
  for_each_run(t, [&](size_t at_local, size_t at_full, size_t n) {
    std::memcpy(local + at_local, full.data() + at_full, n * sizeof(float));
  });
}

void GptShard::init_parameters(uint64_t seed) {
  if (params_.committed() != params_.size()) {
    throw std::logic_error(where("init_parameters") + ": " +
                           std::to_string(params_.size() - params_.committed()) + " of " +
                           std::to_string(params_.size()) +
                           " parameters are released; commit them, or initialise unit by unit "
                           "with init_unit_parameters");
  }
  std::vector<float> full;
  for (size_t k = 0; k < tensors_.size(); ++k) init_tensor(seed, k, full);
}

}  // namespace plexus::engine
