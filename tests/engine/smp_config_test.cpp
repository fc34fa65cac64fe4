// Unit tests of engine/placement/smp_config.h and smp_config_source.h: SMP configurations
// translated into placement strings and options as docs/placement.md's "SMP configuration"
// table says, and every rule that refuses one naming the key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "engine/placement/placement.h"
#include "engine/placement/smp_config.h"
#include "engine/placement/smp_config_source.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

SmpJob job(int world_size, ComputeDevice device = ComputeDevice::kCpu) {
  SmpJob j;
  j.world_size = world_size;
  j.n_layer = 4;
  j.n_head = 4;
  j.global_batch = 8;
  j.device = device;
  return j;
}

// The placement string the configuration translates to on world_size CPU ranks.
std::string placement_of(const std::string& text, int world_size) {
  return translate_smp_config(text, job(world_size)).placement;
}

// The SmpConfigError's message, or "" when the translation succeeds.
std::string error_of(const std::string& text, const SmpJob& j) {
  try {
    translate_smp_config(text, j);
  } catch (const SmpConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(SmpConfig, SeedConfigurationIsAFourStagePipeline) {
  const SmpTranslation t = translate_smp_config(
      R"({ "microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
           "optimize": "speed", "partitions": 4, "ddp": true })",
      job(4));
  EXPECT_EQ(t.placement, "P4");
  EXPECT_EQ(t.microbatches, 4);
  EXPECT_EQ(t.pipeline_schedule, "1f1b");
  EXPECT_EQ(t.optimize, "speed");
  EXPECT_FALSE(t.autocast.has_value());
  ASSERT_EQ(t.notices.size(), 1u);
  EXPECT_THAT(t.notices[0], HasSubstr("'optimize'"));
  EXPECT_THAT(t.notices[0], HasSubstr("--placement auto"));
  EXPECT_THAT(t.explanation, HasSubstr("smp-config: partitions 4 -> P4; "));
  EXPECT_THAT(t.explanation,
              HasSubstr("=> placement \"P4\" --microbatches 4 --pipeline-schedule 1f1b"));
  // The string parses and resolves to the world size.
  Placement p = parse_placement(t.placement);
  resolve_placement(p, 4, 0, 0);
  EXPECT_EQ(p.degree('P'), 4);
}

TEST(SmpConfig, DataDegreeIsWhatRemainsInTheStrategysOrder) {
  const std::string base = R"("partitions": 2, "tensor_parallel_degree": 2, "ddp": true)";
  EXPECT_EQ(placement_of("{" + base + "}", 8), "D2P2T2");  // cluster
  EXPECT_EQ(placement_of("{" + base + R"(, "placement_strategy": "cluster"})", 8), "D2P2T2");
  EXPECT_EQ(placement_of("{" + base + R"(, "placement_strategy": "spread"})", 8), "T2P2D2");
  EXPECT_EQ(placement_of("{" + base + R"(, "placement_strategy": "PDT"})", 8), "P2D2T2");
  // Axes of degree 1 are left out; nothing but one rank is D1.
  EXPECT_EQ(placement_of(R"({"partitions": 1, "ddp": true})", 4), "D4");
  EXPECT_EQ(placement_of(R"({"partitions": 1})", 1), "D1");
  EXPECT_EQ(placement_of(R"({"pipeline_parallel_degree": 2, "ddp": true})", 4), "D2P2");
}

TEST(SmpConfig, MemoryKeysBecomePlugins) {
  EXPECT_EQ(placement_of(R"({"partitions": 1, "ddp": true, "shard_optimizer_state": true})", 2),
            "D2+zero1");
  EXPECT_EQ(placement_of(R"({"partitions": 2, "ddp": true, "activation_checkpointing": true,
                             "offload_activations": true})", 4),
            "D2P2+ckpt+offload(activations)");
  EXPECT_EQ(placement_of(R"({"partitions": 1, "ddp": true, "shard_optimizer_state": true,
                             "activation_checkpointing": true, "offload_activations": true,
                             "activation_loading_horizon": 2})", 2),
            "D2+zero1+ckpt+offload(activations,horizon=2)");
  // Keys at their "off" values add nothing.
  EXPECT_EQ(placement_of(R"({"partitions": 1, "ddp": true, "shard_optimizer_state": false,
                             "activation_checkpointing": false, "offload_activations": false,
                             "auto_partition": true, "fp16": false})", 2),
            "D2");
}

