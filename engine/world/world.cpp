#include "engine/world/world.h"

#include <cstdio>
#include <string>

#include "topology/launcher_env.h"

namespace plexus::engine {

namespace {
// The launcher's rank and world size (topology/launcher_env.h, the reader comm's bootstrap
// uses); a malformed or inconsistent environment reads as rank 0 of 1.
topology::LauncherEnv launcher_environment() {
  topology::LauncherEnv env;
  std::string ignored;
  if (topology::read_launcher_env(&env, &ignored, /*with_local=*/false) != PLX_SUCCESS) {
    return topology::LauncherEnv{};
  }
  return env;
}
}  // namespace

int rank_from_environment() { return launcher_environment().rank; }

int world_size_from_environment() { return launcher_environment().world_size; }

World::~World() { abort(); }

void World::check(plx_result_t r, const std::string& what) const {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, what + ": " + plx_get_error_string(r) + ": " + plx_get_last_error(comm_));
  }
}

void World::init() {
  rank_ = rank_from_environment();
  plx_comm_t comm = nullptr;
  check(plx_comm_init_from_env(&comm), "creating the world communicator");
  comm_ = comm;
  check(plx_comm_rank(comm_, &rank_), "plx_comm_rank");
  check(plx_comm_size(comm_, &size_), "plx_comm_size");
  check(plx_comm_local_size(comm_, &local_size_), "plx_comm_local_size");
  check(plx_comm_local_rank(comm_, &local_rank_), "plx_comm_local_rank");
}

const char* World::transport_name() const {
  const char* name = "none";
  if (comm_ != nullptr && plx_comm_transport_name(comm_, &name) != PLX_SUCCESS) name = "unknown";
  return name;
}

float World::average(float value, const char* what) {
  check(plx_allreduce(&value, &value, 1, PLX_FLOAT32, PLX_AVG, comm_, nullptr),
        std::string("averaging the ") + what);
  return value;
}

double World::sum(double value, const char* what) {
  check(plx_allreduce(&value, &value, 1, PLX_FLOAT64, PLX_SUM, comm_, nullptr),
        std::string("summing the ") + what);
  return value;
}

void World::broadcast(float* data, size_t count, const char* what) {
  check(plx_broadcast(data, data, count, PLX_FLOAT32, 0, comm_, nullptr),
        std::string("broadcasting the ") + what);
}

bool World::any(bool flag, const char* what) {
  float v = flag ? 1.0f : 0.0f;
  check(plx_allreduce(&v, &v, 1, PLX_FLOAT32, PLX_MAX, comm_, nullptr),
        std::string("agreeing on the ") + what);
  return v > 0.0f;
}

std::vector<int64_t> World::allgather(int64_t value, const char* what) {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  check(plx_allgather(&value, all.data(), 1, PLX_INT64, comm_, nullptr),
        std::string("gathering the ") + what);
  return all;
}

uint64_t World::broadcast(uint64_t value, const char* what) {
  check(plx_broadcast(&value, &value, 1, PLX_UINT64, 0, comm_, nullptr),
        std::string("broadcasting the ") + what);
  return value;
}

bool World::finish() {
  if (comm_ == nullptr) return true;
  plx_result_t r = plx_comm_destroy(comm_);
  comm_ = nullptr;
  if (r != PLX_SUCCESS) {
    std::fprintf(stderr, "plexus-train: rank %d: shutting down: %s: %s\n", rank_,
                 plx_get_error_string(r), plx_get_last_error(nullptr));
    return false;
  }
  return true;
}

void World::abort() {
  if (comm_ == nullptr) return;
  plx_comm_abort(comm_);
  comm_ = nullptr;
}

}  // namespace plexus::engine
