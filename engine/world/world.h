// world.h - the trainer's handle on the world communicator, in C++ terms: failures of the C ABI
// become CommFailure exceptions carrying the plx_result_t and plx_get_last_error() text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::engine {

class CommFailure : public std::runtime_error {
 public:
  CommFailure(plx_result_t result, const std::string& message)
      : std::runtime_error(message), result_(result) {}
  plx_result_t result() const { return result_; }

 private:
  plx_result_t result_;
};

// The rank and world size as the launcher set them (topology/launcher_env.h: the families
// plx_comm_init_from_env reads, in its order, through the same reader), for what must be known
// before the communicator exists: messages naming the rank, the work only rank 0 does. A
// missing, malformed or inconsistent environment reads as 0 and 1 (the communicator then
// reports what is wrong, naming the variable).
int rank_from_environment();
int world_size_from_environment();

class World {
 public:
  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World();  // aborts a communicator that was neither finished nor aborted

  // plx_comm_init_from_env; throws CommFailure.
  void init();

  plx_comm_t comm() const { return comm_; }
  // The rank (from the environment before init, so error messages can name it).
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }
  // This rank's index among the ranks on its host (plx_comm_local_rank).
  int local_rank() const { return local_rank_; }
  const char* transport_name() const;

  // Mean of `value` over all ranks. `what` names the value in error messages.
  float average(float value, const char* what);
  // Sum of `value` over all ranks, in double precision.
  double sum(double value, const char* what);
  // Rank 0's `count` floats into every rank's `data`.
  void broadcast(float* data, size_t count, const char* what);
  // True on every rank if `flag` is true on any rank.
  bool any(bool flag, const char* what);
  // Every rank's `value`, indexed by rank, on every rank.
  std::vector<int64_t> allgather(int64_t value, const char* what);
  // Rank 0's `value` on every rank.
  uint64_t broadcast(uint64_t value, const char* what);

  // Clean shutdown (plx_comm_destroy); false (message printed) if a peer was lost.
  bool finish();
  // Immediate shutdown (plx_comm_abort); peers see this rank lost.
  void abort();

 private:
  void check(plx_result_t r, const std::string& what) const;

  plx_comm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  int local_rank_ = 0;
};

}  // namespace plexus::engine
