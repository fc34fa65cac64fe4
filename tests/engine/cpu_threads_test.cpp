// cpu_threads_test.cpp - the CPU layers' thread pool (engine/device/cpu_threads.h): every item
// runs exactly once whatever the threads, grain, nesting or concurrent callers; idle workers
// sleep; and every layer that splits its work gives the same results with 1 and 3 threads.
#include "engine/device/cpu_threads.h"

#include <cblas.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/config/blas_threads.h"
#include "engine/model/layers/attention.h"
#include "engine/model/layers/encoder.h"
#include "engine/model/layers/gelu.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/layers/residual.h"
#include "engine/model/layers/softmax_crossentropy.h"
#include "engine/model/rng.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"

namespace plexus::engine {
namespace {

// Restores one thread (the state every other test expects) when a test ends.
class CpuThreads : public ::testing::Test {
 protected:
  void TearDown() override { set_cpu_threads(1); }
};

std::vector<int> counts_after(size_t n, size_t grain) {
  std::vector<std::atomic<int>> hits(n);
  parallel_for(n, grain, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  std::vector<int> out;
  for (auto& h : hits) out.push_back(h.load());
  return out;
}

TEST_F(CpuThreads, EveryItemRunsOnceForEveryThreadCountAndGrain) {
  for (int threads : {1, 2, 3, 4}) {
    EXPECT_EQ(set_cpu_threads(threads), threads);
    EXPECT_EQ(cpu_threads(), threads);
    for (size_t n : {0u, 1u, 2u, 3u, 7u, 64u, 1000u, 4099u}) {
      for (size_t grain : {0u, 1u, 5u, 1024u}) {
        const std::vector<int> hits = counts_after(n, grain);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[i], 1) << "threads " << threads << " n " << n << " grain " << grain
                                << " item " << i;
        }
      }
    }
  }
  EXPECT_EQ(set_cpu_threads(0), 1);  // below 1 means 1
}

TEST_F(CpuThreads, RangesAreContiguousAndAtLeastTheGrain) {
  set_cpu_threads(4);
  std::vector<std::pair<size_t, size_t>> ranges(8);
  std::atomic<int> count{0};
  parallel_for(1000, 300, [&](size_t b, size_t e) { ranges[count.fetch_add(1)] = {b, e}; });
  ASSERT_EQ(count.load(), 3);  // 1000 / 300 parts at most
  ranges.resize(3);
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(ranges[0].first, 0u);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_GE(ranges[i].second - ranges[i].first, 300u);
    if (i > 0) {
      EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
    }
  }
  EXPECT_EQ(ranges.back().second, 1000u);
}

TEST_F(CpuThreads, NestedAndConcurrentCallsRunEveryItemOnce) {
  set_cpu_threads(3);
  std::vector<std::atomic<int>> hits(64 * 64);
  parallel_for(64, 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      parallel_for(64, 1, [&](size_t b2, size_t e2) {  // runs on the calling thread
        for (size_t j = b2; j < e2; ++j) hits[i * 64 + j].fetch_add(1);
      });
    }
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);

  std::vector<std::atomic<int>> a(50000), b(50000);
  auto fill = [](std::vector<std::atomic<int>>& v) {
    for (int round = 0; round < 200; ++round) {
      parallel_for(v.size(), 100, [&](size_t s, size_t e) {
        for (size_t i = s; i < e; ++i) v[i].fetch_add(1);
      });
    }
  };
  std::thread other([&] { fill(b); });
  fill(a);
  other.join();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].load(), 200);
    ASSERT_EQ(b[i].load(), 200);
  }
}

// The state letter of every plexus-cpu-* thread of this process, from /proc.
std::vector<char> worker_states() {
  std::vector<char> states;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return states;
  while (dirent* ent = readdir(dir)) {
    const std::string task = std::string("/proc/self/task/") + ent->d_name;
    std::ifstream comm(task + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind("plexus-cpu-", 0) != 0) continue;
    std::ifstream stat(task + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size()) states.push_back(line[close + 2]);
  }
  closedir(dir);
  return states;
}

