// compute_device_test.cpp - choosing the compute device (--device, --autocast): parsing, the
// messages select_compute_device gives where cuda cannot be used (no CUDA in the build, or no
// GPU), the GPU ordinal of a rank, and the CPU path of what now dispatches on the device (the
// allocators, the fill and the rescale, AdamW, the degree-1 vocabulary layers), each against a
// closed form or the plain host loop it replaced, bit for bit. Runs on every machine: it never
// selects cuda successfully (tests/e2e/gpu_train_test.cpp trains on the GPU).
#include "engine/device/compute.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/device/cpu_bf16_gemm.h"
#include "engine/device/device.h"
#include "engine/memory/compute_fill.h"
#include "engine/memory/compute_vector.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/model/layers/encoder.h"
#include "engine/model/layers/softmax_crossentropy.h"
#include "engine/model/rng.h"
#include "engine/model/tp_vocab.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"
#include "engine/train/device_choice.h"

namespace plexus::engine {
namespace {

std::vector<float> normal_values(size_t n, uint64_t seed, double scale = 1.0) {
  NormalSampler normal(seed);
  std::vector<float> out(n);
  for (float& x : out) x = static_cast<float>(scale * normal.next());
  return out;
}

bool bitwise_equal(const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return false;
  }
  return true;
}

// The message select_compute_device gives for cuda on a machine where cuda cannot be used, or
// "" where it can (a CUDA build with a GPU).
std::string expected_no_cuda_prefix() {
  if (!cuda_compiled()) {
    return "--device cuda: this build has no CUDA (configure with the CUDA toolkit installed)";
  }
  std::string why;
  if (cuda_device_count(&why) == 0) return "--device cuda: no CUDA device: " + why;
  return "";
}

// A parser of a two-valued option and its name function: `parse` takes each name to its value
// (from the other value), `name` gives the names back, and every bad text is refused with the
// output left as it was.
template <typename T>
void expect_two_names(bool (*parse)(std::string_view, T*), const char* (*name)(T),
                      std::pair<const char*, T> first, std::pair<const char*, T> second,
                      std::initializer_list<const char*> bad_texts) {
  T out = second.second;
  EXPECT_TRUE(parse(first.first, &out));
  EXPECT_EQ(out, first.second);
  EXPECT_TRUE(parse(second.first, &out));
  EXPECT_EQ(out, second.second);
  for (const char* bad : bad_texts) {
    out = first.second;
    EXPECT_FALSE(parse(bad, &out)) << "'" << bad << "'";
    EXPECT_EQ(out, first.second) << "'" << bad << "' changed the output";
  }
  EXPECT_STREQ(name(first.second), first.first);
  EXPECT_STREQ(name(second.second), second.first);
}

TEST(ComputeDevice, ParsesTheTwoDevicesAndRejectsAnythingElse) {
  expect_two_names(parse_compute_device, compute_device_name, {"cpu", ComputeDevice::kCpu},
                   {"cuda", ComputeDevice::kCuda}, {"gpu", "CUDA", "", "cuda:0", "cpu "});
}

TEST(ComputeDevice, ParsesTheAutocastModes) {
  expect_two_names(parse_autocast, autocast_name, {"none", Autocast::kNone},
                   {"bf16", Autocast::kBf16}, {"fp16", "BF16", "", "bfloat16"});
}

TEST(ComputeDevice, CpuIsTheDefaultAndSelectsWithoutAutocast) {
  EXPECT_EQ(compute_device(), ComputeDevice::kCpu);
  EXPECT_EQ(compute_autocast(), Autocast::kNone);
  EXPECT_FALSE(on_cuda());
  EXPECT_EQ(select_compute_device(ComputeDevice::kCpu, 0, Autocast::kNone), "");
  EXPECT_EQ(compute_device(), ComputeDevice::kCpu);
}

TEST(ComputeDevice, Bf16AutocastOnTheCpuNeedsAvx512Bf16) {
  const std::string error = select_compute_device(ComputeDevice::kCpu, 0, Autocast::kBf16);
  EXPECT_EQ(compute_device(), ComputeDevice::kCpu);
  if (cpu_bf16_gemm_supported()) {
    EXPECT_EQ(error, "");
    EXPECT_EQ(compute_autocast(), Autocast::kBf16);
  } else {
    EXPECT_EQ(error,
              "--autocast bf16 on --device cpu needs a processor with AVX512-BF16 (this one has "
              "none); use --autocast none or --device cuda");
    EXPECT_EQ(compute_autocast(), Autocast::kNone);
  }
  EXPECT_EQ(select_compute_device(ComputeDevice::kCpu, 0, Autocast::kNone), "");
  EXPECT_EQ(compute_autocast(), Autocast::kNone);
}

// Without CUDA in the build or without a GPU the exact reason; with a GPU, an ordinal past the
// last device. Either way the CPU stays selected.
TEST(ComputeDevice, CudaThatCannotBeUsedIsRefusedWithTheReason) {
  const std::string expected = expected_no_cuda_prefix();
  if (!expected.empty()) {
    EXPECT_EQ(select_compute_device(ComputeDevice::kCuda, 0, Autocast::kNone), expected);
    EXPECT_EQ(select_compute_device(ComputeDevice::kCuda, 0, Autocast::kBf16), expected);
    EXPECT_EQ(select_rank_device(ComputeDevice::kCuda, Autocast::kNone, 3), expected);
  } else {
    std::string why;
    const int count = cuda_device_count(&why);
    EXPECT_EQ(select_compute_device(ComputeDevice::kCuda, count, Autocast::kNone),
              "--device cuda: ordinal " + std::to_string(count) + " of " +
                  std::to_string(count) + " devices");
    EXPECT_EQ(select_compute_device(ComputeDevice::kCuda, -1, Autocast::kNone),
              "--device cuda: ordinal -1 of " + std::to_string(count) + " devices");
  }
  EXPECT_EQ(compute_device(), ComputeDevice::kCpu);
  EXPECT_EQ(compute_autocast(), Autocast::kNone);
}

TEST(ComputeDevice, NoCudaBuildSaysSo) {
  if (cuda_compiled()) {
    std::string why;
    // A CUDA build reports devices or why there are none, never "no CUDA in this build".
    const int count = cuda_device_count(&why);
    EXPECT_TRUE(count > 0 || why.find("this build has no CUDA") == std::string::npos) << why;
    return;
  }
  std::string why;
  EXPECT_EQ(cuda_device_count(&why), 0);
  EXPECT_EQ(why, "this build has no CUDA (configure with -DPLEXUS_CUDA=ON and a CUDA toolkit)");
}

TEST(DeviceChoice, GpuOrdinalIsTheLocalRankModuloTheVisibleDevices) {
  EXPECT_EQ(gpu_ordinal(0, 1), 0);
  EXPECT_EQ(gpu_ordinal(3, 1), 0);  // four ranks on one GPU
  EXPECT_EQ(gpu_ordinal(3, 2), 1);
  EXPECT_EQ(gpu_ordinal(5, 4), 1);
  EXPECT_EQ(gpu_ordinal(7, 8), 7);
  EXPECT_EQ(gpu_ordinal(2, 0), 0);   // none visible: select_compute_device says why
  EXPECT_EQ(gpu_ordinal(-1, 2), 0);  // no local rank known
}

TEST(DeviceChoice, CpuRankDescribesItsDeviceAndPool) {
  EXPECT_EQ(select_rank_device(ComputeDevice::kCpu, Autocast::kNone, 5), "");
  const std::string line = describe_compute_device(0);
  EXPECT_EQ(line.rfind(std::string("device cpu (OpenBLAS, ") + openblas_get_corename() +
                           " kernels, 1 thread), autocast none",
                       0),
            0u)
      << line;
  EXPECT_EQ(device_pool_description(0), "host memory (--device cpu)");
}

// ---- the CPU path of what dispatches --------------------------------------------------------

TEST(CpuPath, ComputeVectorAndTrackedBufferUseHostMemory) {
  ComputeVector<float> v(1000, 1.5f);
  EXPECT_FALSE(v.get_allocator().managed());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], 1.5f) << i;
  v.resize(5000);  // grows on the heap; new elements value-initialized
  EXPECT_EQ(v[999], 1.5f);
  EXPECT_EQ(v[4999], 0.0f);
  ComputeVector<float> moved = std::move(v);
  EXPECT_FALSE(moved.get_allocator().managed());
  EXPECT_EQ(moved.size(), 5000u);

  MemoryTracker tracker;
  TrackedBuffer device(3000, MemoryPool::kDevice, MemoryCategory::kActivations, true, &tracker);
  TrackedBuffer host(3000, MemoryPool::kHost, MemoryCategory::kActivations, true, &tracker);
  EXPECT_FALSE(device.managed());
  EXPECT_FALSE(host.managed());
  device.fill(2.0f);
  device.release(1000, 1000);
  EXPECT_EQ(tracker.current(MemoryPool::kDevice, MemoryCategory::kActivations), 2000 * 4);
  device.commit(1000, 1000);  // zero-filled again
  EXPECT_EQ(device[999], 2.0f);
  EXPECT_EQ(device[1000], 0.0f);
  EXPECT_EQ(device[1999], 0.0f);
  EXPECT_EQ(device[2000], 2.0f);
}

