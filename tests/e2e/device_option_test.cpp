// End-to-end: plexus-train's --device and --autocast on any machine. A device that cannot be
// used stops every rank at start with exit code 2 and a message naming the rank and the reason
// (here CUDA_VISIBLE_DEVICES is emptied, so even a GPU machine has no device to give); bad
// values are refused before the launcher's ranks train; the CPU run logs its device and labels
// its memory pools honestly. tests/e2e/gpu_train_test.cpp trains on a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/device/cpu_bf16_gemm.h"
#include "engine/device/device.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class DeviceOption : public ::testing::Test {
 protected:
  std::vector<std::string> train_args(const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "1",
                                     "--n-head", "2", "--n-embd", "16", "--seq-len", "16",
                                     "--batch-size", "4", "--steps", "2", "--val-every", "0",
                                     "--checkpoint", ""};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  static std::vector<std::string> launch(int n, std::vector<std::string> program) {
    std::vector<std::string> argv = {PLEXUS_RUN_PATH, "-n", std::to_string(n), "--"};
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
  }

  CorpusFolder corpus_{"plexus-device-option"};
};

// What select_compute_device says for cuda with no device visible.
std::string no_device_message() {
  if (!engine::cuda_compiled()) {
    return "--device cuda: this build has no CUDA (configure with the CUDA toolkit installed)";
  }
  return "--device cuda: no CUDA device: ";
}

TEST_F(DeviceOption, CudaWithoutADeviceExitsTwoNamingEachRank) {
  ProcessResult r = run_process(launch(2, train_args({"--placement", "D2", "--device", "cuda"})),
                                120, {"CUDA_VISIBLE_DEVICES="});
  const std::string out = r.out + r.err;
  ASSERT_FALSE(r.timed_out) << out;
  EXPECT_EQ(r.exit_code, 2) << out;
  EXPECT_THAT(out, HasSubstr("plexus-train: rank 0: " + no_device_message()));
  EXPECT_THAT(out, HasSubstr("plexus-train: rank 1: " + no_device_message()));
  EXPECT_THAT(out, Not(HasSubstr("step ")));  // nothing trained
}

// --autocast bf16 on the CPU: on a processor with AVX512-BF16 the linear layers run in bf16
// (fp32 sums) and 200 steps of the default model on Moby-Dick reach a validation loss within 2%
// of fp32's (observed: under 0.5%); elsewhere the rank is refused with exit code 2, by name.
TEST_F(DeviceOption, Bf16AutocastOnTheCpuTrainsLikeFp32OrIsRefused) {
  if (!engine::cpu_bf16_gemm_supported()) {
    ProcessResult r = run_process(train_args({"--autocast", "bf16"}), 60);
    const std::string out = r.out + r.err;
    ASSERT_FALSE(r.timed_out) << out;
    EXPECT_EQ(r.exit_code, 2) << out;
    EXPECT_THAT(out, HasSubstr("plexus-train: rank 0: --autocast bf16 on --device cpu needs a "
                               "processor with AVX512-BF16 (this one has none)"));
    GTEST_SKIP() << "this processor has no AVX512-BF16: only the refusal was checked";
  }
  const std::string data = std::string(PLEXUS_SOURCE_DIR) + "/data/moby_dick.txt";
  if (!std::ifstream(data).good()) GTEST_SKIP() << data << " missing (scripts/fetch-data.sh)";
  double val_loss[2] = {0.0, 0.0};
  const char* modes[2] = {"none", "bf16"};
  for (int i = 0; i < 2; ++i) {
    ProcessResult r = run_process({PLEXUS_TRAIN_PATH, "--data", data, "--steps", "200",
                                   "--val-every", "200", "--log-every", "100", "--checkpoint", "",
                                   "--autocast", modes[i]},
                                  600);
    const std::string out = r.out + r.err;
    ASSERT_EQ(r.exit_code, 0) << out;
    EXPECT_THAT(out, ContainsRegex(std::string("plexus-train: device cpu \\(OpenBLAS, .*\\), "
                                               "autocast ") +
                                   modes[i]));
    const std::string key = "step   200 | validation loss ";
    const size_t at = out.find(key);
    ASSERT_NE(at, std::string::npos) << out;
    val_loss[i] = std::stod(out.substr(at + key.size()));
  }
  EXPECT_GT(val_loss[0], 1.0);  // trained, not diverged: about 2.3 after 200 steps
  EXPECT_LT(val_loss[0], 3.0);
  EXPECT_NEAR(val_loss[1], val_loss[0], 0.02 * val_loss[0])
      << "fp32 " << val_loss[0] << ", bf16 " << val_loss[1];
  EXPECT_NE(val_loss[1], val_loss[0]);  // the bf16 products did run
}

TEST_F(DeviceOption, UnknownValuesExitTwoBeforeTraining) {
  ProcessResult device = run_process(train_args({"--device", "gpu"}), 60);
  EXPECT_EQ(device.exit_code, 2) << (device.out + device.err);
  EXPECT_THAT(device.err, HasSubstr("plexus-train: --device \"gpu\" is not one of cpu, cuda"));
  // A value with terminal escapes is printed escaped, never raw.
  ProcessResult escaped = run_process(train_args({"--device", "\x1b[31mred\x07"}), 60);
  EXPECT_EQ(escaped.exit_code, 2) << escaped.err;
  EXPECT_THAT(escaped.err, HasSubstr("--device \"\\x1b[31mred\\x07\" is not one of"));
  EXPECT_EQ(escaped.err.find('\x1b'), std::string::npos) << escaped.err;
  ProcessResult autocast = run_process(train_args({"--autocast", "fp8"}), 60);
  EXPECT_EQ(autocast.exit_code, 2) << (autocast.out + autocast.err);
  EXPECT_THAT(autocast.err, HasSubstr("plexus-train: --autocast \"fp8\" is not one of none, bf16"));
  ProcessResult sample = run_process(
      {PLEXUS_TRAIN_PATH, "--sample", "--device", "cuda", "--checkpoint", "/nonexistent.ckpt"},
      60, {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(sample.exit_code, 2) << (sample.out + sample.err);
  EXPECT_THAT(sample.err, HasSubstr("plexus-train: " + no_device_message()));
}

TEST_F(DeviceOption, CpuRunLogsItsDeviceAndLabelsTheDevicePool) {
  const std::string report = corpus_.path("mem-{rank}.json");
  ProcessResult r = run_process(
      launch(2, train_args({"--placement", "D2", "--device", "cpu", "--memory-report", report})),
      120);
  const std::string out = r.out + r.err;
  ASSERT_EQ(r.exit_code, 0) << out;
  EXPECT_THAT(out, ContainsRegex("plexus-train: device cpu \\(OpenBLAS, [A-Za-z0-9]+ kernels, "
                                  "[0-9]+ threads?\\), autocast none"));
  EXPECT_THAT(out, HasSubstr("plexus-train: memory peaks (rank 0), the device pool in host "
                             "memory (--device cpu)"));
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(corpus_.path("mem-" + std::to_string(rank) + ".json"));
    ASSERT_TRUE(in.good()) << rank;
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j.at("compute_device"), "cpu") << rank;
    EXPECT_GT(j.at("memory").at("device").at("peak").at("parameters").get<int64_t>(), 0) << rank;
  }
}

}  // namespace
}  // namespace plexus::test