TEST_F(CpuThreads, IdleWorkersSleep) {
  set_cpu_threads(3);
  counts_after(1000, 1);
  // they poll for kSpinMicros (100 us) after a part, then sleep on a futex: within 2 s (a loaded
  // host may not run them at once) both must be asleep
  std::vector<char> states;
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    states = worker_states();
    if (states.size() == 2 && states[0] == 'S' && states[1] == 'S') break;
  }
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0], 'S');
  EXPECT_EQ(states[1], 'S');
  set_cpu_threads(1);
  EXPECT_TRUE(worker_states().empty());  // stopped and joined
}

// The planner and the model both ask for the thread count (with OPENBLAS_NUM_THREADS set, as
// plexus-run sets it): the second answer must not be OpenBLAS's count after it was set to 1.
TEST_F(CpuThreads, ThreadChoiceIsMadeOnceAndKept) {
  setenv("OPENBLAS_NUM_THREADS", "2", 1);
  const int expected = std::max(1, openblas_get_num_threads());
  const int first = choose_blas_threads(1);
  EXPECT_EQ(first, expected);
  EXPECT_EQ(openblas_get_num_threads(), 1);  // every part calls one-threaded OpenBLAS
  EXPECT_EQ(cpu_threads(), first);
  EXPECT_EQ(choose_blas_threads(1), first);
  EXPECT_EQ(choose_blas_threads(4), first);
  EXPECT_EQ(cpu_threads(), first);
  unsetenv("OPENBLAS_NUM_THREADS");
}

std::vector<float> random_vector(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(2.0 * rng.uniform_open0() - 1.0);
  return v;
}

// Runs `step` (which fills its outputs from fixed inputs) with 1 and with 3 threads and
// requires bit-identical outputs, or (relative > 0) outputs within that relative difference.
void expect_same_with_threads(const char* what, const std::function<std::vector<float>()>& step,
                              float relative = 0.0f) {
  set_cpu_threads(1);
  const std::vector<float> one = step();
  set_cpu_threads(3);
  const std::vector<float> three = step();
  set_cpu_threads(1);
  ASSERT_EQ(one.size(), three.size()) << what;
  for (size_t i = 0; i < one.size(); ++i) {
    if (relative == 0.0f) {
      ASSERT_EQ(one[i], three[i]) << what << ": element " << i << " differs with 3 threads";
    } else {
      ASSERT_NEAR(one[i], three[i], relative * (1.0f + std::fabs(one[i])))
          << what << ": element " << i << " with 3 threads";
    }
  }
}

