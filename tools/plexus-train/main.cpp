// plexus-train: trains a GPT on a text file with the parallelism a placement string names, or
// (--sample) prints text generated from a checkpoint. Run it under plexus-run, mpirun, srun or
// torchrun; alone it is a world of one rank.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "engine/config/options.h"
#include "engine/placement/smp_config.h"
#include "engine/placement/smp_config_source.h"
#include "engine/train/predict.h"
#include "engine/train/sampler.h"
#include "engine/train/stop_request.h"
#include "engine/train/trainer.h"
#include "engine/world/world.h"
#include "tools/plexus-train/gnuplot_process.h"
#include "tools/plexus-train/loss_plot.h"
#include "tools/plexus-train/start_checks.h"
#include "topology/settings/config_read.h"

namespace {

using plexus::train::LossPlot;

// --plot before training: every rank checks the name (the engine checks the folder on rank 0
// with the other outputs), and rank 0 (which draws) makes the LossPlot, which has the run
// record its steps (loss_plot.h). "" or the message; on other ranks *plot stays empty.
std::string start_plot(const std::string& path, int rank, plexus::engine::TrainOptions* t,
                       std::unique_ptr<LossPlot>* plot) {
  std::string why = plexus::train::check_plot_name(path);
  if (!why.empty()) return why;
  t->plot_path = path;
  if (rank != 0) return "";
  *plot = LossPlot::create(path, &t->metrics_path, &why);
  if (*plot && !plexus::train::gnuplot_on_path()) {
    std::fprintf(stderr, "plexus-train: warning: --plot '%s': gnuplot is not on PATH; training "
                 "goes on, but the plot will not be drawn unless it is installed by the end "
                 "(e.g. apt-get install gnuplot-nox)\n", path.c_str());
  }
  return why;
}

// --plot after training, whatever its exit code: the plot drawn, or a warning naming the file
// and the cause; the exit code stays the training's. SIGINT or SIGTERM meanwhile ends gnuplot
// and the drawing (a warning), and the LossPlot still removes its folder.
void finish_plot(const LossPlot& plot, const plexus::engine::TrainOptions& t, int world_size,
                 int code) {
  std::fflush(stdout);
  plexus::engine::StopRequestScope stop_while_drawing;
  if (const std::string why = plot.draw(t, world_size); why.empty()) {
    std::printf("plexus-train: plotted loss and tokens/s against step: %s\n",
                plot.png_path().c_str());
  } else {
    std::fprintf(stderr, "plexus-train: warning: --plot '%s' was not drawn: %s%s\n",
                 plot.png_path().c_str(), why.c_str(),
                 code == 0 ? "; the training's result stands (exit code 0)" : "");
  }
  std::fflush(stdout);
}

// --smp-config: the SMP configuration translated into t's placement and options (exit code 2
// on a bad one, printed by every rank as placement errors are). Rank 0 says each key that has
// no meaning here, and with --explain prints the translation. "" or the message.
std::string apply_smp_config(const std::string& argument, const CLI::App& app, int rank,
                             plexus::engine::TrainOptions* t) {
  using namespace plexus::engine;
  std::string label;
  try {
    const std::string text = read_smp_config_source(argument, &label);
    const SmpJob job{world_size_from_environment(), t->model.n_layer, t->model.n_head,
                     t->global_batch, t->device};
    const SmpTranslation translation = translate_smp_config(text, job);
    SmpCommandLine given;
    given.placement = app.count("--placement") > 0;
    given.pipeline_degree = app.count("--pipeline-degree") > 0;
    given.tensor_degree = app.count("--tensor-degree") > 0;
    given.microbatches = app.count("--microbatches") > 0;
    given.pipeline_schedule = app.count("--pipeline-schedule") > 0;
    given.autocast = app.count("--autocast") > 0;
    apply_smp_translation(translation, given, t);
    if (rank == 0) {
      for (const std::string& notice : translation.notices) {
        std::fprintf(stderr, "plexus-train: warning: --smp-config %s: %s\n", label.c_str(),
                     notice.c_str());
      }
      if (t->explain) std::printf("%s\n", translation.explanation.c_str());
      std::fflush(stdout);
    }
    return "";
  } catch (const SmpConfigError& e) {
    return fmt::format("rank {}: --smp-config {}{}{}", rank, label, label.empty() ? "" : ": ",
                       e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using plexus::engine::SampleOptions;
  using plexus::engine::TrainOptions;
  TrainOptions t;
  SampleOptions s;
  bool sample = false;
  plexus::engine::PredictOptions predict;
  std::string device = "cpu", autocast = "none", plot_path;

  CLI::App app{"plexus-train: train a GPT over Plexus collectives, or sample from a checkpoint"};
  app.set_version_flag("--version", "plexus-train 0.1.0");
  app.add_option("--data", t.data_path, "text file; byte-level tokens, last 10% validation")
      ->capture_default_str();
  app.add_option("--placement", t.placement,
                 "placement string: cluster | spread | axes like D4, D2P2T2, then +plugins; or auto "
                 "(the planner chooses, docs/placement.md)")
      ->capture_default_str();
  std::string smp_config;
  app.add_option("--smp-config", smp_config,
                 "a SageMaker model parallel configuration (a JSON file, or inline JSON starting "
                 "with '{'): sets the placement and the options it names (docs/placement.md)");
  std::string memory_per_rank;
  app.add_option("--memory-per-rank", memory_per_rank,
                 "--placement auto: each rank's memory budget in bytes (suffix K, M or G: "
                 "powers of 1024); default: the host's memory over its ranks (cuda: the GPU's over "
                 "the ranks sharing it)");
  app.add_option("--optimize", t.optimize,
                 "--placement auto: rank the plans that fit by speed (predicted step time) or "
                 "memory (predicted peak), as SageMaker's optimize")
      ->capture_default_str();
  app.add_option("--pipeline-degree", t.pipeline_degree, "degree of a P written without one (cluster, spread, P); with auto, P fixed");
  app.add_option("--tensor-degree", t.tensor_degree, "degree of a T written without one (cluster, spread, T); with auto, T fixed");
  app.add_option("--n-layer", t.model.n_layer, "transformer blocks")->capture_default_str();
  app.add_option("--n-head", t.model.n_head, "attention heads")->capture_default_str();
  app.add_option("--n-embd", t.model.n_embd, "embedding width")->capture_default_str();
  app.add_option("--seq-len", t.model.seq_len, "context length in bytes")->capture_default_str();
  app.add_option("--batch-size", t.global_batch,
                 "global batch in sequences, split over the data-parallel ranks")
      ->capture_default_str();
  app.add_option("--steps", t.steps, "optimizer steps")->capture_default_str();
  app.add_option("--lr", t.lr, "peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--warmup-steps", t.warmup_steps, "linear warm-up steps")->capture_default_str();
  app.add_option("--lr-schedule-on-resume", t.lr_schedule_on_resume,
                 "resuming with another --steps, --lr or --warmup-steps than the checkpoint's "
                 "schedule: check (refuse), checkpoint (continue its schedule) or override "
                 "(switch to this run's)")
      ->capture_default_str();
  app.add_option("--weight-decay", t.weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str();
  app.add_option("--grad-clip", t.grad_clip, "global gradient-norm clip (0: off)")
      ->capture_default_str();
  app.add_option("--seed", t.seed, "seed for initialisation and batches")->capture_default_str();
  app.add_option("--val-every", t.val_every, "steps between validation passes (0: off)")
      ->capture_default_str();
  app.add_option("--val-batches", t.val_batches, "batches per validation pass")
      ->capture_default_str();
  app.add_option("--log-every", t.log_every, "steps between log lines")->capture_default_str();
  app.add_option("--bucket-bytes", t.bucket_bytes, "gradient bucket size for the D plugin")
      ->capture_default_str();
  app.add_option("--checkpoint", t.checkpoint_path, "checkpoint file written at the end (\"\": none)")
      ->capture_default_str();
  app.add_option("--save-every", t.save_every, "also save every N steps (0: only at the end)");
  app.add_option("--checkpoint-dir", t.checkpoint_dir,
                 "sharded checkpoints: resume from the newest complete one here, save every "
                 "--save-every steps, at the end and when stopped by SIGTERM/SIGINT");
  app.add_option("--metrics-file", t.metrics_path, "JSON lines of per-step metrics (rank 0)");
  app.add_option("--time-limit", t.time_limit_s, "stop and save after this many seconds (0: none)");
  app.add_option("--target-val-loss", t.target_val_loss,
                 "stop and save once validation loss is below this (0: none)");
  app.add_flag("--explain", t.explain,
               "rank 0 prints each rank's (d,p,t), groups, layers and plugins");
  app.add_flag("--estimate-memory", t.estimate_memory,
               "print each pipeline stage's predicted memory peaks per rank (as --memory-report "
               "would measure them) and exit without training; with --memory-report every rank "
               "writes its stage's prediction there (JSON, bytes)");
  app.add_option("--microbatches", t.microbatches,
                 "microbatches per step (each rank's rows split evenly; pipelines overlap them)")
      ->capture_default_str();
  app.add_option("--pipeline-schedule", t.pipeline_schedule,
                 "pipeline schedule: simple (GPipe), 1f1b or interleaved")
      ->capture_default_str();
  app.add_option("--virtual-stages", t.virtual_stages,
                 "model chunks per pipeline stage (> 1 needs --pipeline-schedule interleaved)")
      ->capture_default_str();
  app.add_option("--save-params", t.save_params_path,
                 "at the end, gather the full model's parameters to rank 0 and write them here");
  app.add_option("--memory-report", t.memory_report_path,
                 "at the end, every rank writes its memory figures (JSON) here; {rank} in the "
                 "path becomes the rank");
  app.add_option("--plot", plot_path,
                 "at the end (also after --time-limit or a signal's stop), rank 0 draws loss, "
                 "validation loss and tokens/s against step into this .png with gnuplot (its "
                 "folder must exist); a failure to draw is a warning, not a failed run");

  app.add_option("--device", device,
                 "compute device: cpu (OpenBLAS) or cuda (each rank on GPU local rank modulo "
                 "the visible GPUs; several ranks may share one)")
      ->capture_default_str();
  app.add_option("--autocast", autocast,
                 "none (fp32) or bf16 (GEMM inputs rounded to bf16, fp32 accumulation; on "
                 "--device cpu the linear layers, and only on processors with AVX512-BF16)")
      ->capture_default_str();

  app.add_flag("--evaluate", t.evaluate,
               "no training: the validation loss and perplexity of --checkpoint over the whole "
               "validation split of --data, under --placement (model sizes from the "
               "checkpoint; --metrics-file gets a JSON object)");
  app.add_flag("--sample", sample, "generate text from --checkpoint instead of training");
  app.add_option("--prompt", s.prompt, "text to continue (with --sample)")->capture_default_str();
  app.add_option("--tokens", s.tokens, "bytes to generate (with --sample and --predict)")->capture_default_str();
  app.add_option("--temperature", s.temperature, "sampling temperature")->capture_default_str();
  app.add_option("--top-k", s.top_k, "sample among the k most likely bytes (0: all)");
  app.add_option("--sample-seed", s.seed, "seed of the sampler")->capture_default_str();
  app.add_option("--predict", predict.input_path,
                 "no training: for each line of this text file, --tokens bytes sampled from "
                 "--checkpoint and the most likely next bytes, as JSON lines into "
                 "--predict-output");
  app.add_option("--predict-output", predict.output_path,
                 "with --predict: the JSON lines file (rank 0 writes it; its folder must exist)");
  app.add_option("--predict-top", predict.top,
                 "with --predict: most likely next bytes listed per line, with probabilities")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!plexus::engine::parse_compute_device(device, &t.device)) {
    // {:?}: quoted, with control characters escaped (a bad value never reaches the terminal raw).
    fmt::print(stderr, "plexus-train: --device {:?} is not one of cpu, cuda\n", device);
    return 2;
  }
  if (!plexus::engine::parse_autocast(autocast, &t.autocast)) {
    fmt::print(stderr, "plexus-train: --autocast {:?} is not one of none, bf16\n", autocast);
    return 2;
  }
  t.microbatches_given = app.count("--microbatches") > 0;
  if (!memory_per_rank.empty()) {
    size_t bytes = 0;
    std::string error;
    if (plexus::parse_bytes_text("--memory-per-rank", memory_per_rank, 1,
                                           SIZE_MAX / 2, &bytes, &error) != PLX_SUCCESS) {
      std::fprintf(stderr, "plexus-train: %s\n", error.c_str());
      return 2;
    }
    t.memory_per_rank = bytes;
  }
  if ((app.count("--memory-per-rank") > 0 || app.count("--optimize") > 0) &&
      (t.placement != "auto" || app.count("--smp-config") > 0)) {
    std::fprintf(stderr, "plexus-train: --memory-per-rank and --optimize apply to --placement "
                 "auto only (the placement is %s)\n",
                 app.count("--smp-config") > 0 ? "--smp-config's"
                                               : ("'" + t.placement + "'").c_str());
    return 2;
  }
  for (const auto& [option, value] : {std::pair{"--pipeline-degree", t.pipeline_degree},
                                      std::pair{"--tensor-degree", t.tensor_degree}}) {
    if (app.count(option) > 0 && value < 1) {
      std::fprintf(stderr, "plexus-train: %s %d must be at least 1\n", option, value);
      return 2;
    }
  }
  if (t.placement == "auto" &&
      ((app.count("--pipeline-schedule") > 0 && t.pipeline_schedule != "1f1b") ||
       (app.count("--virtual-stages") > 0 && t.virtual_stages != 1))) {
    std::fprintf(stderr, "plexus-train: --placement auto plans 1F1B pipelines with one chunk per "
                 "stage; --pipeline-schedule %s --virtual-stages %d cannot apply (write the "
                 "placement instead)\n",
                 t.pipeline_schedule.c_str(), t.virtual_stages);
    return 2;
  }
  // What plans or sizes a training run does not go with a mode that trains nothing.
  const char* mode = sample ? "--sample" : t.evaluate ? "--evaluate"
                                         : !predict.input_path.empty() ? "--predict" : nullptr;
  const char* planning = t.placement == "auto" ? "--placement auto"
                         : t.estimate_memory   ? "--estimate-memory"
                         : sample && app.count("--smp-config") > 0 ? "--smp-config"
                                                                   : nullptr;
  if (mode != nullptr && planning != nullptr) {
    std::fprintf(stderr, "plexus-train: %s is for a training run; %s trains nothing\n", planning,
                 mode);
    return 2;
  }
  if (app.count("--smp-config") > 0) {
    if (const std::string why =
            apply_smp_config(smp_config, app, plexus::engine::rank_from_environment(), &t);
        !why.empty()) {
      std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
      return 2;
    }
  }
  s.device = t.device;
  s.autocast = t.autocast;
  if (!predict.input_path.empty() || !predict.output_path.empty()) {
    if (predict.input_path.empty()) {
      std::fprintf(stderr, "plexus-train: --predict-output needs --predict INPUT (the prompts, "
                   "one per line)\n");
      return 2;
    }
    if (sample || t.evaluate) {
      std::fprintf(stderr, "plexus-train: --predict cannot be combined with %s\n",
                   sample ? "--sample" : "--evaluate");
      return 2;
    }
    s.checkpoint_path = t.checkpoint_path;
    predict.sample = s;
    predict.placement = t.placement;
    predict.pipeline_degree = t.pipeline_degree;
    predict.tensor_degree = t.tensor_degree;
    return plexus::engine::run_prediction(predict);
  }
  if (sample && t.evaluate) {
    std::fprintf(stderr, "plexus-train: --sample and --evaluate cannot be combined\n");
    return 2;
  }
  if (t.evaluate && !plot_path.empty()) {
    std::fprintf(stderr, "plexus-train: --plot draws a training run; --evaluate trains nothing "
                 "(its result goes to --metrics-file)\n");
    return 2;
  }
  if (sample) {
    s.checkpoint_path = t.checkpoint_path;
    return plexus::engine::run_sampling(s);
  }
  // Output paths first, so a bad one is refused before the communicator and the training start
  // (--checkpoint-dir is checked where it is loaded from, also before training).
  if (const std::string why = plexus::train::check_memory_report_folder(t.memory_report_path);
      !why.empty()) {
    std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
    return 2;
  }
  // Rank 0 draws; the rank and world size as the launcher set them (engine/world/world.h).
  const int rank = plexus::engine::rank_from_environment();
  std::unique_ptr<LossPlot> plot;
  if (!plot_path.empty()) {
    if (const std::string why = start_plot(plot_path, rank, &t, &plot);
        !why.empty()) {
      std::fprintf(stderr, "plexus-train: %s\n", why.c_str());
      return 2;
    }
  }
  const int code = plexus::engine::run_training(t);
  // Exit code 2: bad input refused before training (the message is printed); nothing to draw.
  if (plot && code != 2) {
    finish_plot(*plot, t, plexus::engine::world_size_from_environment(), code);
  }
  return code;
}
