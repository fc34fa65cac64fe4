// options.h - everything plexus-train can be told, with the defaults of the README's main job.
#pragma once

#include <cstdint>
#include <string>

#include "engine/device/compute.h"

namespace plexus::engine {

struct ModelOptions {
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;
  int seq_len = 64;
};

struct TrainOptions {
  std::string data_path = "data/moby_dick.txt";
  std::string placement = "D";  // "auto": the planner chooses (engine/plan/planner.h)
  // --placement auto: each rank's memory budget in bytes (0: on cpu the host's memory over its
  // local ranks, on cuda the GPU's over the ranks sharing it), and what the planner ranks by
  // among the plans that fit: "speed" (predicted step time) or "memory" (predicted peak), as
  // SageMaker's "optimize".
  uint64_t memory_per_rank = 0;
  std::string optimize = "speed";
  int pipeline_degree = 0;  // 0: not given
  int tensor_degree = 0;
  ModelOptions model;
  int global_batch = 32;    // sequences per step, over all data-parallel ranks
  int64_t steps = 1000;
  float lr = 3e-3f;
  float min_lr_ratio = 0.1f;  // cosine decay ends at lr * min_lr_ratio
  int64_t warmup_steps = 50;
  // A resumed run whose --lr, --warmup-steps or --steps differ from its checkpoint's schedule:
  // check (refuse), checkpoint (continue the saved one), override (schedule_resume.h).
  std::string lr_schedule_on_resume = "check";
  float weight_decay = 0.1f;
  float grad_clip = 1.0f;     // 0 disables clipping
  uint64_t seed = 1234;
  int64_t val_every = 100;    // 0 disables validation during training
  int val_batches = 8;
  int64_t log_every = 10;
  size_t bucket_bytes = 25u << 20;
  std::string checkpoint_path = "checkpoints/gpt.ckpt";  // "" disables saving
  int64_t save_every = 0;     // 0: only at the end
  // Universal sharded checkpoints (resume, reshape); "" disables. Resumes from the newest
  // complete one found there, saves every save_every steps, at the end and on SIGTERM/SIGINT.
  std::string checkpoint_dir;
  std::string metrics_path;   // JSON lines of per-step metrics (rank 0), "" disables
  double time_limit_s = 0;    // stop early (and save) after this much wall time; 0: none
  float target_val_loss = 0;  // stop early (and save) once validation loss is below; 0: none
  bool explain = false;
  // --estimate-memory: rank 0 prints each stage's predicted memory (engine/plan/memory_model.h)
  // once the placement and plugins are set up, and the run ends there (exit 0), untrained.
  bool estimate_memory = false;
  // --evaluate: no training; the single-file --checkpoint's validation loss over the whole
  // validation split under this placement (evaluate.h); its model sizes replace --n-layer,
  // --n-head, --n-embd and --seq-len; --metrics-file gets one JSON object.
  bool evaluate = false;
  int microbatches = 1;       // per step and data-parallel rank; local rows split evenly
  bool microbatches_given = false;  // --microbatches was on the command line (auto keeps it)
  std::string pipeline_schedule = "1f1b";  // simple (GPipe) | 1f1b | interleaved
  int virtual_stages = 1;     // model chunks per pipeline stage; > 1 needs interleaved
  std::string save_params_path;  // full model's parameters gathered to rank 0 at the end; ""
  std::string plot_path;  // --plot: rank 0 draws the run here at the end (plexus-train); checked
                          // with the other outputs before training, "" if none
  std::string memory_report_path;  // each rank's memory figures as JSON, "{rank}" -> rank; ""
  // Where the model runs (--device, --autocast; engine/device/compute.h). On cuda each rank
  // takes GPU (local rank modulo the visible GPUs); several ranks may share one.
  ComputeDevice device = ComputeDevice::kCpu;
  Autocast autocast = Autocast::kNone;
};

struct SampleOptions {
  std::string checkpoint_path = "checkpoints/gpt.ckpt";
  std::string prompt = "Call me Ishmael. ";
  int tokens = 400;
  float temperature = 0.8f;
  int top_k = 0;              // 0: no top-k filter
  uint64_t seed = 42;
  ComputeDevice device = ComputeDevice::kCpu;  // one process: GPU 0 on cuda
  Autocast autocast = Autocast::kNone;
};

}  // namespace plexus::engine
