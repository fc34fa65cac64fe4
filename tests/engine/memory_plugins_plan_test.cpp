// memory_plugins_plan_test.cpp - the memory plugins (+zero1/2/3, +ckpt, +offload) loaded through
// the engine's loader: the plan each asks for, argument errors naming the argument, and the ZeRO
// plugins' reduce_scatter / all_gather on a real one-rank communicator (blocking and
// non-blocking).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/plugin/plugin_loader.h"
#include "plexus/plexus.h"
#include "plexus/plugin.h"

namespace plexus::engine {
namespace {

// A plugin created with args on a context whose groups are comm (may be null for plugins that
// need none). Destroys its state at the end.
class Created {
 public:
  Created(const std::string& name, std::vector<std::string> args, plx_comm_t comm)
      : plugin_(load_plugin(name)), args_(std::move(args)) {
    for (const std::string& a : args_) pointers_.push_back(a.c_str());
    plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;
    context.world = context.group = context.data_group = comm;
    context.pipeline_group = context.tensor_group = comm;
    context.args = pointers_.data();
    context.num_args = pointers_.size();
    result_ = plugin_.api().create(&context, &state_, err_, sizeof(err_));
  }
  ~Created() {
    if (result_ == PLX_SUCCESS && plugin_.api().destroy) plugin_.api().destroy(state_);
  }
  plx_result_t result() const { return result_; }
  std::string error() const { return err_; }
  const plx_plugin_t& api() const { return plugin_.api(); }
  void* state() const { return state_; }
  plx_memory_plan_t plan() {
    plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
    char err[256] = {};
    EXPECT_EQ(api().plan_memory(state_, &plan, err, sizeof(err)), PLX_SUCCESS) << err;
    return plan;
  }

 private:
  LoadedPlugin plugin_;
  std::vector<std::string> args_;
  std::vector<const char*> pointers_;
  void* state_ = nullptr;
  char err_[512] = {};
  plx_result_t result_ = PLX_ERROR_INTERNAL;
};

class MemoryPluginsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    plx_unique_id_t id;
    ASSERT_EQ(plx_get_unique_id(&id), PLX_SUCCESS) << plx_get_last_error(nullptr);
    ASSERT_EQ(plx_comm_init_rank(&comm_, 1, id, 0), PLX_SUCCESS) << plx_get_last_error(nullptr);
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(plx_comm_destroy(comm_), PLX_SUCCESS);
    }
  }
  plx_comm_t comm_ = nullptr;
};

TEST_F(MemoryPluginsTest, ZeroPluginsAskForTheirStage) {
  for (int stage = 1; stage <= 3; ++stage) {
    Created zero("zero" + std::to_string(stage), {}, comm_);
    ASSERT_EQ(zero.result(), PLX_SUCCESS) << zero.error();
    EXPECT_EQ(zero.api().abi_version, 3u);
    ASSERT_NE(zero.api().reduce_scatter, nullptr);
    ASSERT_NE(zero.api().all_gather, nullptr);
    const plx_memory_plan_t plan = zero.plan();
    EXPECT_EQ(plan.zero_stage, stage);
    EXPECT_EQ(plan.checkpoint_every, 0);
    EXPECT_EQ(plan.offload_optimizer, 0);
    EXPECT_EQ(plan.param_persistence_threshold, stage == 3 ? 100000u : 0u);
    EXPECT_EQ(plan.prefetch_units, stage == 3 ? 1 : 0);
  }
  Created tuned("zero3", {"persist=64", "prefetch=2"}, comm_);
  ASSERT_EQ(tuned.result(), PLX_SUCCESS) << tuned.error();
  const plx_memory_plan_t plan = tuned.plan();
  EXPECT_EQ(plan.param_persistence_threshold, 64u);
  EXPECT_EQ(plan.prefetch_units, 2);
}

TEST_F(MemoryPluginsTest, ZeroArgumentErrorsNameTheArgument) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {"zero1", {"persist=5"}}, {"zero3", {"persist=-1"}}, {"zero3", {"persist=1x"}},
      {"zero3", {"prefetch=65"}}, {"zero3", {"bogus"}}, {"zero2", {"prefetch=1"}}};
  for (const auto& [name, args] : bad) {
    Created zero(name, args, comm_);
    EXPECT_EQ(zero.result(), PLX_ERROR_INVALID_ARGUMENT) << name << " " << args[0];
    EXPECT_NE(zero.error().find("'" + args[0] + "'"), std::string::npos) << zero.error();
    EXPECT_NE(zero.error().find(name + ": rank 0"), std::string::npos) << zero.error();
  }
}

