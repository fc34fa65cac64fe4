// End-to-end across emulated hosts: plexus-train with D4 on 2 hosts x 2 ranks
// (scripts/emulated-cluster.sh: each host a network namespace, links shaped to 2 Gbit/s, libfabric
// tcp between the hosts, the cost model free to pick the hierarchical allreduce) trains exactly as
// D4 on one host under plexus-run -n 4: for a fixed seed, model and global batch, the 20 per-step
// losses agree within 1e-4 relative. Skips when the script cannot create namespaces (exit 77).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/e2e/metrics_losses.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

class EmulatedTrain : public ::testing::Test {
 protected:
  // The placement matrix's model: 6 blocks x 32 dims x 2 heads, context 16, global batch 8.
  std::vector<std::string> train_args(const std::string& name) const {
    return {PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--placement", "D4", "--n-layer", "6",
            "--n-head", "2", "--n-embd", "32", "--seq-len", "16", "--batch-size", "8",
            "--steps", "20", "--lr", "1e-3", "--warmup-steps", "5", "--val-every", "0",
            "--log-every", "5", "--checkpoint", "", "--metrics-file", metrics(name)};
  }
  std::string metrics(const std::string& name) const { return corpus_.path(name + ".jsonl"); }

  std::vector<double> losses(const std::string& name) const {
    return metrics_losses(metrics(name));
  }

  CorpusFolder corpus_{"plexus_emulated_train"};
};

TEST_F(EmulatedTrain, D4OnTwoHostsLosesAsOnOneHost) {
  std::vector<std::string> cluster = {EMULATED_CLUSTER_SCRIPT, "--hosts", "2",
                                      "--ranks-per-host", "2", "--rate", "2gbit",
                                      "--timeout", "240", "--"};
  const std::vector<std::string> args = train_args("two_hosts");
  cluster.insert(cluster.end(), args.begin(), args.end());
  ProcessResult two = run_process(cluster, 300, {"PLEXUS_TIMEOUT_MS=120000"});
  if (two.exited && two.exit_code == 77) GTEST_SKIP() << two.err;
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  EXPECT_NE((two.out + two.err).find("emulated-cluster: 2 hosts"), std::string::npos) << two.err;

  std::vector<std::string> one = {PLEXUS_RUN_PATH, "-n", "4", "--"};
  const std::vector<std::string> one_args = train_args("one_host");
  one.insert(one.end(), one_args.begin(), one_args.end());
  ProcessResult ref = run_process(one, 300);
  ASSERT_EQ(ref.exit_code, 0) << ref.out << ref.err;

  const std::vector<double> a = losses("one_host"), b = losses("two_hosts");
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_LT(a.back(), a.front() - 0.5) << "the model did not learn";
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::fabs(a[i] - b[i]) / std::fabs(a[i]), 1e-4)
        << "step " << i + 1 << ": one host " << a[i] << ", two emulated hosts " << b[i];
  }
}

}  // namespace
}  // namespace plexus::test
