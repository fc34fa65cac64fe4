#include "engine/train/explain.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include <fmt/core.h>

#include "engine/world/world.h"

namespace plexus::engine {

namespace {

constexpr uint64_t kMaxLineBytes = 1 << 16;

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += fmt::format("{}{}", s.empty() ? "" : ",", r);
  return "[" + s + "]";
}

void check(plx_result_t r, plx_comm_t world, int rank, const std::string& what) {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, "rank " + std::to_string(rank) + ": --explain: " + what + ": " +
                             plx_get_error_string(r) + ": " + plx_get_last_error(world));
  }
}

}  // namespace

std::string explain_line(const Placement& placement, int rank, const StageModel& model,
                         const ActivePlugins& plugins) {
  const int size = placement.degree('D') * placement.degree('P') * placement.degree('T');
  std::string line = fmt::format("explain: rank {} of {}: (d={}, p={}, t={})", rank, size,
                                 placement.coordinate(rank, 'D'), placement.coordinate(rank, 'P'),
                                 placement.coordinate(rank, 'T'));
  for (char letter : {'D', 'P', 'T'}) {
    line += fmt::format("; {} group {}", letter, rank_list(placement.group_ranks(rank, letter)));
  }
  const int P = placement.degree('P'), p = placement.coordinate(rank, 'P');
  if (P > 1 && (p == 0 || p == P - 1)) {
    const std::vector<int> stages = placement.group_ranks(rank, 'P');
    line += fmt::format("; embedding group {}", rank_list({stages.front(), stages.back()}));
  }
  std::string layers;
  for (int c = 0; c < model.num_chunks(); ++c) {
    const ChunkLayers& l = model.layers(c);
    layers += fmt::format("{}blocks {}-{}{}{}", layers.empty() ? "" : ", ", l.first_block,
                          l.last_block - 1, l.embed ? " +embed" : "", l.head ? " +head" : "");
  }
  line += "; layers " + layers;
  for (const auto& plugin : plugins) {
    line += fmt::format("; plugin {} {}", plugin->library.api().name,
                        plugin->library.api().version);
  }
  return line;
}

void print_explanation(const std::string& line, plx_comm_t world, int world_rank,
                       int world_size) {
  if (world_rank != 0) {
    uint64_t bytes = line.size();
    check(plx_send(&bytes, 1, PLX_UINT64, 0, world, nullptr), world, world_rank,
          "sending the line's length to rank 0");
    check(plx_send(line.data(), bytes, PLX_UINT8, 0, world, nullptr), world, world_rank,
          "sending the line to rank 0");
    return;
  }
  std::printf("%s\n", line.c_str());
  std::string text;
  for (int r = 1; r < world_size; ++r) {
    uint64_t bytes = 0;
    check(plx_recv(&bytes, 1, PLX_UINT64, r, world, nullptr), world, 0,
          "receiving the length of rank " + std::to_string(r) + "'s line");
    if (bytes > kMaxLineBytes) {
      throw CommFailure(PLX_ERROR_INTERNAL, "rank 0: --explain: rank " + std::to_string(r) +
                                                " announced a line of " + std::to_string(bytes) +
                                                " bytes (at most " +
                                                std::to_string(kMaxLineBytes) + ")");
    }
    text.assign(bytes, '\0');
    check(plx_recv(text.data(), bytes, PLX_UINT8, r, world, nullptr), world, 0,
          "receiving rank " + std::to_string(r) + "'s line");
    std::printf("%s\n", text.c_str());
  }
  std::fflush(stdout);
}

}  // namespace plexus::engine
