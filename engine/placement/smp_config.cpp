#include "engine/placement/smp_config.h"

#include <algorithm>
#include <array>
#include <climits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace plexus::engine {

namespace {

using nlohmann::json;

// Every key understood, in the order of docs/placement.md's table.
constexpr std::array<const char*, 17> kKeys = {
    "partitions", "pipeline_parallel_degree", "tensor_parallel_degree", "ddp",
    "placement_strategy", "pipeline", "microbatches", "optimize", "shard_optimizer_state",
    "activation_checkpointing", "offload_activations", "activation_loading_horizon",
    "auto_partition", "default_partition", "delayed_parameter_initialization", "fp16", "bf16"};

constexpr int kMaxHorizon = 1024;  // the offload plugin's range for horizon=N

[[noreturn]] void fail(const std::string& key, const std::string& why) {
  throw SmpConfigError(fmt::format("key '{}': {}", key, why));
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    case json::value_t::number_float: return "a fractional number";
    default: return "a number";
  }
}

// The value as JSON text, short and with control characters escaped (dump() escapes them).
std::string shown(const json& v) {
  std::string text = v.dump(-1, ' ', true, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// A key SMP's parameters may hold but this translation does not know: refused, listing those
// it knows.
void refuse_if_unknown(const std::string& key) {
  if (std::find(kKeys.begin(), kKeys.end(), key) != kKeys.end()) return;
  std::string known;
  for (const char* k : kKeys) known += fmt::format("{}{}", known.empty() ? "" : ", ", k);
  const std::string hint =
      key == "parameters" || key == "enabled"
          ? "give the object under smp_options' \"parameters\", not smp_options itself; "
          : "";
  throw SmpConfigError(fmt::format("unknown key {}; {}the keys understood are {}",
                                   json(key).dump(-1, ' ', true, json::error_handler_t::replace),
                                   hint, known));
}

// Parses the text into an object of scalars: the top level must be an object, each key known
// and given at most once, and no value an object or an array (nothing in SMP's parameters is).
json parse_object(const std::string& text) {
  std::set<std::string> seen;
  std::string last_key;
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (depth == 0 && event == E::array_start) {
      throw SmpConfigError("expected a JSON object of SMP parameters, got an array");
    }
    if (depth == 1 && event == E::key) {
      last_key = parsed.get<std::string>();
      refuse_if_unknown(last_key);
      if (!seen.insert(last_key).second) fail(last_key, "given twice");
    }
    if (depth == 1 && (event == E::object_start || event == E::array_start)) {
      fail(last_key, fmt::format("expected a number, string or boolean, got {}",
                                 event == E::object_start ? "an object" : "an array"));
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text, check);
  } catch (const json::parse_error& e) {
    std::string what = e.what();  // "[json.exception.parse_error.101] parse error at line ..."
    if (const size_t close = what.find("] "); close != std::string::npos) {
      what = what.substr(close + 2);
    }
    throw SmpConfigError(fmt::format("malformed JSON (byte {}): {}", e.byte, what));
  }
  if (!root.is_object()) {
    throw SmpConfigError(fmt::format("expected a JSON object of SMP parameters, got {}",
                                     type_name(root)));
  }
  return root;
}

// Typed reads of one key; each names the key, the expected type and what it got.
class Keys {
 public:
  explicit Keys(const json& root) : root_(root) {}

  bool has(const char* key) const { return root_.contains(key); }

  std::optional<bool> boolean(const char* key) const {
    if (!has(key)) return std::nullopt;
    const json& v = root_.at(key);
    if (!v.is_boolean()) wrong(key, v, "a boolean (true or false)");
    return v.get<bool>();
  }

  std::optional<int> integer(const char* key, int lo, int hi) const {
    if (!has(key)) return std::nullopt;
    const json& v = root_.at(key);
    if (!v.is_number_integer()) wrong(key, v, "an integer");
    const bool in_range =
        v.is_number_unsigned()
            ? v.get<uint64_t>() >= static_cast<uint64_t>(lo) &&
                  v.get<uint64_t>() <= static_cast<uint64_t>(hi)
            : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
    if (!in_range) {
      fail(key, fmt::format("{} is not in {}..{}", shown(v), lo, hi));
    }
    return static_cast<int>(v.get<int64_t>());
  }

  std::optional<std::string> one_of(const char* key, std::initializer_list<const char*> allowed,
                                    const char* more = nullptr) const {
    if (!has(key)) return std::nullopt;
    const json& v = root_.at(key);
    std::string list;
    for (const char* a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
    if (more != nullptr) list += fmt::format(", {}", more);
    if (!v.is_string()) wrong(key, v, fmt::format("a string ({})", list).c_str());
    return v.get<std::string>();
  }

 private:
  [[noreturn]] static void wrong(const char* key, const json& v, const char* expected) {
    fail(key, fmt::format("expected {}, got {} ({})", expected, shown(v), type_name(v)));
  }

  const json& root_;
};

// "DPT", "TPD" or a permutation of D, P and T.
std::string axis_order(const std::string& strategy) {
  if (strategy == "cluster") return "DPT";
  if (strategy == "spread") return "TPD";
  std::string sorted = strategy;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != "DPT") {
    fail("placement_strategy",
         fmt::format("{} is not \"cluster\", \"spread\" or an order of the letters D, P and T "
                     "(e.g. \"DPT\", \"TPD\")",
                     shown(json(strategy))));
  }
  return strategy;
}

}  // namespace

