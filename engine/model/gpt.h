// gpt.h - a GPT-2 style decoder-only transformer (Radford et al. 2019), after karpathy/llm.c:
// pre-LN blocks, GELU MLP, tied token embedding / LM head. It runs on the compute device
// selected before it was built (engine/device/compute.h): its buffers are ComputeVectors
// (managed memory on cuda) and its layers dispatch to the device.
//
//   x = wte[tokens] + wpe[0:T]
//   for each block: x = x + attn(ln1(x)); x = x + mlp(ln2(x))     mlp = proj(gelu(fc(.)))
//   logits = ln_f(x) wte^T                                         (B,T,V)
//   loss = mean over positions with target >= 0 of -log softmax(logits)[target]
//
// Parameters live in ONE contiguous float buffer and gradients in another with the same layout
// (param_table() gives each tensor's offset), so gradient buckets and optimizer shards are plain
// element ranges. Tensors are in forward order, block by block, so the backward pass produces
// gradients roughly from the end of the buffer to its start.
//
// Thread safety: a Gpt is not thread-safe; use one per thread. It never changes the OpenBLAS
// thread count (the caller decides).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory/compute_vector.h"

namespace plexus::engine {

struct GptConfig {
  static constexpr int kMaxDim = 1 << 20;  // every field's upper bound: keeps products in size_t

  int vocab_size = 256;
  int max_seq_len = 0;  // T may not exceed it (size of the position embedding)
  int n_layer = 0;
  int n_head = 0;
  int n_embd = 0;  // C; must be a multiple of n_head

  // "" if valid; otherwise one message naming the first bad field, its value and the valid
  // range, e.g. "GptConfig: n_embd 10 is not a multiple of n_head 3".
  std::string validate() const;
};

// One parameter tensor inside the flat buffer.
struct ParamTensor {
  std::string name;        // "wte", "wpe", "blocks.3.attn.qkv.weight", "ln_f.bias", ...
  size_t offset = 0;       // first element, counted from params() (and grads())
  std::vector<int> shape;  // row-major; e.g. {3C, C} for attn.qkv.weight
  bool decay = false;      // AdamW weight decay applies: true for matmul weights and the two
                           // embeddings, false for biases and LayerNorm gains/biases
  size_t numel() const;
};

class Gpt {
 public:
  // Builds the parameter table and allocates params and grads (zero-filled; call
  // init_parameters next). Throws std::invalid_argument with config.validate()'s message.
  explicit Gpt(const GptConfig& config);
  // Movable, not copyable (it holds pointers into its own buffers).
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;
  Gpt(Gpt&&) = default;
  Gpt& operator=(Gpt&&) = default;

  const GptConfig& config() const { return config_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads() { return grads_.data(); }
  const float* grads() const { return grads_.data(); }
  size_t num_params() const { return params_.size(); }
  // In buffer order; the offsets tile [0, num_params()) without gaps.
  const std::vector<ParamTensor>& param_table() const { return table_; }
  // One byte per parameter: 1 where weight decay applies (ParamTensor::decay), else 0.
  std::vector<uint8_t> decay_mask() const;

  // GPT-2 init: weights and embeddings N(0, 0.02); attn.proj and mlp.proj weights (the
  // residual projections) N(0, 0.02 / sqrt(2 n_layer)); biases 0; LayerNorm gains 1. Each
  // tensor draws from its own splitmix64 + Box-Muller stream seeded by (seed, tensor index),
  // so the result depends only on the seed and the config. Does not touch grads.
  void init_parameters(uint64_t seed);

  // Runs the model on tokens (B,T) with T <= max_seq_len, every token in [0, vocab_size).
  // targets (B,T): next tokens in [0, vocab_size), or < 0 to ignore a position; may be
  // nullptr, then only the logits are computed and 0 is returned. Returns the mean
  // cross-entropy over the positions with a target (0 if none). Keeps the activations (and a
  // copy of tokens and targets) for backward(); grows its buffers when B*T grows.
  // Throws std::invalid_argument naming the argument and value for B < 1, T outside
  // 1..max_seq_len, null tokens, or a token/target out of range.
  float forward(const int32_t* tokens, const int32_t* targets, int B, int T);

  // The raw (pre-softmax) logits (B,T,V) of the last forward, row-major; valid until the next
  // forward. nullptr before the first forward.
  const float* logits() const { return logits_; }
  // Positions with a target (>= 0) in the last forward: the loss is a mean over this many.
  size_t num_targets() const { return num_targets_; }

  // Sets every gradient to 0.
  void zero_grad();

  // Gradient of the last forward's mean loss (the mean over its num_targets() positions)
  // w.r.t. every parameter, ACCUMULATED (+=) into grads(). For gradient accumulation over k
  // equal microbatches, either scale the sum by 1/k afterwards or weight each microbatch; a
  // batch of B rows gives the same gradient as the mean of its two B/2 halves' gradients when
  // the halves have equally many targets. Throws std::logic_error if the last forward had no
  // targets (or there was none). Adds nothing when num_targets() is 0.
  void backward();

 private:
  // Element offsets of one block's tensors in the flat buffer.
  struct BlockOffsets {
    size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b;
    size_t ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  };
  // Forward activations of one block, all (B,T,*) except att (B,NH,T,T), mean/rstd (B,T).
  struct BlockActs {
    float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *attproj, *res2;
    float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *res3;
  };
  // Gradient scratch reused by every block (zeroed per block), each (B,T,*).
  struct BlockGrads {
    float *dln1, *dqkv, *datty, *dattproj, *dln2, *dfch, *dfch_gelu, *dfcproj;
  };
  enum class Init { kNormal, kResidualNormal, kZeros, kOnes };

  size_t add_tensor(const std::string& name, std::vector<int> shape, bool decay, Init init);
  void layout_activations(int B, int T);
  void layout_gradients();

  GptConfig config_;
  std::vector<ParamTensor> table_;
  std::vector<Init> init_;
  ComputeVector<float> params_;
  ComputeVector<float> grads_;
  size_t wte_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0;
  std::vector<BlockOffsets> blocks_;

  // activations of the last forward
  ComputeVector<float> acts_;
  std::vector<BlockActs> block_acts_;
  float *encoded_ = nullptr, *lnf_ = nullptr, *lnf_mean_ = nullptr, *lnf_rstd_ = nullptr;
  float *logits_ = nullptr, *probs_ = nullptr, *losses_ = nullptr;
  int B_ = 0, T_ = 0;
  ComputeVector<int32_t> tokens_, targets_;  // copies the layers read
  bool have_targets_ = false;
  size_t num_targets_ = 0;

  // backward workspace
  ComputeVector<float> grad_acts_;
  std::vector<float*> dstream_;  // dstream_[l]: gradient of block l's input (B,T,C), l = 0..L
  std::vector<float*> dres2_;    // gradient of block l's mid-block residual (B,T,C)
  BlockGrads block_grads_{};
  float *dlnf_ = nullptr, *dlogits_ = nullptr, *att_scratch_ = nullptr;
};

}  // namespace plexus::engine
