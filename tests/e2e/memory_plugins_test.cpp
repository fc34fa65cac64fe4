// End-to-end: the memory plugins (+zero1, +zero2, +zero3, +ckpt, +offload(...)) train the same
// model as one process, and move the memory peaks the way docs/memory.md says.
//
// plexus-run launches real plexus-train ranks over the real transport (the model and batch of
// placement_matrix_test.cpp). Acceptance 1: with each plugin composed with D2 and with D2P2 or
// D2T2, the 20 per-step losses equal the single-process run's within 1e-4 relative, and so do
// the parameters gathered with --save-params; activation checkpointing (and offloading the
// checkpoints) gives losses bit-identical to none. Acceptance 2: the --memory-report peaks of
// D4 runs, against bounds computed from the model's parameter units (GptShard::units()) split
// over 4 data ranks as unit_partition.h does. The peaks cover the whole run, set-up included:
// under ZeRO-2/3 the model is built without its whole gradient, under ZeRO-3 without its whole
// parameters, so no moment holds the whole model. And bad plans fail with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/model/gpt_shard.h"
#include "tests/e2e/metrics_losses.h"
#include "tests/e2e/one_process_match.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class MemoryPlugins : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { corpus_.make("plexus_memory"); }
  static void TearDownTestSuite() { corpus_.remove(); }

  // The model of placement_matrix_test.cpp: 6 blocks x 32 dims x 2 heads, context 16, global
  // batch 8.
  static engine::GptConfig config() {
    return {.vocab_size = 256, .max_seq_len = 16, .n_layer = 6, .n_head = 2, .n_embd = 32};
  }
  static std::vector<std::string> train_args(const std::string& name, const std::string& steps,
                                             const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "6", "--n-head", "2",
        "--n-embd", "32", "--seq-len", "16", "--batch-size", "8", "--steps", steps, "--lr",
        "1e-3", "--warmup-steps", "5", "--val-every", "0", "--log-every", "5", "--checkpoint", "",
        "--metrics-file", metrics(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  static std::string metrics(const std::string& name) { return corpus_.path(name + ".jsonl"); }
  static std::string params(const std::string& name) { return corpus_.path(name + ".params"); }
  static std::string report_pattern(const std::string& name) {
    return corpus_.path(name + ".{rank}.json");
  }

  // Runs plexus-train (under plexus-run when ranks > 1) and returns the result.
  static ProcessResult run(const std::string& name, int ranks, const std::string& steps,
                           const std::vector<std::string>& extra) {
    std::vector<std::string> argv = train_args(name, steps, extra);
    if (ranks > 1) {
      argv.insert(argv.begin(), {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"});
    }
    return run_process(argv, 300);
  }
  static std::string train(const std::string& name, int ranks, const std::string& steps,
                           const std::vector<std::string>& extra) {
    ProcessResult r = run(name, ranks, steps, extra);
    EXPECT_EQ(r.exit_code, 0) << name << ":\n" << r.out << r.err;
    return r.out + r.err;
  }

  static std::vector<double> losses(const std::string& name) {
    return metrics_losses(metrics(name));
  }

  // The single-process reference and plain D2, trained once for the whole suite.
  static void references() {
    if (!fs::exists(metrics("one"))) {
      train("one", 1, "20", {"--placement", "D", "--save-params", params("one")});
    }
    if (!fs::exists(metrics("D2"))) train("D2", 2, "20", {"--placement", "D2"});
  }

  static inline CorpusFolder corpus_;
};

using Case = OneProcessCase;

class MemoryPluginLosses : public MemoryPlugins, public ::testing::WithParamInterface<Case> {};

TEST_P(MemoryPluginLosses, LossesAndParametersEqualOneProcess) {
  references();
  const Case& c = GetParam();
  std::vector<std::string> args = c.args;
  args.insert(args.end(), {"--save-params", params(c.name)});
  const std::string out = train(c.name, c.ranks, "20", args);
  EXPECT_THAT(out, HasSubstr("plexus-train: memory: ")) << "the plan is printed";
  expect_as_one_process({metrics("one"), params("one")}, c.name,
                        {metrics(c.name), params(c.name)}, out);
}

// Each plugin with D2 and with D2P2 or D2T2 (alternating), plus everything at once.
INSTANTIATE_TEST_SUITE_P(
    Plugins, MemoryPluginLosses,
    ::testing::Values(
        Case{"Zero1D2", 2, {"--placement", "D2+zero1"}},
        Case{"Zero1D2P2", 4, {"--placement", "D2P2+zero1", "--microbatches", "2"}},
        Case{"Zero2D2", 2, {"--placement", "D2+zero2", "--microbatches", "2"}},
        Case{"Zero2D2T2", 4, {"--placement", "D2T2+zero2"}},
        Case{"Zero3D2", 2, {"--placement", "D2+zero3(persist=600)"}},
        Case{"Zero3D2P2Interleaved", 4,
             {"--placement", "D2P2+zero3(persist=0,prefetch=2)", "--microbatches", "2",
              "--pipeline-schedule", "interleaved", "--virtual-stages", "2"}},
        Case{"CkptD2", 2, {"--placement", "D2+ckpt"}},
        Case{"CkptD2T2", 4, {"--placement", "D2T2+ckpt(every=2)"}},
        Case{"CkptOffloadActivationsD2", 2, {"--placement", "D2+ckpt+offload(activations)"}},
        Case{"CkptOffloadActivationsD2P2", 4,
             {"--placement", "D2P2+ckpt(every=2)+offload(activations,horizon=1)",
              "--microbatches", "2"}},
        Case{"OffloadOptimizerD2", 2, {"--placement", "D2+offload(optimizer)"}},
        Case{"OffloadOptimizerD2T2", 4, {"--placement", "D2T2+offload(optimizer)"}},
        Case{"Zero3CkptOffloadAllD2", 2,
             {"--placement", "D2+zero3(persist=0)+ckpt+offload(activations,optimizer)",
              "--microbatches", "2"}}),
    [](const auto& info) { return info.param.name; });

// Recompute runs the same operations in the same order: checkpointing changes no bit.
TEST_F(MemoryPlugins, CheckpointingIsBitIdenticalToNone) {
  references();
  train("D2Ckpt", 2, "20", {"--placement", "D2+ckpt(every=2)"});
  train("D2CkptOffload", 2, "20", {"--placement", "D2+ckpt+offload(activations,horizon=2)"});
  const std::vector<double> plain = losses("D2");
  ASSERT_EQ(plain.size(), 20u);
  EXPECT_EQ(losses("D2Ckpt"), plain);
  EXPECT_EQ(losses("D2CkptOffload"), plain);
}

// ---- Acceptance 2: memory peaks --------------------------------------------------------------

// Rank 0's peaks of a D4 run (2 steps), from its --memory-report; checks every rank's file.
struct Peaks {
  int64_t device[5] = {};  // parameters, gradients, optimizer, activations, communication
  int64_t host[5] = {};
};
enum { kParams = 0, kGrads = 1, kOptimizer = 2, kActivations = 3 };

class MemoryPeaks : public MemoryPlugins {
 protected:
  static Peaks measure(const std::string& name, const std::string& placement) {
    train(name, 4, "2", {"--placement", placement, "--memory-report", report_pattern(name)});
    Peaks peaks;
    for (int rank = 0; rank < 4; ++rank) {
      const std::string path = corpus_.path(name + "." + std::to_string(rank) + ".json");
      std::ifstream in(path);
      EXPECT_TRUE(in.good()) << "no memory report " << path;
      if (!in.good()) continue;
      const nlohmann::json report = nlohmann::json::parse(in);
      EXPECT_EQ(report.at("rank"), rank) << path;
      EXPECT_EQ(report.at("placement"), placement) << path;
      if (rank != 0) continue;
      const char* names[] = {"parameters", "gradients", "optimizer", "activations",
                             "communication"};
      for (int c = 0; c < 5; ++c) {
        peaks.device[c] = report.at("memory").at("device").at("peak").at(names[c]);
        peaks.host[c] = report.at("memory").at("host").at("peak").at(names[c]);
      }
    }
    return peaks;
  }
};

TEST_F(MemoryPeaks, PeaksMoveAsThePluginsSay) {
  constexpr int64_t kFloat = 4;
  constexpr size_t kDegree = 4, kPersist = 1000;
  // Rank 0 of D4 holds the whole model: its units, each cut in 4 parts of s_u elements.
  const engine::ShardSpec whole{0, 6, true, true, 1, 0};
  engine::GptShard model(config(), whole, engine::TensorParallelOps{});
  size_t total = 0, shard = 0, persistent = 0, gathered_shard = 0, wte = 0, block = 0;
  std::vector<size_t> gathered;  // counts of the units zero3 gathers on use
  std::vector<size_t> counts;
  for (const engine::ParamUnit& u : model.units()) {
    const size_t part = (u.count + kDegree - 1) / kDegree;
    total += u.count;
    shard += part;
    counts.push_back(u.count);
    if (u.name == "wte") wte = u.count;
    if (u.name.rfind("blocks.", 0) == 0) block = std::max(block, u.count);
    if (u.count <= kPersist) {
      persistent += u.count;
    } else {
      gathered.push_back(u.count);
      gathered_shard += part;
    }
  }
  ASSERT_EQ(total, model.num_params());
  ASSERT_GE(gathered.size(), 2u);
  auto largest_two = [](std::vector<size_t> v) {
    std::sort(v.rbegin(), v.rend());
    return v[0] + v[1];
  };
  const int64_t whole_bytes = static_cast<int64_t>(total) * kFloat;
  const int64_t shard_bytes = static_cast<int64_t>(shard) * kFloat;

  const Peaks plain = measure("plain", "D4");
  EXPECT_EQ(plain.device[kParams], whole_bytes);
  EXPECT_EQ(plain.device[kGrads], whole_bytes);
  EXPECT_EQ(plain.device[kOptimizer], 2 * whole_bytes);  // AdamW m and v
  EXPECT_GT(plain.device[kActivations], 0);

  // zero1: m and v only for this rank's parts, about a quarter of plain's.
  const Peaks zero1 = measure("zero1", "D4+zero1");
  EXPECT_EQ(zero1.device[kOptimizer], 2 * shard_bytes);
  EXPECT_NEAR(static_cast<double>(zero1.device[kOptimizer]) / plain.device[kOptimizer], 0.25,
              0.01);
  EXPECT_EQ(zero1.device[kParams], whole_bytes);
  EXPECT_EQ(zero1.device[kGrads], whole_bytes);

  // zero2: the gradient is the shard plus the units whose backward is running: wte (from the
  // head until the embedding) and one block.
  const Peaks zero2 = measure("zero2", "D4+zero2");
  EXPECT_EQ(zero2.device[kOptimizer], 2 * shard_bytes);
  EXPECT_GE(zero2.device[kGrads], shard_bytes);
  EXPECT_LE(zero2.device[kGrads], shard_bytes + static_cast<int64_t>(largest_two(counts)) * kFloat);
  EXPECT_EQ(zero2.device[kGrads], shard_bytes + static_cast<int64_t>(wte + block) * kFloat);
  EXPECT_LT(zero2.device[kGrads], plain.device[kGrads] * 3 / 5);
  EXPECT_EQ(zero2.device[kParams], whole_bytes);

  // zero3: the parameters are the shard of the units gathered on use, the persistent units whole,
  // and the gathered ones (the unit in use and one prefetched).
  const Peaks zero3 =
      measure("zero3", "D4+zero3(persist=" + std::to_string(kPersist) + ",prefetch=1)");
  const int64_t resident = static_cast<int64_t>(gathered_shard + persistent) * kFloat;
  EXPECT_GE(zero3.device[kParams], resident);
  EXPECT_LE(zero3.device[kParams],
            resident + static_cast<int64_t>(largest_two(gathered)) * kFloat);
  EXPECT_LT(zero3.device[kParams], plain.device[kParams] * 3 / 5);
  EXPECT_LE(zero3.device[kGrads], shard_bytes + static_cast<int64_t>(largest_two(counts)) * kFloat);
  EXPECT_EQ(zero3.device[kGrads], zero2.device[kGrads]);
  EXPECT_EQ(zero3.device[kOptimizer], 2 * shard_bytes);

  // Checkpointing keeps block inputs only; offloading moves them to the host pool.
  const Peaks ckpt = measure("ckpt", "D4+ckpt");
  EXPECT_LT(ckpt.device[kActivations], plain.device[kActivations]);
  EXPECT_EQ(ckpt.host[kActivations], 0);
  const Peaks offloaded = measure("ckpt_offload", "D4+ckpt+offload(activations)");
  EXPECT_LT(offloaded.device[kActivations], ckpt.device[kActivations]);
  EXPECT_GT(offloaded.host[kActivations], 0);

  // Optimizer offload: m and v leave the device for the host, whole.
  const Peaks optimizer = measure("offload_optimizer", "D4+offload(optimizer)");
  EXPECT_EQ(optimizer.device[kOptimizer], 0);
  EXPECT_EQ(optimizer.host[kOptimizer], plain.device[kOptimizer]);
  EXPECT_EQ(optimizer.device[kParams], whole_bytes);
}

TEST_F(MemoryPlugins, RankZeroPrintsItsPeaks) {
  const std::string out = train("peaks_print", 2, "1", {"--placement", "D2+zero2"});
  EXPECT_THAT(out, HasSubstr("plexus-train: memory peaks (rank 0)"));
  EXPECT_THAT(out, HasSubstr("device peak: parameters "));
  EXPECT_THAT(out, HasSubstr("host peak: parameters "));
}

// ---- bad plans ---------------------------------------------------------------------------------

struct BadPlan {
  std::string name;
  int ranks;
  std::vector<std::string> args;
  std::string message;
  friend void PrintTo(const BadPlan& c, std::ostream* os) { *os << c.name; }
};

class MemoryPluginBadInput : public MemoryPlugins, public ::testing::WithParamInterface<BadPlan> {};

TEST_P(MemoryPluginBadInput, ClearErrorAndExitCodeTwo) {
  const BadPlan& c = GetParam();
  ProcessResult r = run("bad_" + c.name, c.ranks, "2", c.args);
  EXPECT_FALSE(r.timed_out) << (r.out + r.err);
  EXPECT_NE(r.exit_code, 0) << (r.out + r.err);
  if (c.ranks == 1) {
    EXPECT_EQ(r.exit_code, 2) << (r.out + r.err);
  }
  EXPECT_THAT((r.out + r.err), HasSubstr(c.message));
  EXPECT_THAT((r.out + r.err), HasSubstr("plexus-train: rank 0:"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MemoryPluginBadInput,
    ::testing::Values(
        BadPlan{"TwoSharders", 1, {"--placement", "D+zero1+zero3"},
                "plugin 'zero3' at position 9 repeats 'zero1'"},
        BadPlan{"TwoCheckpointers", 1, {"--placement", "D+ckpt(every=2)+ckpt(every=3)"},
                "plugin 'ckpt' at position 17 is given twice"},
        BadPlan{"OffloadActivationsWithoutCheckpointing", 1,
                {"--placement", "D+offload(activations)"}, "(add +ckpt)"},
        BadPlan{"BadPersistArgument", 1, {"--placement", "D+zero3(persist=x)"},
                "persist must be a whole number"},
        BadPlan{"ReportPathWithoutRank", 2,
                {"--placement", "D2", "--memory-report", "/tmp/plexus_memory.json"},
                "--memory-report '/tmp/plexus_memory.json' has no {rank} in it"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace plexus::test