SmpTranslation translate_smp_config(const std::string& json_text, const SmpJob& job) {
  const json root = parse_object(json_text);
  const Keys keys(root);
  SmpTranslation out;
  std::vector<std::string> steps;  // the explanation, key by key
  auto notice = [&](const char* key, const std::string& why) {
    out.notices.push_back(fmt::format("key '{}' has no effect here: {}", key, why));
  };

  // Degrees: P from partitions (SMP's TensorFlow name) or pipeline_parallel_degree (PyTorch).
  const auto partitions = keys.integer("partitions", 1, INT_MAX);
  const auto pp_degree = keys.integer("pipeline_parallel_degree", 1, INT_MAX);
  if (partitions && pp_degree) {
    fail("partitions", "give it or 'pipeline_parallel_degree', not both (both are SMP's "
                       "pipeline degree)");
  }
  if (!partitions && !pp_degree) {
    fail("partitions", "missing; SMP requires it (the pipeline degree; "
                       "'pipeline_parallel_degree' in SMP's PyTorch naming)");
  }
  const char* p_key = partitions ? "partitions" : "pipeline_parallel_degree";
  const int P = partitions ? *partitions : *pp_degree;
  const int T = keys.integer("tensor_parallel_degree", 1, INT_MAX).value_or(1);
  const bool ddp = keys.boolean("ddp").value_or(false);  // SMP's default
  if (P > job.n_layer) {
    fail(p_key, fmt::format("{} pipeline stages need at least as many transformer blocks "
                            "(--n-layer {})",
                            P, job.n_layer));
  }
  if (T > 1) {
    if (job.n_head % T != 0) {
      fail("tensor_parallel_degree",
           fmt::format("{} does not divide the attention heads (--n-head {})", T, job.n_head));
    }
    if (!ddp) fail("ddp", "SMP requires true when tensor_parallel_degree is above 1");
  }
  const int64_t model_ranks = static_cast<int64_t>(P) * T;
  if (job.world_size % model_ranks != 0) {
    fail(p_key, fmt::format("{} x tensor_parallel_degree {} = {} ranks per model replica do not "
                            "divide the world size {}",
                            P, T, model_ranks, job.world_size));
  }
  const int D = static_cast<int>(job.world_size / model_ranks);
  if (D > 1 && !ddp) {
    fail("ddp", fmt::format("false (SMP's default), but the world size {} leaves {} model "
                            "replicas of {} x {} ranks; set \"ddp\": true for data parallelism",
                            job.world_size, D, P, T));
  }
  steps.push_back(fmt::format("{} {} -> P{}", p_key, P, P));
  if (keys.has("tensor_parallel_degree")) {
    steps.push_back(fmt::format("tensor_parallel_degree {} -> T{}", T, T));
  }
  steps.push_back(fmt::format("ddp {} -> D{} (world size {} / {} ranks per replica)",
                              ddp ? "true" : "false", D, job.world_size, model_ranks));

  const std::string strategy =
      keys.one_of("placement_strategy", {"cluster", "spread"}, "or an order of D, P and T")
          .value_or("cluster");  // SMP's default
  const std::string order = axis_order(strategy);
  std::string layout;
  for (char letter : order) {
    const int degree = letter == 'D' ? D : letter == 'P' ? P : T;
    if (degree > 1) layout += fmt::format("{}{}", letter, degree);
  }
  if (layout.empty()) layout = "D1";
  steps.push_back(fmt::format("placement_strategy \"{}\" -> axis order {}", strategy, order));

  if (const auto pipeline = keys.one_of("pipeline", {"interleaved", "simple"})) {
    if (*pipeline == "interleaved") {
      out.pipeline_schedule = "1f1b";  // SMP's interleaved is one forward, one backward
    } else if (*pipeline == "simple") {
      out.pipeline_schedule = "simple";  // GPipe
    } else {
      fail("pipeline", fmt::format("{} is not \"interleaved\" or \"simple\"",
                                   shown(json(*pipeline))));
    }
    steps.push_back(fmt::format("pipeline \"{}\" -> --pipeline-schedule {}", *pipeline,
                                *out.pipeline_schedule));
  }
  if (const auto m = keys.integer("microbatches", 1, INT_MAX)) {
    if (job.global_batch % D != 0 || (job.global_batch / D) % *m != 0) {
      fail("microbatches",
           fmt::format("{} does not split the batch (--batch-size {} over {} data-parallel "
                       "ranks) into equal microbatches",
                       *m, job.global_batch, D));
    }
    out.microbatches = *m;
    steps.push_back(fmt::format("microbatches {} -> --microbatches {}", *m, *m));
  }
  if (const auto optimize = keys.one_of("optimize", {"speed", "memory"})) {
    if (*optimize != "speed" && *optimize != "memory") {
      fail("optimize", fmt::format("{} is not \"speed\" or \"memory\"", shown(json(*optimize))));
    }
    out.optimize = *optimize;
    steps.push_back(fmt::format("optimize \"{}\" -> planner objective {} (--placement auto "
                                "only)",
                                *optimize, *optimize));
    out.notices.push_back(fmt::format(
        "key 'optimize' (\"{}\") only affects --placement auto, where it ranks the plans; the "
        "configuration's placement is fixed, so it changes nothing in this run",
        *optimize));
  }

  // Memory plugins, in the order the engine applies them.
  std::string plugins;
  if (keys.boolean("shard_optimizer_state").value_or(false)) {
    plugins += "+zero1";
    steps.push_back("shard_optimizer_state true -> +zero1");
  }
  const bool checkpointing = keys.boolean("activation_checkpointing").value_or(false);
  if (checkpointing) {
    plugins += "+ckpt";
    steps.push_back("activation_checkpointing true -> +ckpt");
  }
  const bool offload = keys.boolean("offload_activations").value_or(false);
  const auto horizon = keys.integer("activation_loading_horizon", 1, kMaxHorizon);
  if (offload) {
    if (!checkpointing) {
      fail("offload_activations", "true needs \"activation_checkpointing\": true (only "
                                  "checkpointed activations are offloaded)");
    }
    plugins += horizon ? fmt::format("+offload(activations,horizon={})", *horizon)
                       : "+offload(activations)";
    steps.push_back(horizon ? fmt::format("offload_activations true, activation_loading_horizon "
                                          "{} -> +offload(activations,horizon={})",
                                          *horizon, *horizon)
                            : "offload_activations true -> +offload(activations)");
  } else if (horizon) {
    notice("activation_loading_horizon",
           "it only times the loading of offloaded activations, and offload_activations is "
           "not true");
  }

  if (!keys.boolean("auto_partition").value_or(true)) {
    fail("auto_partition", "false needs a manual partition (smp.partition), which Plexus does "
                           "not have; leave it true: Plexus always cuts the blocks into "
                           "cost-balanced pipeline stages");
  }
  if (const auto dp = keys.integer("default_partition", 0, INT_MAX)) {
    if (*dp >= P) {
      fail("default_partition", fmt::format("{} is not a partition of {} {} (0..{})", *dp,
                                            p_key, P, P - 1));
    }
    notice("default_partition", "it places modules outside smp.partition contexts when "
                                "auto_partition is false; Plexus always partitions automatically");
  }
  if (keys.boolean("delayed_parameter_initialization")) {
    notice("delayed_parameter_initialization",
           "each rank already builds only its stage, tensor slice and ZeRO share of the model, "
           "and ZeRO-3 initialises it unit by unit, so no rank ever holds the whole model");
  }
  const bool fp16 = keys.boolean("fp16").value_or(false);
  const auto bf16 = keys.boolean("bf16");
  if (fp16) {
    fail("fp16", "Plexus has no fp16 training path; use \"bf16\": true (bf16 autocast: "
                 "--device cuda, or a CPU with AVX512-BF16) or leave it out for fp32");
  }
  if (bf16) {
    out.autocast = *bf16 ? Autocast::kBf16 : Autocast::kNone;
    steps.push_back(fmt::format("bf16 {} -> --autocast {}", *bf16 ? "true" : "false",
                                autocast_name(*out.autocast)));
  }

  out.placement = layout + plugins;
  std::string summary = fmt::format("placement \"{}\"", out.placement);
  if (out.microbatches) summary += fmt::format(" --microbatches {}", *out.microbatches);
  if (out.pipeline_schedule) summary += " --pipeline-schedule " + *out.pipeline_schedule;
  if (out.autocast) summary += fmt::format(" --autocast {}", autocast_name(*out.autocast));
  std::string joined;
  for (const std::string& s : steps) joined += s + "; ";
  out.explanation = "smp-config: " + joined + "=> " + summary;
  return out;
}

