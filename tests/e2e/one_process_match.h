// one_process_match.h - the check that a run trained as the one-process reference did, shared
// by the placement matrix and the memory plugins' end-to-end tests: both ran 20 steps, the
// reference learned, every loss agrees to 1e-4 relative, and every saved parameter to 1e-4
// relative plus 1e-5 absolute. AdamW divides by the root of the second moment, so a parameter
// whose gradients are tiny moves by about lr per step whatever their rounding: the absolute
// 1e-5 is 1% of one step at lr 1e-3.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "tests/e2e/metrics_losses.h"

namespace plexus::test {

// The files of one plexus-train run: its --metrics-file and its --save-params checkpoint.
struct RunFiles {
  std::string metrics;
  std::string params;
};

// A run to compare with the reference: its name (its files' stem and the test's), and the ranks
// and plexus-train arguments it runs with.
struct OneProcessCase {
  std::string name;
  int ranks;
  std::vector<std::string> args;
  friend void PrintTo(const OneProcessCase& c, std::ostream* os) { *os << c.name; }
};

// The "params" section of the checkpoint at path; empty when it has none.
inline std::vector<float> saved_params(const std::string& path) {
  engine::Checkpoint ck = engine::load_checkpoint(path);
  const std::vector<float>* p = ck.find("params");
  return p ? *p : std::vector<float>{};
}

// Expects run `name` (whose output, for the failure message, is `out`) to match `one`.
inline void expect_as_one_process(const RunFiles& one, const std::string& name,
                                  const RunFiles& run, const std::string& out = "") {
  const std::vector<double> a = metrics_losses(one.metrics), b = metrics_losses(run.metrics);
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u) << out;
  EXPECT_LT(a.back(), a.front() - 0.5) << "the model did not learn";
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::fabs(a[i] - b[i]) / std::fabs(a[i]), 1e-4)
        << "step " << i + 1 << ": one process " << a[i] << ", " << name << " " << b[i];
  }
  const std::vector<float> p = saved_params(one.params), q = saved_params(run.params);
  ASSERT_EQ(p.size(), q.size());
  ASSERT_GT(p.size(), 80000u);
  size_t bad = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (std::fabs(p[i] - q[i]) > 1e-4 * std::fabs(p[i]) + 1e-5 && ++bad <= 5) {
      ADD_FAILURE() << name << ": parameter " << i << ": one process " << p[i] << ", " << q[i];
    }
  }
  EXPECT_EQ(bad, 0u) << name << ": parameters that differ";
}

}  // namespace plexus::test
