// The memory model's relations (engine/plan/memory_model.h), without processes: ZeRO stages
// lower the categories docs/memory.md's table says, a 1F1B stage p holds min(M, P - p)
// activation slots where GPipe holds M, checkpointing lowers activations, offloading moves
// bytes to the host pool, and check_memory_model_input refuses what it cannot predict.
// tests/e2e/memory_model_test.cpp compares the predictions with real runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "engine/plan/memory_model.h"
#include "tests/engine/plan_inputs.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

// The small model (plan_inputs.h) with context 64, one microbatch.
MemoryModelInput base(int data, int pipeline = 1, int tensor = 1) {
  return small_model_input(64, data, pipeline, tensor);
}

RankMemory stage0(const MemoryModelInput& in) {
  EXPECT_EQ(check_memory_model_input(in), "");
  const MemoryPrediction p = predict_memory(in);
  EXPECT_EQ(static_cast<int>(p.stages.size()), in.pipeline);
  return p.stages.at(0);
}

MemoryModelInput with_zero(MemoryModelInput in, int stage, size_t persist = 100000) {
  in.plan.zero_stage = stage;
  in.plan.param_persistence_threshold = persist;
  in.plan.prefetch_units = 1;
  return in;
}

TEST(MemoryPrediction, PlainDataParallelHoldsTheWholeModelState) {
  const RankMemory one = stage0(base(1)), four = stage0(base(4));
  EXPECT_GT(one.device.parameters, 0);
  EXPECT_EQ(one.device.gradients, one.device.parameters);
  EXPECT_EQ(one.device.optimizer, 2 * one.device.parameters);  // AdamW m and v
  EXPECT_EQ(four.device.parameters, one.device.parameters);     // replicas
  EXPECT_LT(four.device.activations, one.device.activations);   // a quarter of the rows
  EXPECT_EQ(one.device.communication, 0);
  EXPECT_EQ(one.host.total(), 0);
  EXPECT_EQ(one.device.total(), one.device.parameters + one.device.gradients +
                                    one.device.optimizer + one.device.activations);
}

TEST(MemoryPrediction, ZeroStagesLowerWhatTheTableSays) {
  const RankMemory plain = stage0(base(4));
  const RankMemory z1 = stage0(with_zero(base(4), 1));
  const RankMemory z2 = stage0(with_zero(base(4), 2));
  const RankMemory z3 = stage0(with_zero(base(4), 3, 1000));
  const RankMemory z3_all_persistent = stage0(with_zero(base(4), 3));

  // zero1: the moments of the shard, about a quarter (parts rounded up).
  EXPECT_NEAR(z1.device.optimizer / plain.device.optimizer, 0.25, 0.01);
  EXPECT_EQ(z1.device.parameters, plain.device.parameters);
  EXPECT_EQ(z1.device.gradients, plain.device.gradients);
  EXPECT_GT(z1.device.communication, 0);  // part and padded unit staging
  // zero2: the gradient is the shard plus the units whose backward runs.
  EXPECT_EQ(z2.device.optimizer, z1.device.optimizer);
  EXPECT_EQ(z2.device.parameters, plain.device.parameters);
  EXPECT_LT(z2.device.gradients, plain.device.gradients * 3 / 5);
  EXPECT_GE(z2.device.gradients, z1.device.optimizer / 2);  // at least the shard
  // zero3: the parameters too, the gradients as zero2.
  // (4 blocks: the shard plus the block in use and the one prefetched, about 70%.)
  EXPECT_LT(z3.device.parameters, plain.device.parameters * 3 / 4);
  EXPECT_LT(stage0(with_zero(base(4), 3, 0)).device.parameters, z3.device.parameters)
      << "persistent units are held whole, not as parts";
  EXPECT_EQ(z3.device.gradients, z2.device.gradients);
  EXPECT_EQ(z3.device.optimizer, z1.device.optimizer);
  // With the default threshold every unit of this model stays gathered: zero2's parameters.
  EXPECT_EQ(z3_all_persistent.device.parameters, plain.device.parameters);
  // No stage changes the activations.
  for (const RankMemory* r : {&z1, &z2, &z3}) {
    EXPECT_EQ(r->device.activations, plain.device.activations);
  }
}