TEST(CpuPath, FillAndRescaleAreThePlainLoops) {
  std::vector<float> x = normal_values(1001, 7);
  compute_fill(x.data() + 1, 999, -0.25f);
  EXPECT_NE(x[0], -0.25f);
  for (size_t i = 1; i < 1000; ++i) ASSERT_EQ(x[i], -0.25f) << i;
  EXPECT_NE(x[1000], -0.25f);
  compute_fill(nullptr, 0, 1.0f);  // nothing to do

  const std::vector<float> g0 = normal_values(777, 11);
  std::vector<float> g = g0, want = g0;
  scale_gradients(g.data(), g.size(), 0.37f);
  for (float& w : want) w *= 0.37f;
  EXPECT_TRUE(bitwise_equal(g.data(), want.data(), g.size()));
  scale_gradients(g.data(), g.size(), 1.0f);  // no-op
  EXPECT_TRUE(bitwise_equal(g.data(), want.data(), g.size()));
  // grad_sum_squares of 3,4 and clip to 1: norm 5, factor 1 / (5 + 1e-6)
  std::vector<float> c = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(grad_sum_squares(c.data(), 2), 25.0);
  EXPECT_EQ(grad_sum_squares(c.data(), 0), 0.0);
  EXPECT_FLOAT_EQ(clip_grad_norm(c.data(), 2, 1.0f), 5.0f);
  EXPECT_FLOAT_EQ(c[0], static_cast<float>(3.0 / (5.0 + 1e-6)));
}

