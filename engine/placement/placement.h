// placement.h - the placement string: which parallelism axes a job uses and in what rank order.
//
//   placement := layout ( "+" plugin )*
//   layout    := "cluster" | "spread" | axis { axis }
//   axis      := ( "D" | "P" | "T" ) [ degree ]
//   plugin    := name [ "(" arg { "," arg } ")" ]
//
// As in SageMaker model parallel: D data, P pipeline, T tensor; "cluster" means DPT and "spread"
// TPD. The rightmost letter varies fastest over consecutive global ranks: for DPT,
// rank = d*|P|*|T| + p*|T| + t. See docs/placement.md.
//
// Each axis and each plugin at most once: "+ckpt+ckpt" is refused, and so are two plugins of
// one family, whose names differ only in a trailing number ("+zero1+zero2": ZeRO stages).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace plexus::engine {

// A parse or resolve error; what() names the offending character (position) and what was
// expected, or the degrees that do not fit.
class PlacementError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct Axis {
  char letter = 'D';    // 'D', 'P' or 'T'
  int degree = 0;       // 0 until resolved when the string gave none
  bool written = true;  // written in the string (false: implied by cluster/spread)
};

struct PluginSpec {
  std::string name;
  std::vector<std::string> args;
};

struct Placement {
  std::string text;
  std::vector<Axis> axes;  // in string order; the last varies fastest
  std::vector<PluginSpec> plugins;

  // Degree of an axis letter (1 if absent). Valid after resolve().
  int degree(char letter) const;
  // This rank's coordinate along `letter` (0 if absent). Valid after resolve().
  int coordinate(int rank, char letter) const;
  // Global ranks that share every coordinate of `rank` except `letter`, in coordinate order.
  std::vector<int> group_ranks(int rank, char letter) const;
};

// Parses the text; throws PlacementError.
Placement parse_placement(const std::string& text);

// Gives every axis its degree: the written one; else --pipeline-degree / --tensor-degree for P and
// T (0 = not given: 1); else, for D only, world_size / (|P|*|T|). Adds the D axis when absent
// (degree 1). Throws PlacementError when the product of degrees is not world_size.
void resolve_placement(Placement& placement, int world_size, int pipeline_degree,
                       int tensor_degree);

}  // namespace plexus::engine
