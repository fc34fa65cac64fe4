// End-to-end: plexus-train --evaluate and --predict (docs/evaluate-predict.md) on a tiny model
// trained a few steps on the synthetic corpus.
//
// Evaluate: the validation loss of one checkpoint under one process, D2, P2 and T2 (plexus-run,
// real ranks over the real transport) agrees within 1e-5 relative, and with the loss this test
// computes itself from the checkpoint (Gpt forward over every non-overlapping window of the
// validation split); the perplexity is exp(loss) and the token count the split's. Predict: one
// JSON line per input line, in order, continuations of --tokens bytes, the next-byte
// distribution sorted and equal to a forward pass of the checkpoint's model, greedy
// (--top-k 1) continuing with the most likely byte, and 2 ranks writing the single process's
// file byte for byte. Bad arguments exit 2 naming the argument.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint_model.h"
#include "engine/model/gpt.h"
#include "engine/train/token_sampling.h"
#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;

constexpr int kSeq = 16;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class EvaluatePredict : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_.make("plexus_evalpredict");
    ckpt_ = corpus_.path("model.ckpt");
    const ProcessResult r = run_process(
        {PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "2", "--n-head", "2",
         "--n-embd", "32", "--seq-len", std::to_string(kSeq), "--batch-size", "8", "--steps",
         "30", "--lr", "3e-3", "--warmup-steps", "5", "--val-every", "0", "--checkpoint", ckpt_},
        300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { corpus_.remove(); }

  static ProcessResult run(int ranks, std::vector<std::string> args) {
    args.insert(args.begin(), PLEXUS_TRAIN_PATH);
    if (ranks > 1) args.insert(args.begin(), {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"});
    return run_process(args, 300);
  }
  static std::string path(const std::string& name) { return corpus_.path(name); }

  static inline CorpusFolder corpus_;
  static inline std::string ckpt_;
};

TEST_F(EvaluatePredict, LossAgreesUnderEveryPlacementAndWithTheModel) {
  // The expected values, from the checkpoint and the corpus: every window [w*S, (w+1)*S) of
  // the last 10% of the bytes, targets shifted by one, the token-weighted mean in double.
  const std::string bytes = read_file(corpus_.data());
  const size_t val_begin = bytes.size() - bytes.size() / 10;
  const size_t windows = (bytes.size() - val_begin - 1) / kSeq;
  const engine::ModelCheckpoint ck = engine::load_model_checkpoint(ckpt_);
  engine::Gpt model(ck.config);
  std::copy(ck.params().begin(), ck.params().end(), model.params());
  double sum = 0;
  std::vector<int32_t> tokens(kSeq), targets(kSeq);
  for (size_t w = 0; w < windows; ++w) {
    for (int t = 0; t < kSeq; ++t) {
      tokens[t] = static_cast<uint8_t>(bytes[val_begin + w * kSeq + t]);
      targets[t] = static_cast<uint8_t>(bytes[val_begin + w * kSeq + t + 1]);
    }
    sum += static_cast<double>(model.forward(tokens.data(), targets.data(), 1, kSeq)) * kSeq;
  }
  const double expected = sum / static_cast<double>(windows * kSeq);

  const std::vector<std::pair<int, std::string>> placements = {
      {1, "D"}, {2, "D2"}, {2, "P2"}, {2, "T2"}};
  double first = 0;
  for (const auto& [ranks, placement] : placements) {
    SCOPED_TRACE(placement);
    const std::string metrics = path("eval_" + placement + ".json");
    const ProcessResult r = run(ranks, {"--evaluate", "--data", corpus_.data(), "--checkpoint",
                                        ckpt_, "--placement", placement, "--batch-size", "8",
                                        "--metrics-file", metrics});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("evaluate: checkpoint " + ckpt_ + " step 30: validation loss "));
    const nlohmann::json j = nlohmann::json::parse(read_file(metrics));
    const double loss = j.at("val_loss").get<double>();
    EXPECT_EQ(j.at("tokens").get<int64_t>(), static_cast<int64_t>(windows * kSeq));
    EXPECT_EQ(j.at("windows").get<int64_t>(), static_cast<int64_t>(windows));
    EXPECT_EQ(j.at("step").get<int64_t>(), 30);
    EXPECT_NEAR(j.at("perplexity").get<double>(), std::exp(loss), 1e-9 * std::exp(loss));
    EXPECT_NEAR(loss, expected, 1e-5 * expected);
    if (ranks == 1) first = loss;
    EXPECT_NEAR(loss, first, 1e-5 * first) << "relative to the single process";
    EXPECT_GT(loss, 0.5);  // trained 30 steps: well below ln 256, not zero
    EXPECT_LT(loss, 5.0);
  }
}

TEST_F(EvaluatePredict, PredictWritesOneLinePerInputMatchingTheModel) {
  const std::string input = path("prompts.txt");
  // Line 2 is empty; line 3 holds control and invalid UTF-8 bytes; no '\n' at the end.
  const std::vector<std::string> prompts = {"the whale", "captain of the", "",
                                            std::string("sea\x01\xff\xfe ship\r"), "a"};
  {
    std::ofstream out(input, std::ios::binary);
    for (size_t i = 0; i < prompts.size(); ++i) out << prompts[i] << (i + 1 < prompts.size() ? "\n" : "");
  }
  const std::vector<std::string> common = {"--predict", input, "--checkpoint", ckpt_,
                                           "--tokens", "12", "--predict-top", "5",
                                           "--sample-seed", "7"};
  auto with_output = [&](const std::string& out) {
    std::vector<std::string> a = common;
    a.insert(a.end(), {"--predict-output", out});
    return a;
  };
  const ProcessResult one = run(1, with_output(path("one.jsonl")));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const ProcessResult two = run(2, with_output(path("two.jsonl")));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const std::string text = read_file(path("one.jsonl"));
  EXPECT_EQ(read_file(path("two.jsonl")), text) << "2 ranks must write the same bytes";

  const engine::ModelCheckpoint ck = engine::load_model_checkpoint(ckpt_);
  engine::Gpt model(ck.config);
  std::copy(ck.params().begin(), ck.params().end(), model.params());
  std::istringstream lines(text);
  std::string line;
  size_t index = 0;
  while (std::getline(lines, line)) {
    SCOPED_TRACE(index);
    ASSERT_LT(index, prompts.size());
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("line").get<size_t>(), index);
    EXPECT_EQ(j.at("continuation_bytes").size(), 12u);
    // The model's distribution after the prompt ("\n" for an empty one), from this process.
    std::vector<int32_t> context(prompts[index].begin(), prompts[index].end());
    for (int32_t& t : context) t = static_cast<uint8_t>(t);
    if (context.empty()) context.push_back('\n');
    const float* logits = engine::next_token_logits(model, context);
    const double top = *std::max_element(logits, logits + 256);
    double total = 0;
    for (int b = 0; b < 256; ++b) total += std::exp(logits[b] - top);
    const nlohmann::json& next = j.at("next_byte");
    ASSERT_EQ(next.size(), 5u);
    double previous = 1.0, listed = 0;
    for (const nlohmann::json& e : next) {
      const double p = e.at("p").get<double>();
      const int b = e.at("byte").get<int>();
      EXPECT_GT(p, 0.0);
      EXPECT_LE(p, previous);  // most likely first
      previous = p;
      listed += p;
      EXPECT_NEAR(p, std::exp(logits[b] - top) / total, 1e-6);
    }
    EXPECT_LE(listed, 1.0 + 1e-9);
    EXPECT_EQ(next[0].at("byte").get<int>(),
              static_cast<int>(std::max_element(logits, logits + 256) - logits));
    ++index;
  }
  EXPECT_EQ(index, prompts.size());
  EXPECT_EQ(nlohmann::json::parse(text.substr(0, text.find('\n'))).at("prompt"), "the whale");

  // Greedy (--top-k 1): the first continuation byte is the most likely next byte.
  std::vector<std::string> greedy = with_output(path("greedy.jsonl"));
  greedy.insert(greedy.end(), {"--top-k", "1"});
  const ProcessResult g = run(1, greedy);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  std::istringstream glines(read_file(path("greedy.jsonl")));
  while (std::getline(glines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("continuation_bytes")[0], j.at("next_byte")[0].at("byte"));
  }
}

