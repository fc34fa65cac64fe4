// sync_probe.cpp - see sync_probe.h.
#include "engine/plan/sync_probe.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/train/world.h"

namespace plexus::engine {

namespace {

using Clock = std::chrono::steady_clock;

void check(plx_result_t r, plx_comm_t comm, const char* what) {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, std::string("placement planner: ") + what + ": " +
                             plx_get_error_string(r) + ": " + plx_get_last_error(comm));
  }
}

// About 200 us of dependent floating-point work; the result keeps it from being optimised away.
float burst(float seed) {
  float x = seed;
  for (int i = 0; i < 60000; ++i) x = x * 0.999999f + 1e-7f;
  return x;
}

double run(plx_comm_t comm, int iterations, bool sync, float* sink) {
  float one = 1.0f;
  check(plx_allreduce(&one, &one, 1, PLX_FLOAT32, PLX_SUM, comm, nullptr), comm, "start");
  const auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    *sink += burst(*sink + static_cast<float>(i));
    if (sync) {
      check(plx_allreduce(&one, &one, 1, PLX_FLOAT32, PLX_SUM, comm, nullptr), comm,
            "allreduce");
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / iterations;
}

}  // namespace

double probe_sync_overhead(plx_comm_t comm, int iterations) {
  int size = 1;
  check(plx_comm_size(comm, &size), comm, "size");
  if (size < 2) return 0.0;
  float sink = 0.0f;
  const double alone = run(comm, iterations, false, &sink);
  const double synced = run(comm, iterations, true, &sink);
  double modelled = 0;
  check(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, nullptr, size, &modelled), comm,
        "predict");
  double overhead = std::max(0.0, synced - alone - modelled) + (sink == -1.0f ? 1e-12 : 0.0);
  check(plx_allreduce(&overhead, &overhead, 1, PLX_FLOAT64, PLX_SUM, comm, nullptr), comm,
        "mean");
  return overhead / size;
}

}  // namespace plexus::engine