TEST_F(MemoryPluginsTest, ZeroCollectivesOnOneRankAreIdentities) {
  Created zero("zero3", {}, comm_);
  ASSERT_EQ(zero.result(), PLX_SUCCESS) << zero.error();
  const std::vector<float> in = {1.5f, -2.0f, 3.25f, 7.0f, 0.0f};
  std::vector<float> out(in.size(), -1.0f);
  char err[256] = {};
  ASSERT_EQ(zero.api().reduce_scatter(zero.state(), in.data(), out.data(), in.size(), err,
                                      sizeof(err)),
            PLX_SUCCESS)
      << err;
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), -1.0f);
  ASSERT_EQ(zero.api().all_gather(zero.state(), in.data(), out.data(), in.size(), nullptr, err,
                                  sizeof(err)),
            PLX_SUCCESS)
      << err;
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), -1.0f);
  plx_request_t request = nullptr;
  ASSERT_EQ(zero.api().all_gather(zero.state(), in.data(), out.data(), in.size(), &request, err,
                                  sizeof(err)),
            PLX_SUCCESS)
      << err;
  ASSERT_NE(request, nullptr);
  ASSERT_EQ(plx_wait(request), PLX_SUCCESS) << plx_get_last_error(comm_);
  EXPECT_EQ(out, in);
  EXPECT_EQ(zero.api().reduce_scatter(zero.state(), nullptr, out.data(), 3, err, sizeof(err)),
            PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("must be non-NULL"), std::string::npos) << err;
}

TEST_F(MemoryPluginsTest, CheckpointingPlans) {
  EXPECT_EQ(Created("ckpt", {}, nullptr).plan().checkpoint_every, 1);
  EXPECT_EQ(Created("ckpt", {"each"}, nullptr).plan().checkpoint_every, 1);
  EXPECT_EQ(Created("ckpt", {"every=3"}, nullptr).plan().checkpoint_every, 3);
  for (const std::string arg : {"every=0", "every=", "every=2x", "sometimes"}) {
    Created bad("ckpt", {arg}, nullptr);
    EXPECT_EQ(bad.result(), PLX_ERROR_INVALID_ARGUMENT) << arg;
    EXPECT_NE(bad.error().find("'" + arg + "'"), std::string::npos) << bad.error();
  }
  Created two("ckpt", {"each", "every=2"}, nullptr);
  EXPECT_EQ(two.result(), PLX_ERROR_INVALID_ARGUMENT);
}

TEST_F(MemoryPluginsTest, OffloadPlans) {
  plx_memory_plan_t plan = Created("offload", {"activations"}, nullptr).plan();
  EXPECT_EQ(plan.offload_activations, 1);
  EXPECT_EQ(plan.activation_loading_horizon, 4);
  EXPECT_EQ(plan.offload_optimizer, 0);
  EXPECT_EQ(plan.checkpoint_every, 0);  // +ckpt's field, left alone
  plan = Created("offload", {"optimizer"}, nullptr).plan();
  EXPECT_EQ(plan.offload_activations, 0);
  EXPECT_EQ(plan.activation_loading_horizon, 1);
  EXPECT_EQ(plan.offload_optimizer, 1);
  plan = Created("offload", {"activations", "optimizer", "horizon=2"}, nullptr).plan();
  EXPECT_EQ(plan.offload_activations, 1);
  EXPECT_EQ(plan.activation_loading_horizon, 2);
  EXPECT_EQ(plan.offload_optimizer, 1);
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{}, {"gpu"}, {"activations", "horizon=0"},
                                             {"optimizer", "horizon=2"}}) {
    Created bad("offload", args, nullptr);
    EXPECT_EQ(bad.result(), PLX_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(bad.error().find("offload: rank 0"), std::string::npos) << bad.error();
  }
}

}  // namespace
}  // namespace plexus::engine