TEST_F(EvaluatePredict, BadArgumentsExit2NamingTheArgument) {
  const std::string input = path("bad_prompts.txt");
  std::ofstream(input) << "the\n";
  struct Case {
    int ranks;
    std::vector<std::string> args;
    std::string named;
  };
  const std::string& data = corpus_.data();
  const std::vector<Case> cases = {
      {1, {"--evaluate", "--data", data, "--checkpoint", path("missing.ckpt")}, "--checkpoint"},
      {1, {"--evaluate", "--data", data, "--checkpoint", ""}, "--checkpoint"},
      {1, {"--evaluate", "--data", data, "--checkpoint", ckpt_, "--metrics-file",
           path("no/such/folder.json")}, "--metrics-file"},
      {1, {"--evaluate", "--data", data, "--checkpoint", ckpt_, "--checkpoint-dir",
           path("dir")}, "--checkpoint-dir"},
      {1, {"--predict", path("missing.txt"), "--predict-output", path("o.jsonl"), "--checkpoint",
           ckpt_}, "--predict"},
      {1, {"--predict", input, "--predict-output", path("no/such/o.jsonl"), "--checkpoint",
           ckpt_}, "--predict-output"},
      {1, {"--predict", input, "--checkpoint", ckpt_}, "--predict-output"},
      {1, {"--predict", input, "--predict-output", path("o.jsonl"), "--checkpoint", ckpt_,
           "--predict-top", "0"}, "--predict-top"},
      {1, {"--predict", input, "--predict-output", path("o.jsonl"), "--checkpoint",
           path("missing.ckpt")}, "--checkpoint"},
      {2, {"--predict", input, "--predict-output", path("o.jsonl"), "--checkpoint", ckpt_,
           "--placement", "P2"}, "--placement 'P2'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.named);
    const ProcessResult r = run(c.ranks, c.args);
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.named));
  }
}

}  // namespace
}  // namespace plexus::test
