// plugin_loader_test.cpp - the engine's plugin loader across plugin ABI versions.
//
// Plugins built for ABI 1 and 2 (tests/engine/plugin_abi_fixture.c, exporting the legacy
// plx_plugin_v1) still load, with the later hooks reading as NULL; one built for an unknown
// future ABI (exporting plx_plugin_entry_v99) is refused naming its file and both versions; the
// P and T plugins are version 3, export plx_plugin_entry_v3 and provide their hooks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "engine/plugin/plugin_loader.h"
#include "plexus/plugin.h"

namespace plexus::engine {
namespace {

class PluginLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("PLEXUS_PLUGIN_PATH", PLEXUS_TEST_PLUGIN_DIR, 1); }
  void TearDown() override { unsetenv("PLEXUS_PLUGIN_PATH"); }
};

TEST_F(PluginLoaderTest, VersionOnePluginLoadsWithoutTheNewHooks) {
  LoadedPlugin plugin = load_plugin("old");
  EXPECT_EQ(plugin.abi_version(), 1u);
  EXPECT_EQ(plugin.entry_symbol(), "plx_plugin_v1");
  EXPECT_STREQ(plugin.api().name, "old");
  EXPECT_STREQ(plugin.api().version, "1.0.0");
  EXPECT_EQ(plugin.api().struct_size, PLX_PLUGIN_V1_SIZE);
  EXPECT_EQ(plugin.api().create, nullptr);
  EXPECT_EQ(plugin.api().run_pipeline, nullptr);
  EXPECT_EQ(plugin.api().tensor_allreduce, nullptr);
}

TEST_F(PluginLoaderTest, VersionTwoPluginLoadsWithoutTheMemoryHooks) {
  LoadedPlugin plugin = load_plugin("v2");
  EXPECT_EQ(plugin.abi_version(), 2u);
  EXPECT_EQ(plugin.api().struct_size, PLX_PLUGIN_V2_SIZE);
  EXPECT_EQ(plugin.api().run_pipeline, nullptr);
  EXPECT_NE(plugin.api().tensor_allreduce, nullptr);
  EXPECT_EQ(plugin.api().plan_memory, nullptr);
  EXPECT_EQ(plugin.api().reduce_scatter, nullptr);
  EXPECT_EQ(plugin.api().all_gather, nullptr);
}

TEST_F(PluginLoaderTest, FuturePluginIsRefusedNamingBothVersions) {
  try {
    load_plugin("future");
    FAIL() << "a plugin for ABI 99 loaded";
  } catch (const PluginError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(std::string(PLEXUS_TEST_PLUGIN_DIR) + "/libplexus_plugin_future.so"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("was built for plugin ABI 99 (plx_plugin_entry_v99)"), std::string::npos)
        << text;
    EXPECT_NE(text.find("this engine speaks 1..3 (plx_plugin_entry_v3;"), std::string::npos)
        << text;
  }
}

TEST_F(PluginLoaderTest, BrokenTablesOfThisVersionAreRefusedSayingWhatIsWrong) {
  try {
    load_plugin("short");
    FAIL() << "a version 3 table of version 1's size loaded";
  } catch (const PluginError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("libplexus_plugin_short.so's table of plugin ABI 3 is " +
                        std::to_string(PLX_PLUGIN_V1_SIZE) + " bytes; that version's is at least " +
                        std::to_string(sizeof(plx_plugin_t))),
              std::string::npos)
        << text;
  }
  try {
    load_plugin("noname");
    FAIL() << "a table without a name loaded";
  } catch (const PluginError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("libplexus_plugin_noname.so's table has no name (name is NULL)"),
              std::string::npos)
        << text;
  }
}

TEST_F(PluginLoaderTest, PipelineAndTensorPluginsAreVersionThree) {
  LoadedPlugin p = load_plugin("P");
  EXPECT_EQ(p.abi_version(), 3u);
  EXPECT_EQ(p.entry_symbol(), "plx_plugin_entry_v3");
  EXPECT_STREQ(PLX_PLUGIN_ENTRY_SYMBOL, "plx_plugin_entry_v3");
  EXPECT_EQ(p.api().struct_size, sizeof(plx_plugin_t));
  EXPECT_NE(p.api().create, nullptr);
  EXPECT_NE(p.api().run_pipeline, nullptr);
  EXPECT_EQ(p.api().tensor_allreduce, nullptr);
  LoadedPlugin t = load_plugin("T");
  EXPECT_EQ(t.abi_version(), 3u);
  EXPECT_NE(t.api().tensor_allreduce, nullptr);
  EXPECT_EQ(t.api().run_pipeline, nullptr);
}

TEST_F(PluginLoaderTest, InitialisersFillEveryField) {
  const plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;
  EXPECT_EQ(context.struct_size, sizeof(plx_plugin_context_t));
  EXPECT_EQ(context.abi_version, 3u);
  EXPECT_EQ(context.pipeline_group, nullptr);
  EXPECT_EQ(context.pipeline_schedule, PLX_PIPELINE_1F1B);
  EXPECT_EQ(context.num_microbatches, 1);
  EXPECT_EQ(context.virtual_stages, 1);
  const plx_stage_ops_t ops = PLX_STAGE_OPS_INIT;
  EXPECT_EQ(ops.struct_size, sizeof(plx_stage_ops_t));
  EXPECT_EQ(ops.num_microbatches, 1);
  EXPECT_EQ(ops.num_chunks, 1);
  EXPECT_EQ(ops.forward, nullptr);
  const plx_memory_plan_t plan = PLX_MEMORY_PLAN_INIT;
  EXPECT_EQ(plan.struct_size, sizeof(plx_memory_plan_t));
  EXPECT_EQ(plan.zero_stage, 0);
  EXPECT_EQ(plan.checkpoint_every, 0);
  EXPECT_EQ(plan.offload_activations, 0);
  EXPECT_EQ(plan.activation_loading_horizon, 1);
  EXPECT_EQ(plan.offload_optimizer, 0);
}

}  // namespace
}  // namespace plexus::engine
