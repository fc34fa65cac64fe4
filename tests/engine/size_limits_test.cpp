// size_limits_test.cpp - plexus-train's sizes are refused before anything is allocated
// (engine/config/size_limits.h): each model dimension's range and the option it names, pipeline
// chunks beyond the layers, a microbatch past the layers' int row count, and the memory floor
// against a host of a given size, naming the options of its largest part and every part's size.
#include "engine/config/size_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/memory/memory_tracker.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1ull << 30;

TrainOptions small() {
  TrainOptions o;  // 4 layers x 128 dims x 4 heads, context 64, batch 32
  return o;
}

TEST(SizeLimits, EachDimensionNamesItsOptionAndRange) {
  TrainOptions o = small();
  EXPECT_EQ(check_model_sizes(o, 1, 1), "");
  o.model.n_layer = 2000000;
  EXPECT_EQ(check_model_sizes(o, 1, 1), "--n-layer 2000000 not in 1..1048576");
  o = small();
  o.model.n_embd = 0;
  EXPECT_EQ(check_model_sizes(o, 1, 1), "--n-embd 0 not in 1..1048576");
  o = small();
  o.model.seq_len = 1 << 21;
  EXPECT_EQ(check_model_sizes(o, 1, 1), "--seq-len 2097152 not in 1..1048576");
  o = small();
  o.model.n_head = 3;
  EXPECT_EQ(check_model_sizes(o, 1, 1), "--n-embd 128 is not a multiple of --n-head 3");
}

TEST(SizeLimits, ChunksBeyondTheLayersAreRefusedWithoutOverflow) {
  TrainOptions o = small();
  o.virtual_stages = 2147483647;  // P x v would overflow an int
  EXPECT_THAT(check_model_sizes(o, 2, 1),
              HasSubstr("layers fewer than stages: 4 transformer blocks cannot fill 4294967294 "
                        "pipeline chunks"));
  EXPECT_THAT(check_model_sizes(o, 2, 1), HasSubstr("--virtual-stages 2147483647"));
}

TEST(SizeLimits, AMicrobatchPastTheLayersIntRowCountIsRefused) {
  TrainOptions o = small();
  o.global_batch = 2147483646;  // 1073741823 rows on each of D2, x 64 tokens
  o.model.seq_len = 64;
  EXPECT_EQ(check_model_sizes(o, 1, 2),
            "--batch-size 2147483646 --microbatches 1 --seq-len 64: a microbatch of 1073741823 "
            "rows x 64 tokens = 68719476672 tokens per rank, more than the layers' 2147483647 "
            "(raise --microbatches or lower --batch-size)");
  o.microbatches = 1073741823;  // one row each
  EXPECT_EQ(check_model_sizes(o, 1, 2), "");
}

// The issue-19 case: --n-layer 1000000 at the default width is refused by its size at once.
TEST(SizeLimits, AMillionLayersNeedTerabytes) {
  TrainOptions o = small();
  o.model.n_layer = 1000000;
  const MemoryFloor f = memory_floor(o, 2, 2, 1, 1000);
  // (256 + 64) x 128 + 1000000 x (12 x 128^2 + 13 x 128) + 2 x 128 parameters.
  EXPECT_EQ(f.parameters, 40960.0 + 198272000000.0 + 256.0);
  EXPECT_EQ(f.model_state, 16 * f.parameters / 2);
  EXPECT_EQ(f.data, 1000.0);
  const std::string why = check_memory_floor(o, f, 2, 2, 64 * kGiB);
  EXPECT_THAT(why, HasSubstr("--n-layer 1000000 --n-embd 128: the model's 198.3 billion "
                             "parameters take 2.89 TiB with their gradients and AdamW's two "
                             "moments (16 bytes each), 1.44 TiB per rank even spread over all 2 "
                             "ranks; this host's 2 ranks need at least 2.89 TiB, more than its "
                             "64.00 GiB of memory"));
  EXPECT_THAT(why, HasSubstr("per rank at least: model state 1.44 TiB"));
  EXPECT_EQ(check_memory_floor(o, f, 2, 2, 4096 * 1024 * kGiB), "") << "on a 4 PiB host";
}