TEST(SmpConfig, PipelineSchedulesAndPrecision) {
  EXPECT_EQ(translate_smp_config(R"({"partitions": 2, "pipeline": "simple"})", job(2))
                .pipeline_schedule,
            "simple");
  EXPECT_FALSE(translate_smp_config(R"({"partitions": 2})", job(2)).pipeline_schedule);
  EXPECT_EQ(translate_smp_config(R"({"partitions": 1, "bf16": true})",
                                 job(1, ComputeDevice::kCuda))
                .autocast,
            Autocast::kBf16);
  EXPECT_EQ(translate_smp_config(R"({"partitions": 1, "bf16": false})", job(1)).autocast,
            Autocast::kNone);
  // on cpu too: plexus-train then refuses it on a processor without AVX512-BF16
  EXPECT_EQ(translate_smp_config(R"({"partitions": 1, "bf16": true})", job(1)).autocast,
            Autocast::kBf16);
}

TEST(SmpConfig, KeysWithoutMeaningAreNoticedOnce) {
  const SmpTranslation t = translate_smp_config(
      R"({"partitions": 2, "default_partition": 1, "delayed_parameter_initialization": true,
          "activation_loading_horizon": 3})",
      job(2));
  EXPECT_EQ(t.placement, "P2");
  ASSERT_EQ(t.notices.size(), 3u);
  EXPECT_THAT(t.notices[0], HasSubstr("key 'activation_loading_horizon' has no effect here"));
  EXPECT_THAT(t.notices[1], HasSubstr("key 'default_partition' has no effect here"));
  EXPECT_THAT(t.notices[2], HasSubstr("key 'delayed_parameter_initialization' has no effect"));
  EXPECT_THAT(translate_smp_config(R"({"partitions": 2})", job(2)).notices, IsEmpty());
}

// Each rule: the message names the key.
struct Bad {
  const char* name;
  const char* json;
  int world_size;
  const char* expected;  // in the message
};

class SmpConfigRefuses : public ::testing::TestWithParam<Bad> {};