void apply_smp_translation(const SmpTranslation& translation, const SmpCommandLine& given,
                           TrainOptions* o) {
  if (given.placement) {
    throw SmpConfigError(fmt::format("--placement '{}' and --smp-config both give the placement "
                                     "(the configuration's is '{}'); use one of them",
                                     o->placement, translation.placement));
  }
  if (given.pipeline_degree) {
    throw SmpConfigError("--pipeline-degree and --smp-config key 'partitions' both give the "
                         "pipeline degree; use one of them");
  }
  if (given.tensor_degree) {
    throw SmpConfigError("--tensor-degree and --smp-config key 'tensor_parallel_degree' both "
                         "give the tensor degree; use one of them");
  }
  if (translation.microbatches && given.microbatches &&
      *translation.microbatches != o->microbatches) {
    throw SmpConfigError(fmt::format("--microbatches {} and --smp-config key 'microbatches' {} "
                                     "disagree",
                                     o->microbatches, *translation.microbatches));
  }
  if (translation.pipeline_schedule && given.pipeline_schedule &&
      *translation.pipeline_schedule != o->pipeline_schedule) {
    throw SmpConfigError(fmt::format("--pipeline-schedule {} and --smp-config key 'pipeline' "
                                     "(schedule {}) disagree",
                                     o->pipeline_schedule, *translation.pipeline_schedule));
  }
  if (translation.autocast && given.autocast && *translation.autocast != o->autocast) {
    throw SmpConfigError(fmt::format("--autocast {} and --smp-config key 'bf16' (autocast {}) "
                                     "disagree",
                                     autocast_name(o->autocast),
                                     autocast_name(*translation.autocast)));
  }
  o->placement = translation.placement;
  if (translation.microbatches) o->microbatches = *translation.microbatches;
  if (translation.pipeline_schedule) o->pipeline_schedule = *translation.pipeline_schedule;
  if (translation.autocast) o->autocast = *translation.autocast;
  if (translation.optimize) o->optimize = *translation.optimize;
}

}  // namespace plexus::engine