TEST(MemoryPrediction, Zero3PrefetchHoldsOneMoreUnit) {
  MemoryModelInput one = with_zero(base(4), 3, 0), two = one;
  two.plan.prefetch_units = 2;
  EXPECT_GT(stage0(two).device.parameters, stage0(one).device.parameters);
}

TEST(MemoryPrediction, SavingGathersAWholeBufferUnderZero) {
  MemoryModelInput in = with_zero(base(4), 1);
  const double without = stage0(in).device.communication;
  in.saves_whole = true;
  EXPECT_EQ(stage0(in).device.communication - without, stage0(base(4)).device.parameters);
  MemoryModelInput plain = base(4);
  plain.saves_whole = true;
  EXPECT_EQ(stage0(plain).device.communication, 0) << "plain D saves its own buffer";
}

// Activations of stage p with M microbatches of 8 rows each (rows fixed, so a slot is fixed).
double activations(const std::string& schedule, int microbatches, int stage) {
  MemoryModelInput in = base(1, 4);
  in.schedule = schedule;
  in.microbatches = microbatches;
  in.global_batch = 8 * microbatches;
  EXPECT_EQ(check_memory_model_input(in), "");
  return predict_memory(in).stages.at(stage).device.activations;
}

TEST(MemoryPrediction, OneFOneBHoldsMinOfMAndPMinusPSlotsWhereGpipeHoldsM) {
  constexpr int kP = 4, kM = 8;
  for (int p = 0; p < kP; ++p) {
    // GPipe: M slots plus the workspace, so one slot is the difference of M = 2 and M = 1.
    const double slot = activations("simple", 2, p) - activations("simple", 1, p);
    const double workspace = activations("simple", 1, p) - slot;
    ASSERT_GT(slot, 0) << "stage " << p;
    ASSERT_GE(workspace, 0) << "stage " << p;
    const double gpipe = activations("simple", kM, p) - workspace;
    const double one_f_one_b = activations("1f1b", kM, p) - workspace;
    EXPECT_DOUBLE_EQ(gpipe / slot, kM) << "stage " << p;
    EXPECT_DOUBLE_EQ(one_f_one_b / gpipe, static_cast<double>(std::min(kM, kP - p)) / kM)
        << "stage " << p;
  }
}

TEST(MemoryPrediction, PipelineAndTensorSplitTheModelState) {
  const double whole = stage0(base(1)).device.parameters;
  const MemoryPrediction p2 = predict_memory(base(1, 2));
  ASSERT_EQ(p2.stages.size(), 2u);
  EXPECT_EQ(p2.stages[1].stage, 1);
  // The two stages hold the model once, plus the head's copy of the tied embedding.
  const double wte = 256.0 * 64 * sizeof(float);
  EXPECT_EQ(p2.stages[0].device.parameters + p2.stages[1].device.parameters, whole + wte);
  const RankMemory t2 = stage0(base(1, 1, 2));
  EXPECT_LT(t2.device.parameters, whole * 0.6);
  EXPECT_GT(t2.device.communication, 0) << "replicated-gradient staging";
}

TEST(MemoryPrediction, CheckpointingLowersActivations) {
  const RankMemory none = stage0(base(2));
  MemoryModelInput in = base(2);
  in.plan.checkpoint_every = 1;
  const RankMemory each = stage0(in);
  EXPECT_LT(each.device.activations, none.device.activations);
  EXPECT_EQ(each.device.parameters, none.device.parameters);
  EXPECT_EQ(each.host.activations, 0);
  // In a pipeline every microbatch in flight keeps less.
  MemoryModelInput pipe = base(1, 2), pipe_ckpt = pipe;
  pipe.microbatches = pipe_ckpt.microbatches = 4;
  pipe_ckpt.plan.checkpoint_every = 1;
  EXPECT_LT(predict_memory(pipe_ckpt).stages[0].device.activations,
            predict_memory(pipe).stages[0].device.activations);
}

