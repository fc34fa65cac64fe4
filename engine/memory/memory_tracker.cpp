#include "engine/memory/memory_tracker.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace plexus::engine {

const char* memory_pool_name(MemoryPool pool) {
  return pool == MemoryPool::kDevice ? "device" : "host";
}

const char* memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters: return "parameters";
    case MemoryCategory::kGradients: return "gradients";
    case MemoryCategory::kOptimizer: return "optimizer";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kCommunication: return "communication";
  }
  return "?";
}

void MemoryTracker::add(MemoryPool pool, MemoryCategory category, int64_t bytes) {
  const int p = static_cast<int>(pool), c = static_cast<int>(category);
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t& cur = current_[p][c];
  if (cur + bytes < 0) {
    throw std::logic_error(fmt::format("MemoryTracker::add: releasing {} bytes of {} in the {} "
                                       "pool, which holds only {}",
                                       -bytes, memory_category_name(category),
                                       memory_pool_name(pool), cur));
  }
  cur += bytes;
  peak_[p][c] = std::max(peak_[p][c], cur);
  current_total_[p] += bytes;
  peak_total_[p] = std::max(peak_total_[p], current_total_[p]);
}

int64_t MemoryTracker::current(MemoryPool pool, MemoryCategory category) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_[static_cast<int>(pool)][static_cast<int>(category)];
}

int64_t MemoryTracker::peak(MemoryPool pool, MemoryCategory category) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_[static_cast<int>(pool)][static_cast<int>(category)];
}

int64_t MemoryTracker::current_total(MemoryPool pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_total_[static_cast<int>(pool)];
}

int64_t MemoryTracker::peak_total(MemoryPool pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_total_[static_cast<int>(pool)];
}

void MemoryTracker::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = current_;
  peak_total_ = current_total_;
}

nlohmann::json MemoryTracker::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json out = nlohmann::json::object();
  for (int p = 0; p < kNumMemoryPools; ++p) {
    nlohmann::json cur = nlohmann::json::object(), peak = nlohmann::json::object();
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      const char* name = memory_category_name(static_cast<MemoryCategory>(c));
      cur[name] = current_[p][c];
      peak[name] = peak_[p][c];
    }
    out[memory_pool_name(static_cast<MemoryPool>(p))] = {{"current", cur},
                                                         {"peak", peak},
                                                         {"current_total", current_total_[p]},
                                                         {"peak_total", peak_total_[p]}};
  }
  return out;
}

std::string MemoryTracker::summary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (int p = 0; p < kNumMemoryPools; ++p) {
    if (!out.empty()) out += "\n";
    out += fmt::format("{} peak:", memory_pool_name(static_cast<MemoryPool>(p)));
    for (int c = 0; c < kNumMemoryCategories; ++c) {
      out += fmt::format(" {} {},", memory_category_name(static_cast<MemoryCategory>(c)),
                         format_bytes(peak_[p][c]));
    }
    out += fmt::format(" total {}", format_bytes(peak_total_[p]));
  }
  return out;
}

MemoryTracker& memory_tracker() {
  static MemoryTracker tracker;
  return tracker;
}

std::string format_bytes(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1024.0 * 1024) return fmt::format("{:.1f} KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  static const char* const units[] = {"GiB", "TiB", "PiB", "EiB"};
  double scaled = bytes / (1024.0 * 1024 * 1024);
  int unit = 0;
  for (; unit < 3 && scaled >= 1024; ++unit) scaled /= 1024;
  return fmt::format("{:.2f} {}", scaled, units[unit]);
}

}  // namespace plexus::engine
