// training_loop.cpp - the steps of a training run after its set-up (training_run.h): resume,
// the loop (one training step, validation, logging, periodic saves, the early stops), the final
// save and the memory report.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/checkpoint/checkpoint_io.h"
#include "engine/checkpoint/checkpoint_metrics.h"
#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt_shard.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"
#include "engine/optim/lr_schedule.h"
#include "engine/state/param_gather.h"
#include "engine/train/device_choice.h"
#include "engine/train/memory_report.h"
#include "engine/train/stop_request.h"
#include "engine/train/training_run.h"

namespace plexus::engine {

namespace {

// A checkpoint of the full model (Gpt's flat layout) from buffers gathered on rank 0; adam_m and
// adam_v may be empty (--save-params writes the parameters only).
Checkpoint make_checkpoint(const TrainOptions& o, const GptConfig& c, std::vector<float> params,
                           std::vector<float> adam_m, std::vector<float> adam_v,
                           int64_t next_step, float last_val_loss) {
  Checkpoint ck;
  ck.header["format"] = "plexus-gpt";
  ck.header["model"] = {{"vocab_size", c.vocab_size}, {"max_seq_len", c.max_seq_len},
                        {"n_layer", c.n_layer},       {"n_head", c.n_head},
                        {"n_embd", c.n_embd}};
  ck.header["step"] = next_step;
  ck.header["seed"] = o.seed;
  ck.header["placement"] = o.placement;
  ck.header["global_batch"] = o.global_batch;
  ck.header["val_loss"] = last_val_loss;
  nlohmann::json tensors = nlohmann::json::array();
  const ShardSpec whole{0, c.n_layer, true, true, 1, 0};
  for (const ShardTensor& t : shard_tensors(c, whole)) {
    tensors.push_back({{"name", t.name}, {"offset", t.full_offset}, {"shape", t.full_shape}});
  }
  ck.header["tensors"] = tensors;
  ck.sections.push_back({"params", std::move(params)});
  if (!adam_m.empty()) ck.sections.push_back({"adam_m", std::move(adam_m)});
  if (!adam_v.empty()) ck.sections.push_back({"adam_v", std::move(adam_v)});
  return ck;
}

// Every rank's share of a value that only the head's tensor rank 0 knows (the loss), summed over
// the world and divided by |D|: the mean over data-parallel replicas, on every rank.
double replica_mean(World& world, const StageModel& model, double value, int data_degree,
                    const char* what) {
  const bool owner = model.holds_head() && model.layout().tensor_rank == 0;
  return world.sum(owner ? value : 0.0, what) / data_degree;
}

// Mean validation loss over the whole validation set, averaged over the data-parallel ranks.
// Each batch goes through in the step's microbatches, so validation needs no more activation
// memory than training (every microbatch has the same rows, so the mean of their means is the
// batch's mean).
float validation_loss(StageModel& model, const TextDataset& data, const TrainOptions& o,
                      World& world, int d, int local_rows, int data_degree) {
  std::vector<int32_t> tokens, targets;
  const int M = o.microbatches, rows = local_rows / M;
  const size_t mb_tokens = static_cast<size_t>(rows) * o.model.seq_len;
  double sum = 0;
  for (int i = 0; i < o.val_batches; ++i) {
    data.validation_batch(i, o.val_batches, o.global_batch, d * local_rows, local_rows, tokens,
                          targets);
    double batch = 0;
    for (int m = 0; m < M; ++m) {
      batch += model.forward_only(tokens.data() + m * mb_tokens, targets.data() + m * mb_tokens,
                                  rows, o.model.seq_len);
    }
    sum += batch / M;
  }
  return static_cast<float>(
      replica_mean(world, model, sum / o.val_batches, data_degree, "validation loss"));
}

// The single-file checkpoint of the full model at `path`, gathered to rank 0 (every rank takes
// part: a sharded state all-gathers its parts into whole chunks first); with_optimizer adds
// AdamW's moments (--checkpoint) to the parameters (--save-params).
void save_full(TrainingRun& r, const std::string& path, bool with_optimizer, int64_t next_step,
               float val) {
  auto gather = [&](StateBuffer which) {
    const ChunkValues values = r.state->full_values(which);
    return gather_full_model(r.config, r.placement, *r.model, values.chunks, r.world.comm(),
                             r.world.rank());
  };
  std::vector<float> params = gather(StateBuffer::kParams);
  std::vector<float> m, v;
  if (with_optimizer) {
    m = gather(StateBuffer::kAdamM);
    v = gather(StateBuffer::kAdamV);
  }
  if (r.leader()) {
    save_checkpoint(path, make_checkpoint(r.o, r.config, std::move(params), std::move(m),
                                          std::move(v), next_step, val));
  }
}

// A universal sharded checkpoint of step next_step in --checkpoint-dir, unless this run has it.
void save_sharded(TrainingRun& r, RunProgress& p, int64_t next_step) {
  if (r.o.checkpoint_dir.empty() || next_step == p.saved_step) return;
  const std::string path = save_sharded_checkpoint(
      p.sharded,
      CheckpointRun{next_step, p.data_seed, r.o.global_batch, p.last_val, p.resume.schedule},
      *r.model, *r.state, r.world);
  p.saved_step = next_step;
  if (r.leader()) {
    std::printf("plexus-train: saved sharded checkpoint %s\n", path.c_str());
    std::fflush(stdout);
  }
}

// One training step: the rows of step `step`, forward and backward of every microbatch (the P
// plugin's schedule when |P| > 1), the gradient reduction, global clipping and AdamW. Returns
// the gradient norm before clipping.
float train_step(TrainingRun& r, const RunProgress& p, AdamWConfig& adam, std::vector<int32_t>& tokens,
                 std::vector<int32_t>& targets) {
  const TrainOptions& o = r.o;
  r.data->train_batch(p.data_seed, p.step, r.d * r.local_rows, r.local_rows, tokens, targets);
  r.model->set_batch(tokens.data(), targets.data(), r.local_rows, o.model.seq_len,
                     o.microbatches);
  r.state->zero_grad();
  if (r.P > 1) {
    char err[1024] = {};
    plx_result_t rc = r.pipeliner->run_pipeline()(r.pipeliner->state, r.model->stage_ops(), err,
                                                  sizeof(err));
    if (rc != PLX_SUCCESS) throw CommFailure(rc, err);
  } else {
    r.model->run_local();
  }
  r.state->reduce_gradients();
  const double sum_squares = r.state->grad_sum_squares();
  r.state->scale_grads(clip_coefficient(sum_squares, o.grad_clip));
  adam.lr = learning_rate(p.resume.schedule, p.step);
  r.state->step(p.step + 1, adam);
  return static_cast<float>(std::sqrt(sum_squares));
}

// Rank 0's line for a step (every --log-every steps, the first, the last and validation steps)
// and its --metrics-file row.
void log_step(const TrainingRun& r, RunProgress& p, float loss, float lr, float grad_norm, double step_s,
              double elapsed, bool validated) {
  if (!r.leader()) return;
  const TrainOptions& o = r.o;
  const double tokens_per_step = static_cast<double>(o.global_batch) * o.model.seq_len;
  const int64_t step = p.step;
  if ((step + 1) % o.log_every == 0 || step == 0 || validated || step + 1 == o.steps) {
    std::printf("step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %7.0f tok/s | %.3f s "
                "| elapsed %.1f s\n",
                static_cast<long long>(step + 1), static_cast<long long>(o.steps), loss, lr,
                grad_norm, tokens_per_step / step_s, step_s, elapsed);
  }
  if (validated) {
    std::printf("step %5lld | validation loss %.4f\n", static_cast<long long>(step + 1),
                p.last_val);
  }
  std::fflush(stdout);
  if (p.metrics) {
    nlohmann::json row = {{"step", step + 1}, {"loss", loss},         {"lr", lr},
                          {"grad_norm", grad_norm}, {"elapsed_s", elapsed}, {"step_s", step_s}};
    if (step_s > 0) row["tokens_per_s"] = tokens_per_step / step_s;
    if (validated) row["val_loss"] = p.last_val;
    *p.metrics << row.dump() << "\n" << std::flush;
  }
}

}  // namespace

RunProgress resume_run(TrainingRun& r) {
  const TrainOptions& o = r.o;
  set_setup_stage("reading the checkpoint");
  const uint64_t job =  // drawn by rank 0, shared: it names the job's temporary folders
      o.checkpoint_dir.empty()
          ? 0
          : r.world.broadcast(r.leader() ? random_job_number() : 0, "job id");
  RunProgress p;
  p.sharded = ShardedCheckpointContext{o.checkpoint_dir, r.config, o.placement, r.data_degree,
                                       r.d, job_id(job)};
  try {
    p.resume = resume_training(o, p.sharded, *r.model, *r.state, r.world);
  } catch (const CheckpointError& e) {
    throw UsageError(e.what());  // a damaged or mismatched checkpoint is bad input (exit 2)
  }
  const std::optional<CheckpointRun>& run = p.resume.run;
  p.last_val = run ? run->last_val_loss : NAN;
  p.step = run ? run->next_step : 0;
  p.data_seed = run ? run->seed : o.seed;
  p.saved_step = run ? run->next_step : -1;
  if (r.leader() && !o.metrics_path.empty()) {
    p.metrics = open_metrics_file(o.metrics_path, p.saved_step >= 0
                                                      ? std::optional<int64_t>(p.saved_step)
                                                      : std::nullopt);
  }
  return p;
}

void train_loop(TrainingRun& r, RunProgress& p) {
  const TrainOptions& o = r.o;
  AdamWConfig adam;
  adam.weight_decay = o.weight_decay;
  std::vector<int32_t> tokens, targets;
  const auto start = std::chrono::steady_clock::now();
  for (; p.step < o.steps; ++p.step) {
    const auto t0 = std::chrono::steady_clock::now();
    const float grad_norm = train_step(r, p, adam, tokens, targets);
    const float loss = static_cast<float>(replica_mean(r.world, *r.model, r.model->mean_loss(),
                                                       r.data_degree, "training loss"));
    const auto now = std::chrono::steady_clock::now();
    const double step_s = std::chrono::duration<double>(now - t0).count();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const int64_t done = p.step + 1;
    const bool validate = o.val_every > 0 && (done % o.val_every == 0 || done == o.steps);
    if (validate) {
      p.last_val =
          validation_loss(*r.model, *r.data, o, r.world, r.d, r.local_rows, r.data_degree);
    }
    log_step(r, p, loss, adam.lr, grad_norm, step_s, elapsed, validate);
    if (o.save_every > 0 && done % o.save_every == 0) {
      if (!o.checkpoint_path.empty()) save_full(r, o.checkpoint_path, true, done, p.last_val);
      save_sharded(r, p, done);
    }
    const bool reached = validate && o.target_val_loss > 0 && p.last_val < o.target_val_loss;
    const bool timed_out =
        o.time_limit_s > 0 && r.world.any(elapsed > o.time_limit_s, "time limit");
    const bool signalled = r.world.any(stop_requested(), "stop request");
    if (reached || timed_out || signalled) {
      ++p.step;
      if (r.leader()) {
        // Only a checkpoint folder is read back on a restart; --checkpoint FILE is written only.
        const char* stop_reason = !o.checkpoint_dir.empty()
                                      ? "stop requested by a signal; run the same command to resume"
                                      : "stop requested by a signal; add --checkpoint-dir DIR to "
                                        "save a run that the same command resumes";
        std::printf("plexus-train: stopping after step %lld (%s)\n",
                    static_cast<long long>(p.step),
                    reached     ? "validation loss reached the target"
                    : timed_out ? "time limit reached"
                                : stop_reason);
      }
      break;
    }
  }
}

void save_final(TrainingRun& r, RunProgress& p) {
  const TrainOptions& o = r.o;
  set_setup_stage("saving the checkpoints and outputs");
  save_sharded(r, p, p.step);
  if (!o.checkpoint_path.empty()) {
    save_full(r, o.checkpoint_path, true, p.step, p.last_val);
    if (r.leader()) {
      std::printf("plexus-train: saved checkpoint %s (step %lld)\n", o.checkpoint_path.c_str(),
                  static_cast<long long>(p.step));
    }
  }
  if (!o.save_params_path.empty()) {
    save_full(r, o.save_params_path, false, p.step, p.last_val);
    if (r.leader()) std::printf("plexus-train: saved parameters %s\n", o.save_params_path.c_str());
  }
}

void report_memory(const TrainingRun& r) {
  if (r.leader()) {
    std::printf("plexus-train: memory peaks (rank 0), the device pool in %s\n%s\n",
                device_pool_description(r.world.local_rank()).c_str(),
                memory_tracker().summary().c_str());
  }
  if (!r.o.memory_report_path.empty()) {
    write_memory_report(memory_report_path(r.o.memory_report_path, r.world.rank()),
                        r.world.rank(), r.o.placement, memory_tracker());
  }
  std::fflush(stdout);
}

}  // namespace plexus::engine