TEST_P(SmpConfigRefuses, NamingTheKey) {
  const Bad& b = GetParam();
  EXPECT_THAT(error_of(b.json, job(b.world_size)), HasSubstr(b.expected)) << b.json;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, SmpConfigRefuses,
    ::testing::Values(
        Bad{"MissingPartitions", R"({"ddp": true})", 2, "key 'partitions': missing"},
        Bad{"BothPipelineNames", R"({"partitions": 2, "pipeline_parallel_degree": 2})", 2,
            "key 'partitions': give it or 'pipeline_parallel_degree'"},
        Bad{"PartitionsNotDividing", R"({"partitions": 3, "ddp": true})", 4,
            "key 'partitions': 3 x tensor_parallel_degree 1 = 3 ranks per model replica do not "
            "divide the world size 4"},
        Bad{"PartitionsZero", R"({"partitions": 0})", 1, "key 'partitions': 0 is not in 1.."},
        Bad{"PartitionsNegative", R"({"partitions": -2})", 1, "key 'partitions': -2 is not in"},
        Bad{"PartitionsHuge", R"({"partitions": 99999999999})", 1,
            "key 'partitions': 99999999999 is not in"},
        Bad{"PartitionsAboveLayers", R"({"partitions": 8})", 8,
            "key 'partitions': 8 pipeline stages need at least as many transformer blocks"},
        Bad{"PartitionsString", R"({"partitions": "4"})", 4,
            "key 'partitions': expected an integer, got \"4\" (a string)"},
        Bad{"PartitionsFraction", R"({"partitions": 2.5})", 4,
            "key 'partitions': expected an integer, got 2.5 (a fractional number)"},
        Bad{"DdpFalseWithReplicas", R"({"partitions": 2})", 4, "key 'ddp': false"},
        Bad{"DdpNotBoolean", R"({"partitions": 2, "ddp": 1})", 4,
            "key 'ddp': expected a boolean"},
        Bad{"TensorNotDividingHeads", R"({"partitions": 1, "tensor_parallel_degree": 3,
                                          "ddp": true})",
            3, "key 'tensor_parallel_degree': 3 does not divide the attention heads (--n-head 4)"},
        Bad{"TensorWithoutDdp", R"({"partitions": 1, "tensor_parallel_degree": 2})", 2,
            "key 'ddp': SMP requires true when tensor_parallel_degree is above 1"},
        Bad{"TensorNotDividingWorld", R"({"partitions": 2, "tensor_parallel_degree": 2,
                                          "ddp": true})",
            6, "do not divide the world size 6"},
        Bad{"StrategyUnknown", R"({"partitions": 1, "placement_strategy": "DPP"})", 1,
            "key 'placement_strategy': \"DPP\" is not"},
        Bad{"StrategyNotString", R"({"partitions": 1, "placement_strategy": 3})", 1,
            "key 'placement_strategy': expected a string"},
        Bad{"PipelineUnknown", R"({"partitions": 1, "pipeline": "1f1b"})", 1,
            "key 'pipeline': \"1f1b\" is not \"interleaved\" or \"simple\""},
        Bad{"MicrobatchesZero", R"({"partitions": 1, "microbatches": 0})", 1,
            "key 'microbatches': 0 is not in 1.."},
        Bad{"MicrobatchesNotSplitting", R"({"partitions": 1, "microbatches": 3})", 1,
            "key 'microbatches': 3 does not split the batch (--batch-size 8"},
        Bad{"MicrobatchesAfterData", R"({"partitions": 1, "microbatches": 8, "ddp": true})", 2,
            "key 'microbatches': 8 does not split the batch (--batch-size 8 over 2"},
        Bad{"OptimizeUnknown", R"({"partitions": 1, "optimize": "fast"})", 1,
            "key 'optimize': \"fast\" is not \"speed\" or \"memory\""},
        Bad{"OffloadWithoutCheckpointing", R"({"partitions": 1, "offload_activations": true})",
            1, "key 'offload_activations': true needs \"activation_checkpointing\": true"},
        Bad{"HorizonZero", R"({"partitions": 1, "activation_checkpointing": true,
                               "offload_activations": true, "activation_loading_horizon": 0})",
            1, "key 'activation_loading_horizon': 0 is not in 1..1024"},
        Bad{"ShardNotBoolean", R"({"partitions": 1, "shard_optimizer_state": "yes"})", 1,
            "key 'shard_optimizer_state': expected a boolean"},
        Bad{"ManualPartition", R"({"partitions": 1, "auto_partition": false})", 1,
            "key 'auto_partition': false needs a manual partition"},
        Bad{"DefaultPartitionOutside", R"({"partitions": 2, "default_partition": 2})", 2,
            "key 'default_partition': 2 is not a partition of partitions 2 (0..1)"},
        Bad{"DelayedNotBoolean", R"({"partitions": 1, "delayed_parameter_initialization": 0})",
            1, "key 'delayed_parameter_initialization': expected a boolean"},
        Bad{"Fp16", R"({"partitions": 1, "fp16": true})", 1,
            "key 'fp16': Plexus has no fp16 training path"},
        Bad{"UnknownKey", R"({"partitions": 1, "memory_weight": 0.2})", 1,
            "unknown key \"memory_weight\"; the keys understood are partitions,"},
        Bad{"WholeSmpOptions", R"({"enabled": true, "parameters": {"partitions": 1}})", 1,
            "unknown key \"enabled\"; give the object under smp_options' \"parameters\""},
        Bad{"NestedValue", R"({"partitions": {"value": 2}})", 1,
            "key 'partitions': expected a number, string or boolean, got an object"},
        Bad{"ArrayValue", R"({"partitions": 1, "microbatches": [1]})", 1,
            "key 'microbatches': expected a number, string or boolean, got an array"},
        Bad{"KeyTwice", R"({"partitions": 1, "partitions": 2})", 2,
            "key 'partitions': given twice"},
        Bad{"TopLevelArray", R"([1, 2])", 1, "expected a JSON object of SMP parameters"},
        Bad{"TopLevelNumber", "4", 1, "expected a JSON object of SMP parameters, got a number"},
        Bad{"Malformed", R"({"partitions": 1,})", 1,
            "malformed JSON (byte 18): parse error at line 1, column 18"},
        Bad{"Empty", "", 1, "malformed JSON (byte 1)"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SmpConfig, DeepNestingIsRefusedAtTheFirstLevel) {
  const std::string deep = "{\"partitions\": " + std::string(100000, '[') + "}";
  EXPECT_THAT(error_of(deep, job(1)), HasSubstr("key 'partitions': expected a number"));
}

