// sync_probe.cpp - see sync_probe.h.
#include "engine/plan/sync_probe.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/world/world.h"

namespace plexus::engine {

namespace {

using Clock = std::chrono::steady_clock;

void check(plx_result_t r, plx_comm_t comm, const char* what) {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, std::string("placement planner: ") + what + ": " +
                             plx_get_error_string(r) + ": " + plx_get_last_error(comm));
  }
}

// Dependent floating-point work (60000 steps: about 200 us); the result keeps it from being
// optimised away.
float burst(float seed, int steps) {
  float x = seed;
  for (int i = 0; i < steps; ++i) x = x * 0.999999f + 1e-7f;
  return x;
}

double run(plx_comm_t comm, int iterations, int steps, bool sync, float* sink) {
  float one = 1.0f;
  check(plx_allreduce(&one, &one, 1, PLX_FLOAT32, PLX_SUM, comm, nullptr), comm, "start");
  const auto t0 = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    *sink += burst(*sink + static_cast<float>(i), steps);
    if (sync) {
      check(plx_allreduce(&one, &one, 1, PLX_FLOAT32, PLX_SUM, comm, nullptr), comm,
            "allreduce");
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count() / iterations;
}

}  // namespace

double SyncOverhead::at(double burst_s) const {
  if (long_burst_s <= short_burst_s) return std::max(short_overhead_s, long_overhead_s);
  const double f = std::clamp((burst_s - short_burst_s) / (long_burst_s - short_burst_s), 0.0, 1.0);
  return short_overhead_s + f * (long_overhead_s - short_overhead_s);
}

SyncOverhead probe_sync_overhead(plx_comm_t comm, int iterations) {
  int size = 1;
  check(plx_comm_size(comm, &size), comm, "size");
  SyncOverhead out;
  if (size < 2) return out;
  double modelled = 0;
  check(plx_comm_predict_time(comm, "allreduce", 1, PLX_FLOAT32, nullptr, size, &modelled), comm,
        "predict");
  float sink = 0.0f;
  double figures[4];
  for (int k = 0; k < 2; ++k) {
    // The short bursts run 8x as many times, so both take similar wall time.
    const int steps = k == 0 ? 6000 : 120000, times = k == 0 ? 8 * iterations : iterations;
    // The median of three rounds: a round that a stray process interrupts does not count.
    double alone[3], synced[3];
    for (int r = 0; r < 3; ++r) {
      alone[r] = run(comm, times, steps, false, &sink);
      synced[r] = run(comm, times, steps, true, &sink);
    }
    std::sort(alone, alone + 3);
    std::sort(synced, synced + 3);
    figures[2 * k] = alone[1];
    figures[2 * k + 1] = std::max(0.0, synced[1] - alone[1] - modelled);
  }
  if (sink == -1.0f) figures[0] += 1e-12;  // keeps the bursts' result alive
  check(plx_allreduce(figures, figures, 4, PLX_FLOAT64, PLX_SUM, comm, nullptr), comm, "mean");
  out.short_burst_s = figures[0] / size, out.short_overhead_s = figures[1] / size;
  out.long_burst_s = figures[2] / size, out.long_overhead_s = figures[3] / size;
  return out;
}

}  // namespace plexus::engine
