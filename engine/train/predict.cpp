// predict.cpp - see predict.h.
#include "engine/train/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/blas_threads.h"
#include "engine/checkpoint/checkpoint_model.h"
#include "engine/device/compute.h"
#include "engine/model/gpt.h"
#include "engine/model/rng.h"
#include "engine/placement/placement.h"
#include "engine/train/token_sampling.h"
#include "engine/world/world.h"
#include "topology/output_path.h"
#include "topology/topology_file.h"

namespace plexus::engine {

namespace {

// Bad input (exit code 2), its message naming the option.
class PredictUsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "" or why the options cannot run, naming the option.
std::string option_problem(const PredictOptions& o) {
  if (std::string why = check_sampling_options(o.sample); !why.empty()) return why;
  if (o.top < 1 || o.top > 256) {
    return fmt::format("--predict-top must be in 1..256 (bytes listed per line), got {}", o.top);
  }
  if (o.output_path.empty()) return "--predict needs --predict-output FILE (the JSON lines)";
  if (o.sample.checkpoint_path.empty()) return "--predict needs --checkpoint FILE";
  std::error_code a, b;
  if (std::filesystem::equivalent(o.input_path, o.output_path, a) && !a) {
    return fmt::format("--predict-output '{}' is the --predict input itself; the prompts would "
                       "be overwritten",
                       o.output_path);
  }
  if (std::filesystem::equivalent(o.output_path, o.sample.checkpoint_path, b) && !b) {
    return fmt::format("--predict-output '{}' is the --checkpoint itself", o.output_path);
  }
  return "";
}

// The input file's lines (predict.h); throws PredictUsageError naming --predict.
std::vector<std::string> read_lines(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw PredictUsageError(fmt::format("--predict '{}': cannot read it: {}", path,
                                        ec ? ec.message() : std::strerror(ENOENT)));
  }
  if (!fs::is_regular_file(status)) {
    throw PredictUsageError(fmt::format("--predict '{}' is not a regular file (a folder, "
                                        "device or FIFO)", path));
  }
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxPredictInputBytes) {
    throw PredictUsageError(fmt::format("--predict '{}' has {} bytes, more than the {} a "
                                        "prediction input may have",
                                        path, size, kMaxPredictInputBytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw PredictUsageError(fmt::format("--predict '{}': cannot read it: {}", path,
                                        std::strerror(errno)));
  }
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  if (in.bad() || bytes.size() > kMaxPredictInputBytes) {
    throw PredictUsageError(fmt::format("--predict '{}': error reading it (or it grew past {} "
                                        "bytes)", path, kMaxPredictInputBytes));
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    lines.push_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The JSON line (no '\n') of input line `index`.
std::string predict_line(Gpt& model, const PredictOptions& o, size_t index,
                         const std::string& prompt) {
  const int vocab = model.config().vocab_size;
  std::vector<int32_t> context(prompt.begin(), prompt.end());
  for (int32_t& t : context) t = static_cast<uint8_t>(t);
  if (context.empty()) context.push_back('\n');

  // The next byte's distribution: softmax at temperature 1, in double.
  const float* logits = next_token_logits(model, context);
  const double max_logit = *std::max_element(logits, logits + vocab);
  std::vector<double> p(vocab);
  double total = 0;
  for (int i = 0; i < vocab; ++i) total += p[i] = std::exp(logits[i] - max_logit);
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  const int top = std::min(o.top, vocab);
  std::partial_sort(order.begin(), order.begin() + top, order.end(),
                    [&](int a, int b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
  nlohmann::json next = nlohmann::json::array();
  for (int k = 0; k < top; ++k) {
    next.push_back({{"byte", order[k]}, {"p", p[order[k]] / total}});
  }

  SplitMix64 rng(o.sample.seed + index);  // per line: independent of the ranks
  std::string continuation;
  nlohmann::json bytes = nlohmann::json::array();
  for (int i = 0; i < o.sample.tokens; ++i) {
    const int b = draw_token(next_token_logits(model, context), vocab, o.sample.temperature,
                             o.sample.top_k, rng);
    context.push_back(b);
    continuation.push_back(static_cast<char>(b));
    bytes.push_back(b);
  }
  const nlohmann::json line = {{"line", index},
                               {"prompt", prompt},
                               {"continuation", continuation},
                               {"continuation_bytes", bytes},
                               {"next_byte", next}};
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void check_comm(plx_result_t r, plx_comm_t comm, const std::string& what) {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, fmt::format("--predict: {}: {}: {}", what, plx_get_error_string(r),
                                     plx_get_last_error(comm)));
  }
}

// Every rank's lines (rank r: lines r, r+N, ... joined by '\n') in input order on rank 0;
// other ranks send theirs and return "".
std::string gather_lines(World& world, const std::vector<std::string>& mine, size_t total) {
  const int N = world.size();
  if (world.rank() != 0) {
    std::string joined;
    for (const std::string& l : mine) joined += l + "\n";
    const int64_t size = static_cast<int64_t>(joined.size());
    check_comm(plx_send(&size, 1, PLX_INT64, 0, world.comm(), nullptr), world.comm(),
               "sending the line count to rank 0");
    if (size > 0) {
      check_comm(plx_send(joined.data(), joined.size(), PLX_UINT8, 0, world.comm(), nullptr),
                 world.comm(), "sending the lines to rank 0");
    }
    return "";
  }
  std::vector<std::vector<std::string>> by_rank(N);
  by_rank[0] = mine;
  for (int r = 1; r < N; ++r) {
    int64_t size = 0;
    check_comm(plx_recv(&size, 1, PLX_INT64, r, world.comm(), nullptr), world.comm(),
               fmt::format("receiving rank {}'s line count", r));
    std::string joined(static_cast<size_t>(size), '\0');
    if (size > 0) {
      check_comm(plx_recv(joined.data(), joined.size(), PLX_UINT8, r, world.comm(), nullptr),
                 world.comm(), fmt::format("receiving rank {}'s lines", r));
    }
    size_t start = 0;
    while (start < joined.size()) {
      const size_t end = joined.find('\n', start);
      by_rank[r].push_back(joined.substr(start, end - start));
      start = end + 1;
    }
  }
  std::string out;
  for (size_t i = 0; i < total; ++i) {
    const std::vector<std::string>& lines = by_rank[i % N];
    if (i / N >= lines.size()) {
      throw std::runtime_error(fmt::format("--predict: rank {} sent {} lines, fewer than its "
                                           "share", i % N, lines.size()));
    }
    out += lines[i / N] + "\n";
  }
  return out;
}

int predict(const PredictOptions& o, World& world) {
  // Checks every rank makes alike, then the output path on rank 0; the ranks agree on the
  // outcome so none goes on alone.
  std::string why = option_problem(o);
  if (why.empty()) {
    try {
      Placement placement = parse_placement(o.placement);
      resolve_placement(placement, world.size(), o.pipeline_degree, o.tensor_degree);
      if (placement.degree('P') > 1 || placement.degree('T') > 1) {
        why = fmt::format("--placement '{}': --predict runs a whole model on every rank "
                          "(line i on rank i mod {}), so the placement may have only D and "
                          "+plugins, not P{} T{}",
                          o.placement, world.size(), placement.degree('P'),
                          placement.degree('T'));
      }
    } catch (const PlacementError& e) {
      why = e.what();
    }
  }
  if (why.empty() && world.rank() == 0) {
    if (std::string problem = topology::output_file_problem(o.output_path); !problem.empty()) {
      why = "--predict-output " + problem;
    }
  }
  std::vector<std::string> lines;
  std::optional<ModelCheckpoint> ck;
  if (why.empty()) {
    try {
      lines = read_lines(o.input_path);
      ck.emplace(load_model_checkpoint(o.sample.checkpoint_path));
    } catch (const PredictUsageError& e) {
      why = e.what();
    } catch (const CheckpointError& e) {
      why = std::string("--checkpoint: ") + e.what();
    }
  }
  const bool refused = world.any(!why.empty(), "predict option checks");
  if (!why.empty()) throw PredictUsageError(why);
  if (refused) return 2;  // another rank printed why
  if (std::string problem = select_compute_device(o.sample.device, world.local_rank(),
                                                  o.sample.autocast);
      !problem.empty()) {
    throw PredictUsageError(problem);
  }
  use_one_compute_thread();  // a token at a time: threads would wait more than they work
  Gpt model(ck->config);
  std::copy(ck->params().begin(), ck->params().end(), model.params());
  ck.reset();
  std::vector<std::string> mine;
  for (size_t i = world.rank(); i < lines.size(); i += world.size()) {
    mine.push_back(predict_line(model, o, i, lines[i]));
  }
  const std::string out = gather_lines(world, mine, lines.size());
  if (world.rank() == 0) {
    std::string error;
    if (topology::write_text_file(o.output_path, out, &error) != PLX_SUCCESS) {
      throw std::runtime_error("--predict-output: " + error);
    }
    std::printf("predict: %zu lines of '%s' over %d ranks: %d bytes each and the %d most likely "
                "next bytes, written to %s\n",
                lines.size(), o.input_path.c_str(), world.size(), o.sample.tokens, o.top,
                o.output_path.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int run_prediction(const PredictOptions& o) {
  World world;
  int code = 0;
  try {
    world.init();
    code = predict(o, world);
    std::fflush(stdout);
    return world.finish() ? code : 1;
  } catch (const std::bad_alloc&) {
    code = 1;
    std::fprintf(stderr, "plexus-train: rank %d: --predict: out of memory (std::bad_alloc)\n",
                 world.rank());
  } catch (const CommFailure& e) {
    code = e.result() == PLX_ERROR_INVALID_ARGUMENT ? 2 : 1;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  } catch (const CheckpointError& e) {
    code = 2;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  } catch (const std::invalid_argument& e) {
    code = 2;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  } catch (const std::exception& e) {
    code = 1;
    std::fprintf(stderr, "plexus-train: rank %d: %s\n", world.rank(), e.what());
  }
  std::fflush(stdout);
  world.abort();
  return code;
}

}  // namespace plexus::engine
