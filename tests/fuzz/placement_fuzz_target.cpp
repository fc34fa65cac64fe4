// placement_fuzz_target.cpp - the fuzzing entry point for the placement parser, its resolution
// against a world size and the layer partition (libFuzzer's LLVMFuzzerTestOneInput).
//
// Input bytes: [world size byte][pipeline degree byte][tensor degree byte][blocks byte] then
// the placement string. The properties checked (a failure aborts, which the fuzzer reports):
//  - parse_placement and resolve_placement either succeed or throw PlacementError, never
//    anything else, and never crash, hang or overflow (run under ASan and UBSan);
//  - after resolve, the degrees multiply to the world size, every rank's coordinates are in
//    range and give the rank back (rightmost letter fastest), and each axis group holds the
//    rank and |axis| ranks that differ only along that axis;
//  - partition_layers(blocks, |P|) gives contiguous, non-empty chunks covering every block, or
//    PlacementError when blocks < |P|.
// The same entry point replays tests/fuzz/corpus/ in ctest (corpus_replay_test.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/placement/layer_partition.h"
#include "engine/placement/placement.h"

namespace {

void require(bool ok, const char* what, const std::string& text) {
  if (!ok) {
    std::fprintf(stderr, "placement fuzz: %s (placement '%s')\n", what, text.c_str());
    std::abort();
  }
}

void check_resolved(const plexus::engine::Placement& p, int world) {
  long long product = 1;
  for (const auto& a : p.axes) {
    require(a.degree >= 1, "an axis has degree < 1 after resolve", p.text);
    product *= a.degree;
    require(product <= world, "degrees multiply past the world size", p.text);
  }
  require(product == world, "degrees do not multiply to the world size", p.text);
  for (int rank = 0; rank < world; ++rank) {
    int back = 0;
    for (const auto& a : p.axes) {
      const int c = p.coordinate(rank, a.letter);
      require(c >= 0 && c < a.degree, "coordinate out of range", p.text);
      back = back * a.degree + c;
    }
    require(back == rank, "coordinates do not give the rank back", p.text);
    for (char letter : {'D', 'P', 'T'}) {
      const std::vector<int> group = p.group_ranks(rank, letter);
      require(static_cast<int>(group.size()) == p.degree(letter), "group size is not the degree",
              p.text);
      bool has_self = false;
      for (size_t i = 0; i < group.size(); ++i) {
        const int g = group[i];
        require(g >= 0 && g < world, "group member out of range", p.text);
        require(p.coordinate(g, letter) == static_cast<int>(i), "group not in axis order", p.text);
        for (char other : {'D', 'P', 'T'}) {
          if (other != letter) {
            require(p.coordinate(g, other) == p.coordinate(rank, other),
                    "group member differs along another axis", p.text);
          }
        }
        has_self |= g == rank;
      }
      require(has_self, "group does not hold the rank", p.text);
    }
  }
}

void check_partition(int blocks, int chunks, const std::string& text) {
  try {
    const auto parts = plexus::engine::partition_layers(blocks, chunks);
    require(blocks >= chunks && static_cast<int>(parts.size()) == chunks,
            "partition has the wrong number of chunks", text);
    int next = 0;
    for (const auto& c : parts) {
      require(c.first_block == next && c.last_block > c.first_block,
              "partition chunks not contiguous and non-empty", text);
      next = c.last_block;
    }
    require(next == blocks, "partition does not cover every block", text);
  } catch (const plexus::engine::PlacementError&) {
    require(blocks < chunks || chunks < 1, "partition refused a valid cut", text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int world = data[0] % 64 + 1;
  const int pipeline_degree = data[1] % 9;  // 0: not given
  const int tensor_degree = data[2] % 9;
  const int blocks = data[3] % 40;
  const std::string text(reinterpret_cast<const char*>(data + 4), size - 4);
  plexus::engine::Placement p;
  try {
    p = plexus::engine::parse_placement(text);
  } catch (const plexus::engine::PlacementError&) {
    return 0;
  }
  require(!p.axes.empty(), "parsed without axes", text);
  try {
    plexus::engine::resolve_placement(p, world, pipeline_degree, tensor_degree);
  } catch (const plexus::engine::PlacementError&) {
    return 0;
  }
  check_resolved(p, world);
  check_partition(blocks, p.degree('P'), text);
  return 0;
}
