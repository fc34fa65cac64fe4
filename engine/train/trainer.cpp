#include "engine/train/trainer.h"

#include <cblas.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "engine/data/text_dataset.h"
#include "engine/model/gpt.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"
#include "engine/placement/placement.h"
#include "engine/plugin/plugin_loader.h"
#include "engine/train/checkpoint.h"
#include "engine/train/world.h"
#include "topology/host.h"

namespace plexus::engine {

namespace {

// Bad input (exit code 2) as opposed to a runtime failure (exit code 1).
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A plugin loaded and created for this rank. Held by unique_ptr and never moved, because the
// context handed to create() (its args, in particular) must stay valid until destroy().
struct ActivePlugin {
  LoadedPlugin library;
  void* state = nullptr;
  std::vector<std::string> args;
  std::vector<const char*> arg_pointers;

  ActivePlugin() = default;
  ActivePlugin(const ActivePlugin&) = delete;
  ActivePlugin& operator=(const ActivePlugin&) = delete;
  ~ActivePlugin() {
    if (state && library.api().destroy) library.api().destroy(state);
  }
};
using ActivePlugins = std::vector<std::unique_ptr<ActivePlugin>>;

// Linear warm-up, then cosine decay to lr * min_lr_ratio at the last step (as in nanoGPT).
float learning_rate(const TrainOptions& o, int64_t step) {
  if (step < o.warmup_steps) return o.lr * static_cast<float>(step + 1) / o.warmup_steps;
  const double span = std::max<int64_t>(1, o.steps - o.warmup_steps);
  const double progress = std::min(1.0, (step - o.warmup_steps) / span);
  const double min_lr = o.lr * o.min_lr_ratio;
  return static_cast<float>(min_lr + 0.5 * (o.lr - min_lr) * (1.0 + std::cos(M_PI * progress)));
}

// Each rank's BLAS threads: the host's cores shared by the ranks on it, unless the user said.
void choose_blas_threads(int local_size) {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;
  int threads = std::max(1, topology::physical_core_count() / std::max(1, local_size));
  openblas_set_num_threads(threads);
}

GptConfig model_config(const TrainOptions& o) {
  GptConfig c;
  c.vocab_size = 256;
  c.max_seq_len = o.model.seq_len;
  c.n_layer = o.model.n_layer;
  c.n_head = o.model.n_head;
  c.n_embd = o.model.n_embd;
  return c;
}

void check_options(const TrainOptions& o, int data_degree) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw UsageError(fmt::format("--{} must be at least 1, got {}", name, v));
  };
  positive("steps", o.steps);
  positive("batch-size", o.global_batch);
  positive("seq-len", o.model.seq_len);
  positive("val-batches", o.val_batches);
  positive("log-every", o.log_every);
  auto at_least_zero = [](const char* name, double v) {
    if (!(v >= 0) || !std::isfinite(v)) {
      throw UsageError(fmt::format("--{} must be a finite number >= 0, got {}", name, v));
    }
  };
  at_least_zero("warmup-steps", static_cast<double>(o.warmup_steps));
  at_least_zero("val-every", static_cast<double>(o.val_every));
  at_least_zero("save-every", static_cast<double>(o.save_every));
  at_least_zero("weight-decay", o.weight_decay);
  at_least_zero("grad-clip", o.grad_clip);
  at_least_zero("time-limit", o.time_limit_s);
  at_least_zero("target-val-loss", o.target_val_loss);
  at_least_zero("min-lr-ratio", o.min_lr_ratio);
  if (o.global_batch % data_degree != 0) {
    throw UsageError(fmt::format("--batch-size {} is not divisible by the data-parallel degree {}",
                                 o.global_batch, data_degree));
  }
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    throw UsageError(fmt::format("--lr must be a finite positive number, got {}", o.lr));
  }
}

ActivePlugins create_plugins(const Placement& placement, World& world,
                                         size_t bucket_bytes) {
  // One plugin per written axis (or per implied axis of degree > 1), then each "+plugin".
  struct Wanted {
    std::string name;
    std::vector<std::string> args;
    char axis;  // the axis whose group and coordinate the plugin gets
  };
  std::vector<Wanted> wanted;
  for (const Axis& axis : placement.axes) {
    if (axis.written || axis.degree > 1) wanted.push_back({std::string(1, axis.letter), {}, axis.letter});
  }
  // "+plugins" act on the data-parallel group, whatever their name.
  for (const PluginSpec& spec : placement.plugins) wanted.push_back({spec.name, spec.args, 'D'});

  ActivePlugins plugins;
  for (auto& [name, args, letter] : wanted) {
    auto owned = std::make_unique<ActivePlugin>();
    ActivePlugin& plugin = *owned;
    plugin.library = load_plugin(name);
    plugin.args = args;
    for (const std::string& a : plugin.args) plugin.arg_pointers.push_back(a.c_str());
    plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;
    context.world = world.comm();
    context.group = world.comm();  // only D has degree > 1 until communicator split lands
    context.degree = placement.degree(letter);
    context.coordinate = placement.coordinate(world.rank(), letter);
    context.args = plugin.arg_pointers.data();
    context.num_args = plugin.arg_pointers.size();
    context.bucket_bytes = bucket_bytes;
    if (plugin.library.api().create) {
      char err[512] = {};
      plx_result_t r = plugin.library.api().create(&context, &plugin.state, err, sizeof(err));
      if (r != PLX_SUCCESS) {
        if (r == PLX_ERROR_INVALID_ARGUMENT || r == PLX_ERROR_INVALID_USAGE) throw UsageError(err);
        throw std::runtime_error(err);
      }
    }
    plugins.push_back(std::move(owned));
  }
  return plugins;
}