TEST(MemoryPrediction, OffloadMovesBytesToTheHostPool) {
  MemoryModelInput ckpt = base(2, 1);
  ckpt.config.n_layer = 8;  // more checkpointed inputs than the horizon
  ckpt.plan.checkpoint_every = 1;
  MemoryModelInput offloaded = ckpt;
  offloaded.plan.offload_activations = 1;
  offloaded.plan.activation_loading_horizon = 2;
  const RankMemory a = stage0(ckpt), b = stage0(offloaded);
  EXPECT_LT(b.device.activations, a.device.activations);
  EXPECT_GT(b.host.activations, 0);
  // What leaves the device is the inputs past the horizon; the host holds them all.
  EXPECT_GE(b.host.activations, a.device.activations - b.device.activations);

  const RankMemory plain = stage0(base(2));
  MemoryModelInput optimizer = base(2);
  optimizer.plan.offload_optimizer = 1;
  const RankMemory o = stage0(optimizer);
  EXPECT_EQ(o.device.optimizer, 0);
  EXPECT_EQ(o.host.optimizer, plain.device.optimizer);
  EXPECT_EQ(o.device.parameters, plain.device.parameters);
  EXPECT_GT(o.host.communication, 0) << "the step's host copies";
  // With ZeRO the host holds the shard's moments.
  MemoryModelInput zero_offload = with_zero(base(2), 1);
  zero_offload.plan.offload_optimizer = 1;
  EXPECT_EQ(stage0(zero_offload).host.optimizer, stage0(with_zero(base(2), 1)).device.optimizer);
}

TEST(MemoryPrediction, LargestIsTheMostLoadedStage) {
  MemoryModelInput in = base(1, 4);
  in.microbatches = 8;
  const MemoryPrediction p = predict_memory(in);
  const RankMemory& largest = p.largest();
  for (const RankMemory& r : p.stages) EXPECT_LE(r.device.total(), largest.device.total());
}

TEST(MemoryPrediction, JsonHasEveryCategoryInWholeBytes) {
  MemoryModelInput in = with_zero(base(2), 1);
  in.plan.offload_optimizer = 1;
  const RankMemory r = stage0(in);
  const nlohmann::json j = prediction_json(r);
  EXPECT_EQ(j.at("stage"), 0);
  EXPECT_EQ(j.at("device").at("peak").at("parameters").get<int64_t>(),
            static_cast<int64_t>(r.device.parameters));
  EXPECT_EQ(j.at("host").at("peak").at("optimizer").get<int64_t>(),
            static_cast<int64_t>(r.host.optimizer));
  EXPECT_EQ(j.at("device").at("peak_total").get<int64_t>(),
            static_cast<int64_t>(r.device.total()));
  EXPECT_EQ(j.at("host").at("peak_total").get<int64_t>(), static_cast<int64_t>(r.host.total()));
  EXPECT_EQ(j.at("device").at("peak").size(), 5u);
}

TEST(MemoryPrediction, DescribeHasALinePerStage) {
  const std::string text = describe_prediction(predict_memory(base(1, 2)));
  EXPECT_THAT(text, HasSubstr("stage 0: device "));
  EXPECT_THAT(text, HasSubstr("\nstage 1: device "));
  EXPECT_THAT(text, HasSubstr("communication 0 B), host 0 B"));
}

TEST(MemoryPrediction, CheckRefusesWhatItCannotPredict) {
  EXPECT_EQ(check_memory_model_input(base(2, 2, 2)), "");
  MemoryModelInput in = base(0);
  EXPECT_THAT(check_memory_model_input(in), HasSubstr("degrees D0 P1 T1 must be at least 1"));
  in = base(1, 5);
  EXPECT_THAT(check_memory_model_input(in), HasSubstr("pipeline degree 5 exceeds the 4 blocks"));
  in = base(1, 1, 3);
  EXPECT_THAT(check_memory_model_input(in),
              HasSubstr("tensor degree 3 does not divide the 4 heads"));
  in = base(3);
  EXPECT_THAT(check_memory_model_input(in),
              HasSubstr("batch 16 does not split over 3 data ranks x 1 microbatches"));
  in = base(2);
  in.microbatches = 0;
  EXPECT_THAT(check_memory_model_input(in), HasSubstr("does not split"));
  in = base(1, 2);
  in.schedule = "interleaved";
  EXPECT_THAT(check_memory_model_input(in), HasSubstr("schedule 'interleaved' is not modelled"));
  in = base(1);
  in.config.n_embd = 66;  // not a multiple of the 4 heads
  EXPECT_THAT(check_memory_model_input(in), HasSubstr("n_embd 66 is not a multiple of n_head 4"));
}

}  // namespace
}  // namespace plexus::engine
