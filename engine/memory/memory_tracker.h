// memory_tracker.h - per-rank accounting of the bytes the engine holds, by pool and category.
//
// A rank's memory lives in two pools: the device pool (GPU memory on the CUDA backend; on the
// CPU backend an accounted region of host memory standing for it) and the host pool (where
// offloaded activations and optimizer state go). Every engine allocation that scales with the
// model or the batch is accounted in one category of one pool, so plexus-train can print, and
// tests can assert, the current and peak bytes of each (the figures ZeRO and offloading move).
//
// Peaks are per (pool, category) and per pool in total; the total's peak is the peak of the sum,
// not the sum of the peaks.
//
// Thread safety: add() and the readers may be called from any thread (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace plexus::engine {

enum class MemoryPool : int { kDevice = 0, kHost = 1 };
inline constexpr int kNumMemoryPools = 2;

enum class MemoryCategory : int {
  kParameters = 0,
  kGradients = 1,
  kOptimizer = 2,      // AdamW moments (and fp32 master weights with mixed precision)
  kActivations = 3,    // forward activations kept for backward, checkpointed inputs
  kCommunication = 4,  // staging and bucket buffers of collectives
};
inline constexpr int kNumMemoryCategories = 5;

// "device", "host"; "parameters", "gradients", "optimizer", "activations", "communication".
const char* memory_pool_name(MemoryPool pool);
const char* memory_category_name(MemoryCategory category);

class MemoryTracker {
 public:
  // Adds bytes (negative to give back) to (pool, category) and updates the peaks. Throws
  // std::logic_error if a category would go below 0 (a release without its allocation).
  void add(MemoryPool pool, MemoryCategory category, int64_t bytes);

  int64_t current(MemoryPool pool, MemoryCategory category) const;
  int64_t peak(MemoryPool pool, MemoryCategory category) const;
  int64_t current_total(MemoryPool pool) const;
  int64_t peak_total(MemoryPool pool) const;
  // Sets every peak to the current value (to measure one phase, e.g. in a test).
  void reset_peaks();
  // {"device": {"current": {...per category...}, "peak": {...}, "current_total": n,
  //  "peak_total": n}, "host": {...}}, in bytes.
  nlohmann::json report() const;
  // One line per pool for people: "device peak: parameters 1.2 MiB, gradients ..., total 3.4 MiB".
  std::string summary() const;

 private:
  mutable std::mutex mutex_;
  std::array<std::array<int64_t, kNumMemoryCategories>, kNumMemoryPools> current_{};
  std::array<std::array<int64_t, kNumMemoryCategories>, kNumMemoryPools> peak_{};
  std::array<int64_t, kNumMemoryPools> current_total_{}, peak_total_{};
};

// The process's tracker (one rank per process in plexus-train). Tests may make their own.
MemoryTracker& memory_tracker();

// Formats a byte count for people: "512 B", "12.0 KiB", "3.4 MiB", "1.20 GiB", "2.89 TiB" (up
// to EiB; a double, so estimates past 2^63 bytes print too).
std::string format_bytes(double bytes);

}  // namespace plexus::engine