void explain(const Placement& placement, const ActivePlugins& plugins, World& world,
             const GptConfig& config) {
  std::string coords;
  for (const Axis& a : placement.axes) {
    coords += fmt::format("{}{}={}", coords.empty() ? "" : ", ", static_cast<char>(a.letter + 32),
                          placement.coordinate(world.rank(), a.letter));
  }
  std::string line = fmt::format("explain: rank {} of {}: ({})", world.rank(), world.size(), coords);
  for (const Axis& a : placement.axes) {
    std::string ranks;
    for (int r : placement.group_ranks(world.rank(), a.letter)) {
      ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);
    }
    line += fmt::format("; {} group [{}]", a.letter, ranks);
  }
  line += fmt::format("; layers 0..{} (all)", config.n_layer - 1);
  for (const auto& p : plugins) {
    line += fmt::format("; plugin {} {} ({})", p->library.api().name, p->library.api().version,
                        p->library.path());
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

Checkpoint make_checkpoint(const TrainOptions& o, const GptConfig& c, const Gpt& model,
                           const std::vector<float>& m, const std::vector<float>& v,
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
  for (const ParamTensor& t : model.param_table()) {
    tensors.push_back({{"name", t.name}, {"offset", t.offset}, {"shape", t.shape}});
  }
  ck.header["tensors"] = tensors;
  ck.sections.push_back({"params", std::vector<float>(model.params(),
                                                      model.params() + model.num_params())});
  ck.sections.push_back({"adam_m", m});
  ck.sections.push_back({"adam_v", v});
  return ck;
}

// Mean validation loss over the whole validation set, averaged over the data-parallel ranks.
float validation_loss(Gpt& model, const TextDataset& data, const TrainOptions& o, World& world,
                      int d, int local_rows) {
  std::vector<int32_t> tokens, targets;
  double sum = 0;
  for (int i = 0; i < o.val_batches; ++i) {
    data.validation_batch(i, o.val_batches, o.global_batch, d * local_rows, local_rows, tokens,
                          targets);
    sum += model.forward(tokens.data(), targets.data(), local_rows, o.model.seq_len);
  }
  float local = static_cast<float>(sum / o.val_batches);
  return world.average(local, "validation loss");
}

int train(const TrainOptions& o, World& world) {
  Placement placement = parse_placement(o.placement);
  resolve_placement(placement, world.size(), o.pipeline_degree, o.tensor_degree);
  const int data_degree = placement.degree('D');
  const int d = placement.coordinate(world.rank(), 'D');
  check_options(o, data_degree);
  const GptConfig config = model_config(o);

  ActivePlugins plugins = create_plugins(placement, world, o.bucket_bytes);
  TextDataset data(o.data_path, o.model.seq_len);
  choose_blas_threads(world.local_size());

  Gpt model(config);
  model.init_parameters(o.seed);
  // Replicas start identical: rank 0's parameters everywhere (as PyTorch DDP does).
  world.broadcast(model.params(), model.num_params(), "initial parameters");
  std::vector<float> adam_m(model.num_params(), 0.0f), adam_v(model.num_params(), 0.0f);
  const std::vector<uint8_t> decay = model.decay_mask();

  if (o.explain) explain(placement, plugins, world, config);
  const bool leader = world.rank() == 0;
  const int local_rows = o.global_batch / data_degree;
  const double tokens_per_step = static_cast<double>(o.global_batch) * o.model.seq_len;
  if (leader) {
    std::printf("plexus-train: %d ranks, placement %s (D%d), model %d layers x %d dims x %d heads "
                "(%zu parameters), context %d, global batch %d (%d per rank), transport %s\n",
                world.size(), o.placement.c_str(), data_degree, config.n_layer, config.n_embd,
                config.n_head, model.num_params(), config.max_seq_len, o.global_batch, local_rows,
                world.transport_name());
    std::printf("plexus-train: data %s: %zu training and %zu validation bytes\n",
                o.data_path.c_str(), data.size(Split::kTrain), data.size(Split::kValidation));
    std::fflush(stdout);
  }
  std::unique_ptr<std::ofstream> metrics;
  if (leader && !o.metrics_path.empty()) {
    metrics = std::make_unique<std::ofstream>(o.metrics_path);
    if (!*metrics) throw UsageError("cannot write --metrics-file '" + o.metrics_path + "'");
  }

  AdamWConfig adam;
  adam.weight_decay = o.weight_decay;
  std::vector<int32_t> tokens, targets;
  const auto start = std::chrono::steady_clock::now();
  float last_val = NAN;
  int64_t step = 0;
  for (; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    data.train_batch(o.seed, step, d * local_rows, local_rows, tokens, targets);
    float local_loss = model.forward(tokens.data(), targets.data(), local_rows, o.model.seq_len);
    model.zero_grad();
    model.backward();
    plx_grad_view_t view = PLX_GRAD_VIEW_INIT;
    view.grads = model.grads();
    view.count = model.num_params();
    for (auto& p : plugins) {
      if (!p->library.api().after_backward) continue;
      char err[512] = {};
      plx_result_t r = p->library.api().after_backward(p->state, &view, err, sizeof(err));
      if (r != PLX_SUCCESS) throw CommFailure(r, err);
    }
    const float grad_norm = clip_grad_norm(model.grads(), model.num_params(), o.grad_clip);
    adam.lr = learning_rate(o, step);
    adamw_step(model.params(), model.grads(), adam_m.data(), adam_v.data(), model.num_params(),
               step + 1, adam, decay.data());
    const float loss = world.average(local_loss, "training loss");
    const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    const bool validate = o.val_every > 0 && ((step + 1) % o.val_every == 0 || step + 1 == o.steps);
    if (validate) last_val = validation_loss(model, data, o, world, d, local_rows);
    if (leader) {
      if ((step + 1) % o.log_every == 0 || step == 0 || validate || step + 1 == o.steps) {
        std::printf("step %5lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %7.0f tok/s | %.3f s "
                    "| elapsed %.1f s\n",
                    static_cast<long long>(step + 1), static_cast<long long>(o.steps), loss,
                    adam.lr, grad_norm, tokens_per_step / step_s, step_s, elapsed);
      }
      if (validate) std::printf("step %5lld | validation loss %.4f\n",
                                static_cast<long long>(step + 1), last_val);
      std::fflush(stdout);
      if (metrics) {
        nlohmann::json row = {{"step", step + 1}, {"loss", loss}, {"lr", adam.lr},
                              {"elapsed_s", elapsed}};
        if (validate) row["val_loss"] = last_val;
        *metrics << row.dump() << "\n" << std::flush;
      }
    }
    if (!o.checkpoint_path.empty() && o.save_every > 0 && (step + 1) % o.save_every == 0 &&
        leader) {
      save_checkpoint(o.checkpoint_path,
                      make_checkpoint(o, config, model, adam_m, adam_v, step + 1, last_val));
    }
    bool stop = (validate && o.target_val_loss > 0 && last_val < o.target_val_loss);
    if (o.time_limit_s > 0) stop = world.any(elapsed > o.time_limit_s, "time limit") || stop;
    if (stop) {
      ++step;
      if (leader) {
        std::printf("plexus-train: stopping after step %lld (%s)\n", static_cast<long long>(step),
                    validate && o.target_val_loss > 0 && last_val < o.target_val_loss
                        ? "validation loss reached the target"
                        : "time limit reached");
      }
      break;
    }
  }
  if (!o.checkpoint_path.empty() && leader) {
    save_checkpoint(o.checkpoint_path,
                    make_checkpoint(o, config, model, adam_m, adam_v, step, last_val));
    std::printf("plexus-train: saved checkpoint %s (step %lld)\n", o.checkpoint_path.c_str(),
                static_cast<long long>(step));
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

// Bad input (exit code 2): options, placement, plugins, data, or an argument the communicator
// refused. Anything else is a runtime failure (exit code 1).
bool is_bad_input(const std::exception& e) {
  if (const auto* comm = dynamic_cast<const CommFailure*>(&e)) {
    return comm->result() == PLX_ERROR_INVALID_ARGUMENT;
  }
  return dynamic_cast<const std::invalid_argument*>(&e) != nullptr ||  // UsageError, PlacementError
         dynamic_cast<const PluginError*>(&e) != nullptr ||
         dynamic_cast<const DataError*>(&e) != nullptr;
}

int run_training(const TrainOptions& options) {
  World world;
  int code = 0;
  try {
    world.init();
    code = train(options, world);
    std::fflush(stdout);
    return world.finish() ? code : 1;
  } catch (const std::exception& e) {
    code = is_bad_input(e) ? 2 : 1;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  }
  // A failed rank aborts its communicator, so peers blocked in a collective with it learn at
  // once (PLX_ERROR_REMOTE naming this rank) instead of waiting for a timeout.
  std::fflush(stdout);
  world.abort();
  return code;
}

}  // namespace plexus::engine