TEST(SizeLimits, AHugeBatchNamesTheBatchOptions) {
  TrainOptions o = small();
  o.global_batch = 1 << 24;
  o.microbatches = 1;
  const MemoryFloor f = memory_floor(o, 1, 1, 1, 0);
  // One microbatch of 2^24 rows x 64 tokens x (128 + 4 x 64) floats.
  EXPECT_EQ(f.activations, 4.0 * (1 << 24) * 64 * (128 + 4 * 64));
  EXPECT_EQ(f.batch, 8.0 * (1 << 24) * 64);
  const std::string why = check_memory_floor(o, f, 1, 1, 16 * kGiB);
  EXPECT_THAT(why, HasSubstr("--batch-size 16777216 --microbatches 1 --seq-len 64: a "
                             "microbatch's activations through one block (residual stream and "
                             "attention scores) take 1.50 TiB per rank; this host's 1 rank needs "
                             "at least"));
  EXPECT_THAT(why, HasSubstr("more than its 16.00 GiB of memory"));
}

TEST(SizeLimits, ADataFileEveryRankReadsCountsOncePerRank) {
  TrainOptions o = small();
  o.data_path = "corpus.txt";
  const MemoryFloor f = memory_floor(o, 8, 8, 1, 3 * kGiB);
  EXPECT_THAT(check_memory_floor(o, f, 8, 8, 16 * kGiB),
              HasSubstr("--data 'corpus.txt': every rank reads the file's 3.00 GiB whole; this "
                        "host's 8 ranks need at least 24.0"));
  EXPECT_EQ(check_memory_floor(o, f, 8, 2, 16 * kGiB), "") << "2 of the 8 ranks on this host";
}

TEST(SizeLimits, OnCudaOnlyHostResidentPartsCount) {
  TrainOptions o = small();
  o.model.n_layer = 1000000;
  o.device = ComputeDevice::kCuda;
  const MemoryFloor f = memory_floor(o, 1, 1, 1, 1000);
  EXPECT_EQ(check_memory_floor(o, f, 1, 1, 64 * kGiB), "");
}

TEST(SizeLimits, FormatBytesReachesTerabytesAndBeyond) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3.0 * kGiB), "3.00 GiB");
  EXPECT_EQ(format_bytes(2.5 * 1024 * kGiB), "2.50 TiB");
  EXPECT_EQ(format_bytes(1e20), "86.74 EiB");
}

// The memory cgroup's limit, v1 and v2, at the process's path or at the root; "max", a v1
// "unlimited", junk and paths that climb out are no limit.
TEST(CgroupMemoryLimit, ReadsV1AndV2AtThePathOrTheRoot) {
  test::TempDir tmp("plexus-cgroup");
  ASSERT_FALSE(tmp.path().empty());
  const std::string root = tmp.path();
  auto put = [&](const std::string& file, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root + file).parent_path());
    std::ofstream(root + file) << text;
  };
  put("/memory/job/7/memory.limit_in_bytes", "4294967296\n");
  EXPECT_EQ(cgroup_memory_limit("4:memory:/job/7\n", root), 4294967296u);
  EXPECT_EQ(cgroup_memory_limit("4:cpu,memory:/job/7\n0::/\n", root), 4294967296u);
  put("/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "unlimited"
  EXPECT_EQ(cgroup_memory_limit("4:memory:/\n", root), 9223372036854771712u);
  EXPECT_EQ(cgroup_memory_limit("4:memory:/elsewhere\n", root), 9223372036854771712u);
  put("/slice/a/memory.max", "max\n");
  put("/slice/b/memory.max", "1073741824\n");
  EXPECT_EQ(cgroup_memory_limit("0::/slice/a\n", root), 0u);
  EXPECT_EQ(cgroup_memory_limit("0::/slice/b\n", root), 1073741824u);
  put("/slice/c/memory.max", "12abc\n");
  EXPECT_EQ(cgroup_memory_limit("0::/slice/c\n", root), 0u);
  EXPECT_EQ(cgroup_memory_limit("0::/slice/b/../b\n", root), 0u);
  EXPECT_EQ(cgroup_memory_limit("junk", root), 0u);
  EXPECT_EQ(cgroup_memory_limit("", root), 0u);
  // This machine's answer is at most its physical memory.
  EXPECT_GT(host_memory_bytes(), 0u);
}

}  // namespace
}  // namespace plexus::engine