// The linear layer's products are split by rows (and output channels) into separate sgemm
// calls, and OpenBLAS sums a smaller matrix in another order: equal to float rounding
// (sums of 144 products of O(1) terms agree to 1e-4; a missing or doubled row would be off by
// O(1)). Every other layer gives the same bits.
TEST_F(CpuThreads, LayersGiveTheSameResultsWithOneAndThreeThreads) {
  openblas_set_num_threads(1);  // as choose_blas_threads sets it
  constexpr int B = 3, T = 40, C = 48, NH = 4, OC = 3 * C, V = 70;
  const size_t BT = static_cast<size_t>(B) * T;
  const std::vector<float> x = random_vector(BT * C, 1), w = random_vector(OC * C, 2);
  const std::vector<float> bias = random_vector(OC, 3), dout = random_vector(BT * OC, 4);
  const std::vector<float> dC = random_vector(BT * C, 5);
  expect_same_with_threads("matmul", [&] {
    std::vector<float> out(BT * OC), dinp(BT * C, 0.5f), dw(OC * C, 0.25f), db(OC, 1.0f);
    matmul_forward(out.data(), x.data(), w.data(), bias.data(), B, T, C, OC);
    matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), B, T, C,
                    OC);
    out.insert(out.end(), dinp.begin(), dinp.end());
    out.insert(out.end(), dw.begin(), dw.end());
    out.insert(out.end(), db.begin(), db.end());
    return out;
  }, 1e-4f);
  expect_same_with_threads("attention", [&] {
    const std::vector<float> qkv = random_vector(BT * 3 * C, 6);
    std::vector<float> out(BT * C), att(static_cast<size_t>(B) * NH * T * T);
    std::vector<float> dqkv(BT * 3 * C, 0.125f), scratch(static_cast<size_t>(T) * T);
    attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    attention_backward(dqkv.data(), scratch.data(), dC.data(), qkv.data(), att.data(), B, T, C,
                       NH);
    out.insert(out.end(), att.begin(), att.end());
    out.insert(out.end(), dqkv.begin(), dqkv.end());
    return out;
  });
  expect_same_with_threads("layernorm, gelu, residual", [&] {
    const std::vector<float> g = random_vector(C, 7), bb = random_vector(C, 8);
    std::vector<float> out(BT * C), mean(BT), rstd(BT), dx(BT * C, 0.5f), dg(C, 1.0f), dbb(C);
    layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), g.data(), bb.data(), B, T,
                      C);
    layernorm_backward(dx.data(), dg.data(), dbb.data(), dC.data(), x.data(), g.data(),
                       mean.data(), rstd.data(), B, T, C);
    std::vector<float> ge(BT * OC - 3), dge(BT * OC - 3, 0.25f);  // a tail of 1 float in 4
    gelu_forward(ge.data(), dout.data(), ge.size());
    gelu_backward(dge.data(), dout.data(), dout.data() + 3, dge.size());
    std::vector<float> r(BT * C), d1(BT * C, 1.0f), d2(BT * C, 2.0f);
    residual_forward(r.data(), x.data(), dC.data(), r.size());
    residual_backward(d1.data(), d2.data(), dC.data(), r.size());
    for (const auto* v : {&mean, &rstd, &dx, &dg, &dbb, &ge, &dge, &r, &d1, &d2}) {
      out.insert(out.end(), v->begin(), v->end());
    }
    return out;
  });
  expect_same_with_threads("encoder, softmax cross-entropy, adamw, grad norm", [&] {
    std::vector<int32_t> tokens(BT), targets(BT);
    for (size_t i = 0; i < BT; ++i) {
      tokens[i] = static_cast<int32_t>((i * 7) % 5);  // few tokens: many rows add into each
      targets[i] = i % 9 == 0 ? -1 : static_cast<int32_t>((i * 11) % V);
    }
    const std::vector<float> wte = random_vector(V * C, 9), wpe = random_vector(T * C, 10);
    std::vector<float> out(BT * C), dwte(V * C, 0.5f), dwpe(T * C, 0.25f);
    encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    encoder_backward(dwte.data(), dwpe.data(), dC.data(), tokens.data(), B, T, C);
    const std::vector<float> logits = random_vector(BT * V, 11);
    std::vector<float> losses(BT), probs(BT * V), dlogits(BT * V, 0.0f);
    const size_t counted = softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(),
                                                        targets.data(), B, T, V);
    softmax_crossentropy_backward(dlogits.data(), probs.data(), targets.data(), 0.01f, B, T, V);
    std::vector<float> params = random_vector(200000, 12), grads = random_vector(200000, 13);
    std::vector<float> m(200000, 0.0f), v(200000, 0.0f);
    AdamWConfig config;
    config.lr = 0.01f;
    config.weight_decay = 0.1f;
    adamw_step(params.data(), grads.data(), m.data(), v.data(), params.size(), 1, config, nullptr);
    const double sum_squares = grad_sum_squares(grads.data(), grads.size());
    for (const auto* vec : {&dwte, &dwpe, &losses, &probs, &dlogits, &params, &m, &v}) {
      out.insert(out.end(), vec->begin(), vec->end());
    }
    out.push_back(static_cast<float>(counted));
    out.push_back(static_cast<float>(sum_squares));
    out.push_back(static_cast<float>(sum_squares - static_cast<float>(sum_squares)));
    return out;
  });
}

}  // namespace
}  // namespace plexus::engine
