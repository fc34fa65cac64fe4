// End-to-end: plexus-train --smp-config under plexus-run. Each SageMaker model parallel
// configuration (the seed of issue 18 and five more: tensor parallelism, optimizer sharding,
// activation checkpointing, offloading, an explicit axis order) trains with exactly the losses
// of its hand-written placement and options (docs/placement.md, "SMP configuration"): the same
// printed loss lines and the same --metrics-file numbers, bit for bit. And a configuration that
// cannot apply exits 2 naming the key, from every rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/metrics_losses.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;

class SmpConfigTrain : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { corpus_.make("plexus_smp_config"); }
  static void TearDownTestSuite() { corpus_.remove(); }

  static std::string metrics(const std::string& name) { return corpus_.path(name + ".jsonl"); }

  // A tiny model (4 blocks x 32 dims x 2 heads, context 16, global batch 8), 4 steps.
  static ProcessResult run(const std::string& name, int ranks,
                           const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {
        PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--", PLEXUS_TRAIN_PATH, "--data",
        corpus_.data(), "--n-layer", "4", "--n-head", "2", "--n-embd", "32", "--seq-len", "16",
        "--batch-size", "8", "--steps", "4", "--lr", "1e-3", "--warmup-steps", "2",
        "--val-every", "0", "--log-every", "1", "--checkpoint", "",
        "--metrics-file", metrics(name)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, 300);
  }

  static std::vector<double> losses(const std::string& name) {
    return metrics_losses(metrics(name));
  }

  // The "loss X" fields of rank 0's step lines, as printed.
  static std::vector<std::string> printed_losses(const std::string& out) {
    std::vector<std::string> found;
    for (const std::string& line : split_lines(out)) {
      if (line.rfind("[0] step ", 0) != 0) continue;
      const size_t at = line.find("| loss ");
      if (at != std::string::npos) found.push_back(line.substr(at, line.find(" |", at + 2) - at));
    }
    return found;
  }

  static inline CorpusFolder corpus_;
};

struct Pair {
  std::string name;
  int ranks;
  std::string smp;                     // the configuration (inline JSON)
  std::string placement;               // what --explain must name
  std::vector<std::string> by_hand;    // the same job written as placement and options
  friend void PrintTo(const Pair& p, std::ostream* os) { *os << p.name; }
};

class SmpConfigPairs : public SmpConfigTrain, public ::testing::WithParamInterface<Pair> {};

TEST_P(SmpConfigPairs, LossesEqualTheHandWrittenPlacement) {
  const Pair& p = GetParam();
  const ProcessResult smp = run(p.name + "_smp", p.ranks, {"--smp-config", p.smp, "--explain"});
  ASSERT_EQ(smp.exit_code, 0) << smp.out << smp.err;
  const ProcessResult hand = run(p.name + "_hand", p.ranks, p.by_hand);
  ASSERT_EQ(hand.exit_code, 0) << hand.out << hand.err;

  // --explain: the translation, from rank 0 only, before the per-rank lines.
  const size_t translation = smp.out.find("[0] smp-config: ");
  ASSERT_NE(translation, std::string::npos) << smp.out;
  EXPECT_THAT(smp.out, HasSubstr("=> placement \"" + p.placement + "\""));
  EXPECT_LT(translation, smp.out.find("explain: rank 0 of"));
  EXPECT_EQ(smp.out.find("] smp-config: ", translation + 3), std::string::npos) << "twice";
  EXPECT_THAT(smp.out, HasSubstr("placement " + p.placement + " ("));

  const std::vector<std::string> a = printed_losses(smp.out), b = printed_losses(hand.out);
  ASSERT_EQ(a.size(), 4u) << smp.out;
  EXPECT_EQ(a, b);
  const std::vector<double> x = losses(p.name + "_smp"), y = losses(p.name + "_hand");
  ASSERT_EQ(x.size(), 4u);
  EXPECT_EQ(x, y);  // exactly: the same job
}

