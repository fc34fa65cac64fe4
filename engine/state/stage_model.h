// stage_model.h - the part of the model one rank holds, and its forward and backward passes over
// the microbatches of a step.
//
// The rank (d, p, t) of a placement with degrees |P| = P and |T| = T holds v model chunks (v
// virtual stages): local chunk c is global chunk c*P + p of partition_layers(n_layer, P*v), each
// a GptShard split over the T tensor ranks (Megatron-LM). A step's local rows (global batch / |D|)
// are cut into M equal microbatches:
//  - P = 1: run_local() does forward then backward of each microbatch (loss scale 1/M), so the
//    accumulated gradient is that of the mean loss over the M microbatches;
//  - P > 1: the P plugin's run_pipeline() calls forward_stage() / backward_stage() through
//    stage_ops() in its schedule's order; boundary activations (mb_rows x seq x n_embd floats)
//    move between stages on the pipeline group.
// forward_only() is the validation pass: one microbatch through every chunk in global order,
// with blocking plx_send/plx_recv on the pipeline group (a chain, so it cannot deadlock).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/gpt.h"
#include "engine/model/gpt_shard.h"
#include "engine/placement/layer_partition.h"
#include "engine/placement/placement.h"
#include "plexus/plugin.h"

namespace plexus::engine {

struct StageLayout {
  int pipeline_degree = 1;  // P
  int stage = 0;            // p
  int tensor_degree = 1;    // T
  int tensor_rank = 0;      // t
  int virtual_stages = 1;   // v
};

// The layout of global rank `rank` under a resolved placement.
StageLayout stage_layout(const Placement& placement, int rank, int virtual_stages);
// The shard of local chunk c of a rank with this layout (partition_layers over P*v chunks).
// Throws PlacementError as partition_layers.
ShardSpec chunk_spec(const GptConfig& config, const StageLayout& layout, int chunk);

class StageModel {
 public:
  // Builds this rank's chunks, their parameters and gradients committed or not as storage says
  // (GptShard's StorageOptions; training_state.h's model_storage() gives what a memory plan
  // needs), every buffer accounted in tracker (nullptr: memory_tracker(); must outlive the
  // model). The parameters are zero until initialised (make_training_state does it). Throws
  // PlacementError if n_layer < P*v, std::invalid_argument from the model for a bad config
  // (n_head not divisible by T, ...).
  StageModel(const GptConfig& config, const StageLayout& layout, TensorParallelOps ops,
             plx_comm_t pipeline_group, StorageOptions storage = {},
             MemoryTracker* tracker = nullptr);

  int num_chunks() const { return static_cast<int>(chunks_.size()); }
  GptShard& chunk(int c) { return *chunks_[c].shard; }
  const GptShard& chunk(int c) const { return *chunks_[c].shard; }
  const ChunkLayers& layers(int c) const { return chunks_[c].layers; }
  const StageLayout& layout() const { return layout_; }
  bool holds_head() const { return chunks_.back().layers.head; }

  // The step's local batch: tokens and targets (rows, seq), cut into `microbatches` equal parts.
  // The arrays must stay valid until the step ends.
  void set_batch(const int32_t* tokens, const int32_t* targets, int rows, int seq,
                 int microbatches);
  int microbatches() const { return microbatches_; }
  size_t activation_count() const;  // floats in one microbatch's boundary activation

  void zero_grad();
  // Every chunk's activation policy (GptShard::set_activation_policy; throws as it does).
  void set_activation_policy(const ActivationPolicy& policy);
  // Chunk c's unit hooks (GptShard::set_unit_hooks; nullptr: none; not owned). Throws
  // std::invalid_argument for c outside 0..num_chunks()-1.
  void set_unit_hooks(int chunk, UnitHooks* hooks);
  // P = 1: forward and backward of every microbatch. Throws what the model throws.
  void run_local();
  // The ops for run_pipeline (engine = this). Valid while this object lives.
  const plx_stage_ops_t* stage_ops();
  // Mean over the step's microbatches of their losses, on the rank holding the head; 0 elsewhere.
  double mean_loss() const;

  // Loss of one batch (rows, seq) through every chunk, forward only; meaningful on the rank
  // holding the head (0 elsewhere). Throws CommFailure.
  double forward_only(const int32_t* tokens, const int32_t* targets, int rows, int seq);

  // C entry points of plx_stage_ops_t; they never throw.
  static plx_result_t forward_stage(void* engine, int chunk, int microbatch, const float* input,
                                    float* output, char* err, size_t err_len);
  static plx_result_t backward_stage(void* engine, int chunk, int microbatch,
                                     const float* grad_output, float* grad_input, char* err,
                                     size_t err_len);

 private:
  // A chunk's microbatches in flight each hold one of its activation slots (GptShard), from
  // their forward to their backward; a finished microbatch's slot is reused by the next
  // forward, so a chunk keeps as many slots as its schedule has microbatches in flight at
  // once (1F1B: at most P - p; GPipe: M), each kept at its largest size.
  struct Chunk {
    ChunkLayers layers;
    std::unique_ptr<GptShard> shard;
    std::vector<int> slot_of;     // per microbatch of the step: its slot, -1 if none
    std::vector<bool> slot_busy;  // per slot
    int take_slot(int microbatch);   // the lowest free slot; throws logic_error if it has one
    int slot(int microbatch) const;  // its slot; throws logic_error if none
    void give_slot(int microbatch);
  };
  void check_call(int chunk, int microbatch, const char* what) const;

  GptConfig config_;
  StageLayout layout_;
  plx_comm_t pipeline_group_;
  std::vector<Chunk> chunks_;
  plx_stage_ops_t ops_{};
  const int32_t* tokens_ = nullptr;
  const int32_t* targets_ = nullptr;
  int rows_ = 0, seq_ = 0, microbatches_ = 1;
  std::vector<double> losses_;  // per microbatch, on the head chunk
};

}  // namespace plexus::engine
