// smp_config.h - a SageMaker model parallel (SMP v1) configuration, the "parameters" of
// smp_options, translated into a placement string and plexus-train options
// (plexus-train --smp-config; the mapping table is in docs/placement.md, "SMP configuration").
//
//   {"microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
//    "optimize": "speed", "partitions": 4, "ddp": true}          on 4 ranks
//   -> placement "P4", --microbatches 4, --pipeline-schedule 1f1b, optimize "speed"
//
// The degrees follow SMP: partitions (or pipeline_parallel_degree) is P, tensor_parallel_degree
// is T, and D is what remains of the world size (which needs ddp true). placement_strategy
// orders the axes (cluster = DPT, spread = TPD, or any order of the three letters); axes of
// degree 1 are left out of the string. Keys SMP has but Plexus gives no meaning produce a
// notice; anything that cannot apply is an SmpConfigError naming the key.
//
// Pure functions: no I/O, no global state; safe from any thread.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/config/options.h"
#include "engine/device/compute.h"

namespace plexus::engine {

// Bad input (exit code 2): what() names the key (or the command-line option) and the rule.
class SmpConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What the configuration is checked against: the job's world size and the options it does not
// set itself.
struct SmpJob {
  int world_size = 1;
  int n_layer = 1;
  int n_head = 1;
  int global_batch = 1;
  ComputeDevice device = ComputeDevice::kCpu;
};

struct SmpTranslation {
  std::string placement;                     // e.g. "P4", "D2T2+zero1+ckpt"
  std::optional<int> microbatches;           // set only by the keys present
  std::optional<std::string> pipeline_schedule;
  std::optional<Autocast> autocast;
  std::optional<std::string> optimize;       // TrainOptions::optimize
  std::vector<std::string> notices;          // "key 'X': ..." for keys with no meaning here
  std::string explanation;                   // "smp-config: partitions 4 -> P4; ...", one line
};

// Parses json_text (a JSON object of SMP parameters) and translates it for `job`. Throws
// SmpConfigError: malformed JSON (with its line, column and byte), a key given twice, an unknown
// key, a wrong JSON type, or a value that cannot apply to the job.
SmpTranslation translate_smp_config(const std::string& json_text, const SmpJob& job);

// The options given on the command line, which the configuration must not contradict.
struct SmpCommandLine {
  bool placement = false;
  bool pipeline_degree = false;
  bool tensor_degree = false;
  bool microbatches = false;
  bool pipeline_schedule = false;
  bool autocast = false;
};

// Writes the translation into *o. Throws SmpConfigError naming both sides where an option
// given on the command line sets what the configuration sets (--placement, --pipeline-degree,
// --tensor-degree) or sets it to another value (--microbatches, --pipeline-schedule, --autocast).
void apply_smp_translation(const SmpTranslation& translation, const SmpCommandLine& given,
                           TrainOptions* o);

}  // namespace plexus::engine