TEST(SmpConfig, CommandLineMustNotContradictTheConfiguration) {
  const SmpTranslation t = translate_smp_config(
      R"({"partitions": 2, "microbatches": 2, "pipeline": "simple", "ddp": true})", job(4));
  auto error_with = [&](SmpCommandLine given, TrainOptions o) {
    try {
      apply_smp_translation(t, given, &o);
    } catch (const SmpConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TrainOptions o;
  SmpCommandLine given;
  given.placement = true;
  o.placement = "D4";
  EXPECT_THAT(error_with(given, o),
              HasSubstr("--placement 'D4' and --smp-config both give the placement"));
  given = {};
  given.pipeline_degree = true;
  EXPECT_THAT(error_with(given, TrainOptions{}),
              HasSubstr("--pipeline-degree and --smp-config key 'partitions'"));
  given = {};
  given.tensor_degree = true;
  EXPECT_THAT(error_with(given, TrainOptions{}),
              HasSubstr("--tensor-degree and --smp-config key 'tensor_parallel_degree'"));
  given = {};
  given.microbatches = true;
  o = {};
  o.microbatches = 4;
  EXPECT_THAT(error_with(given, o),
              HasSubstr("--microbatches 4 and --smp-config key 'microbatches' 2 disagree"));
  o.microbatches = 2;  // the same value: no conflict
  EXPECT_EQ(error_with(given, o), "");
  given = {};
  given.pipeline_schedule = true;
  o = {};
  o.pipeline_schedule = "1f1b";
  EXPECT_THAT(error_with(given, o),
              HasSubstr("--pipeline-schedule 1f1b and --smp-config key 'pipeline'"));

  // Applied: the placement and every option the configuration names.
  TrainOptions applied;
  apply_smp_translation(t, SmpCommandLine{}, &applied);
  EXPECT_EQ(applied.placement, "D2P2");
  EXPECT_EQ(applied.microbatches, 2);
  EXPECT_EQ(applied.pipeline_schedule, "simple");
  EXPECT_EQ(applied.autocast, Autocast::kNone);
}

TEST(SmpConfig, AutocastConflictNamesBf16) {
  const SmpTranslation t = translate_smp_config(R"({"partitions": 1, "bf16": false})", job(1));
  TrainOptions o;
  o.autocast = Autocast::kBf16;
  SmpCommandLine given;
  given.autocast = true;
  EXPECT_THROW(
      {
        try {
          apply_smp_translation(t, given, &o);
        } catch (const SmpConfigError& e) {
          EXPECT_THAT(e.what(), HasSubstr("--autocast bf16 and --smp-config key 'bf16'"));
          throw;
        }
      },
      SmpConfigError);
}

// ---- the source: inline JSON or a hostile file ----------------------------------------------

class SmpConfigSource : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()) << "mkdtemp failed"; }
  std::string error_of_source(const std::string& argument) {
    std::string label;
    try {
      read_smp_config_source(argument, &label);
    } catch (const SmpConfigError& e) {
      return e.what();
    }
    return "";
  }
  test::TempDir dir_{"plexus-smp-source"};
};

TEST_F(SmpConfigSource, InlineAndFile) {
  std::string label;
  EXPECT_EQ(read_smp_config_source(R"({"partitions": 1})", &label), R"({"partitions": 1})");
  EXPECT_EQ(label, "(inline JSON)");
  const std::string path = dir_.path() + "/smp.json";
  std::ofstream(path) << R"({"partitions": 2})";
  EXPECT_EQ(read_smp_config_source(path, &label), R"({"partitions": 2})");
  EXPECT_EQ(label, "\"" + path + "\"");
}

TEST_F(SmpConfigSource, RefusesWhatIsNotASmallRegularFile) {
  EXPECT_THAT(error_of_source(dir_.path() + "/missing.json"),
              HasSubstr("cannot open: No such file or directory"));
  EXPECT_THAT(error_of_source(dir_.path()), HasSubstr("is a folder"));
  const std::string fifo = dir_.path() + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(error_of_source(fifo), HasSubstr("is not a regular file"));
  EXPECT_THAT(error_of_source("/dev/zero"), HasSubstr("is not a regular file"));
  const std::string big = dir_.path() + "/big.json";
  std::ofstream(big) << std::string(kMaxSmpConfigBytes + 1, ' ');
  EXPECT_THAT(error_of_source(big), HasSubstr("1048577 bytes is over the limit of 1048576"));
  EXPECT_THAT(error_of_source("{" + std::string(kMaxSmpConfigBytes, ' ')),
              HasSubstr("inline JSON of 1048577 bytes is over the limit"));
  EXPECT_THAT(error_of_source(""), HasSubstr("expected a file name or inline JSON"));
}

}  // namespace
}  // namespace plexus::engine
