// tensor_plugin_test.cpp - the T plugin's tensor_allreduce over real tensor groups.
//
// Four ranks open the world, split it into two tensor groups of 2 (T2, ranks {0,1} and {2,3})
// and use the world itself as a group of 4 (T4), load libplexus_plugin_T.so through the engine's
// loader and reduce in place. Rank r's element i is (r+1) * (i % 97) - r, so the sum over a
// group is closed-form and the max is the largest rank's value (or the smallest rank's where the
// factor is 0); counts 0, 1, a prime and one past 2^16. A bad op is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/plugin/plugin_loader.h"
#include "plexus/plexus.h"
#include "plexus/plugin.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

float value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 97) - rank);
}

// Reduces over `group` (whose members are world ranks first..first+size-1) and checks every
// element; "" or the first wrong one.
std::string check_group(const plx_plugin_t& api, plx_comm_t group, int world_rank, int first,
                        int size) {
  plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;
  context.group = group;
  context.tensor_group = group;
  context.degree = size;
  context.coordinate = world_rank - first;
  void* state = nullptr;
  char err[512] = {};
  if (api.create(&context, &state, err, sizeof(err)) != PLX_SUCCESS) {
    return std::string("create: ") + err;
  }
  std::string what = "T";
  what += std::to_string(size);
  what += ": ";
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{(1u << 16) + 1}}) {
    for (plx_red_op_t op : {PLX_SUM, PLX_MAX}) {
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = value(world_rank, i);
      if (api.tensor_allreduce(state, data.data(), count, op, err, sizeof(err)) != PLX_SUCCESS) {
        return what + "tensor_allreduce: " + err;
      }
      for (size_t i = 0; i < count; ++i) {
        float want = op == PLX_SUM ? 0.0f : value(first, i);
        for (int r = first; r < first + size; ++r) {
          want = op == PLX_SUM ? want + value(r, i) : std::max(want, value(r, i));
        }
        if (data[i] != want) {
          return what + (op == PLX_SUM ? "sum" : "max") + " of count " + std::to_string(count) +
                 ": element " + std::to_string(i) + " is " + std::to_string(data[i]) +
                 ", expected " + std::to_string(want);
        }
      }
    }
  }
  float x = 1;
  const plx_result_t bad = api.tensor_allreduce(state, &x, 1, PLX_AVG, err, sizeof(err));
  const std::string want = "T: rank " + std::to_string(world_rank - first) +
                           ": tensor_allreduce: op 4 is not PLX_SUM (0) or PLX_MAX (3)";
  if (bad != PLX_ERROR_INVALID_ARGUMENT || err != want) {
    return what + "PLX_AVG gave \"" + err + "\", expected \"" + want + "\"";
  }
  api.destroy(state);
  return "";
}

TEST(TensorPlugin, AllreduceOverGroupsOfTwoAndFour) {
  expect_ranks_pass(4, transport_env("tcp"), [](plx_comm_t world, int r) {
    OwnedComm pair;
    if (plx_comm_split(world, r / 2, r % 2, pair.out()) != PLX_SUCCESS) {
      return "split: " + last_error_text();
    }
    engine::LoadedPlugin plugin = engine::load_plugin("T");
    std::string why = check_group(plugin.api(), pair.get(), r, r / 2 * 2, 2);
    if (why.empty()) why = check_group(plugin.api(), world, r, 0, 4);
    if (why.empty()) why = pair.destroy("pair");
    return why;
  });
}

}  // namespace
}  // namespace plexus::test