TEST(CpuPath, AdamWStepIsTheHostStepBitForBit) {
  const size_t n = 513;
  AdamWConfig config;
  config.lr = 3e-3f;
  std::vector<float> p1 = normal_values(n, 1), g = normal_values(n, 2, 0.1);
  std::vector<float> m1(n, 0.0f), v1(n, 0.0f);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = static_cast<uint8_t>(i % 3 != 0);
  std::vector<float> p2 = p1, m2 = m1, v2 = v1;
  for (int64_t step = 1; step <= 3; ++step) {
    adamw_step(p1.data(), g.data(), m1.data(), v1.data(), n, step, config, mask.data());
    adamw_step_host(p2.data(), g.data(), m2.data(), v2.data(), n, step, config, mask.data());
  }
  EXPECT_TRUE(bitwise_equal(p1.data(), p2.data(), n));
  EXPECT_TRUE(bitwise_equal(m1.data(), m2.data(), n));
  EXPECT_TRUE(bitwise_equal(v1.data(), v2.data(), n));
  const std::vector<float> before = p2;
  adamw_step_host(p2.data(), g.data(), m2.data(), v2.data(), n, 0, config, nullptr);  // step < 1
  adamw_step_host(p2.data(), g.data(), m2.data(), v2.data(), 0, 4, config, nullptr);  // n == 0
  EXPECT_TRUE(bitwise_equal(p2.data(), before.data(), n));
}

// With tensor degree 1 the vocabulary layers' backward passes are the single-process layers
// (so they run on the device): the same numbers as the loops they replaced.
TEST(CpuPath, DegreeOneVocabularyBackwardIsTheSingleProcessLayer) {
  const int B = 2, T = 3, C = 8, V = 11;
  const VocabSlice vocab{0, V, V};
  const TpGroup tp;  // degree 1
  const std::vector<int32_t> tokens = {0, 5, 10, 3, 3, 7};
  const std::vector<int32_t> targets = {1, -1, 10, 0, 4, 4};
  const std::vector<float> dout = normal_values(B * T * C, 3);
  std::vector<float> dwte_a = normal_values(V * C, 4), dwpe_a = normal_values(T * C, 5);
  std::vector<float> dwte_b = dwte_a, dwpe_b = dwpe_a;
  tp_embedding_backward(dwte_a.data(), dwpe_a.data(), dout.data(), tokens.data(), vocab, B, T,
                        C, tp);
  // the loop tp_embedding_backward ran before: every row is local here
  for (int bt = 0; bt < B * T; ++bt) {
    for (int c = 0; c < C; ++c) {
      dwte_b[tokens[bt] * C + c] += dout[bt * C + c];
      dwpe_b[(bt % T) * C + c] += dout[bt * C + c];
    }
  }
  EXPECT_TRUE(bitwise_equal(dwte_a.data(), dwte_b.data(), dwte_a.size()));
  EXPECT_TRUE(bitwise_equal(dwpe_a.data(), dwpe_b.data(), dwpe_a.size()));

  const std::vector<float> probs = normal_values(B * T * V, 6);
  std::vector<float> dl_a = normal_values(B * T * V, 8), dl_b = dl_a;
  tp_crossentropy_backward(dl_a.data(), probs.data(), targets.data(), 0.25f, vocab, B, T, tp);
  for (int r = 0; r < B * T; ++r) {
    if (targets[r] < 0) continue;
    for (int i = 0; i < V; ++i) dl_b[r * V + i] += 0.25f * probs[r * V + i];
    dl_b[r * V + targets[r]] -= 0.25f;
  }
  EXPECT_TRUE(bitwise_equal(dl_a.data(), dl_b.data(), dl_a.size()));
}

}  // namespace
}  // namespace plexus::engine