INSTANTIATE_TEST_SUITE_P(
    Configs, SmpConfigPairs,
    ::testing::Values(
        // The seed configuration of issue 18: a 4-stage pipeline, SMP's 1F1B-like schedule.
        Pair{"Seed", 4,
             R"({ "microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
                  "optimize": "speed", "partitions": 4, "ddp": true })",
             "P4", {"--placement", "P4", "--microbatches", "4", "--pipeline-schedule", "1f1b"}},
        Pair{"TensorParallelSpread", 4,
             R"({"partitions": 1, "tensor_parallel_degree": 2, "ddp": true,
                 "placement_strategy": "spread"})",
             "T2D2", {"--placement", "spread", "--tensor-degree", "2"}},
        Pair{"ShardTrainingStateGPipe", 4,
             R"({"partitions": 2, "ddp": true, "shard_optimizer_state": true,
                 "microbatches": 2, "pipeline": "simple"})",
             "D2P2+zero1",
             {"--placement", "cluster+zero1", "--pipeline-degree", "2", "--microbatches", "2",
              "--pipeline-schedule", "simple"}},
        Pair{"ActivationCheckpointing", 2,
             R"({"partitions": 1, "ddp": true, "activation_checkpointing": true})", "D2+ckpt",
             {"--placement", "D2+ckpt"}},
        Pair{"OffloadActivations", 4,
             R"({"partitions": 2, "ddp": true, "activation_checkpointing": true,
                 "offload_activations": true, "activation_loading_horizon": 2,
                 "microbatches": 2})",
             "D2P2+ckpt+offload(activations,horizon=2)",
             {"--placement", "D2P2+ckpt+offload(activations,horizon=2)", "--microbatches", "2"}},
        // An explicit order, and the keys that are accepted with no effect.
        Pair{"OrderPTD", 4,
             R"({"pipeline_parallel_degree": 2, "tensor_parallel_degree": 2, "ddp": true,
                 "placement_strategy": "PTD", "auto_partition": true, "default_partition": 0,
                 "delayed_parameter_initialization": true, "fp16": false, "bf16": false})",
             "P2T2", {"--placement", "P2T2"}}),
    [](const auto& info) { return info.param.name; });

// Keys without meaning here are said once, by rank 0, on stderr; a file works as inline JSON.
TEST_F(SmpConfigTrain, NoticesOnceAndReadsAFile) {
  const std::string path = corpus_.path("smp.json");
  std::ofstream(path)
      << R"({"partitions": 1, "ddp": true, "delayed_parameter_initialization": true})";
  const ProcessResult r = run("file", 2, {"--smp-config", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string notice = "plexus-train: warning: --smp-config \"" + path +
                             "\": key 'delayed_parameter_initialization' has no effect here";
  const size_t first = r.err.find(notice);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(notice, first + 1), std::string::npos) << "said more than once";
  EXPECT_THAT(r.out, HasSubstr("placement D2 ("));
}

// Bad input exits 2 naming the key (every rank prints it, as placement errors are printed), and
// a command-line option that contradicts the configuration is named with its key.
TEST_F(SmpConfigTrain, BadConfigurationExits2NamingTheKey) {
  ProcessResult r = run("bad", 2, {"--smp-config", R"({"partitions": 3, "ddp": true})"});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_THAT(r.err, HasSubstr("plexus-train: rank " + std::to_string(rank) +
                                 ": --smp-config (inline JSON): key 'partitions': 3 x "
                                 "tensor_parallel_degree 1 = 3 ranks per model replica do not "
                                 "divide the world size 2"));
  }
  r = run("conflict", 2,
          {"--smp-config", R"({"partitions": 1, "ddp": true})", "--placement", "D2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--placement 'D2' and --smp-config both give the placement"));
  const std::string path = corpus_.path("broken.json");
  std::ofstream(path) << "{\"partitions\": 1,\n \"ddp\" true}";
  r = run("malformed", 2, {"--smp-config", path});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--smp-config \"" + path + "\": malformed JSON (byte 29): parse "
                               "error at line 2, column 11"));
}

}  // namespace
}  // namespace plexus::test
