// launcher_env.cpp - launcher environment discovery (see launcher_env.h).
#include "comm/bootstrap/launcher_env.h"

#include <fmt/format.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <span>

#include "comm/base/config.h"
#include "comm/base/error.h"

namespace plexus::bootstrap {

namespace {

struct Family {
  const char* name;
  const char* rank_var;
  const char* size_var;
};

// The order is the documented precedence.
constexpr Family kFamilies[] = {
    {"PLEXUS", "PLEXUS_RANK", "PLEXUS_WORLD_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"MPICH", "PMI_RANK", "PMI_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
};

constexpr const char* kLocalRankVars[] = {"PLEXUS_LOCAL_RANK", "LOCAL_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                          "SLURM_LOCALID"};
constexpr const char* kLocalSizeVars[] = {"PLEXUS_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};

// Reads the first set variable of `names` as an integer in min..max; *name_out says which.
plx_result_t first_integer(std::span<const char* const> names, int64_t min, int64_t max,
                           std::optional<int64_t>* out, const char** name_out) {
  for (const char* name : names) {
    if (auto text = env_value(name)) {
      int64_t value = 0;
      PLX_CHECK(parse_integer_variable(name, *text, min, max, &value));
      *out = value;
      *name_out = name;
      return PLX_SUCCESS;
    }
  }
  *out = std::nullopt;
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t read_launcher_env(LauncherEnv* out, bool with_local) {
  LauncherEnv env;
  for (const Family& family : kFamilies) {
    auto rank_text = env_value(family.rank_var);
    auto size_text = env_value(family.size_var);
    if (!rank_text && !size_text) continue;
    if (!rank_text || !size_text) {
      const char* missing = rank_text ? family.size_var : family.rank_var;
      const char* present = rank_text ? family.rank_var : family.size_var;
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}={} is set but {} is not", present,
                                   rank_text ? *rank_text : *size_text, missing));
    }
    int64_t size = 0;
    int64_t rank = 0;
    PLX_CHECK(parse_integer_variable(family.size_var, *size_text, 1, INT_MAX, &size));
    PLX_CHECK(parse_integer_variable(family.rank_var, *rank_text, 0, INT_MAX, &rank));
    if (rank >= size) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}={} is not below {}={}", family.rank_var, rank,
                                   family.size_var, size));
    }
    env.family = family.name;
    env.rank = static_cast<int>(rank);
    env.world_size = static_cast<int>(size);
    break;
  }

  std::optional<int64_t> local_rank;
  std::optional<int64_t> local_size;
  const char* local_rank_var = nullptr;
  const char* local_size_var = nullptr;
  if (with_local) {
    PLX_CHECK(first_integer(kLocalRankVars, 0, INT_MAX, &local_rank, &local_rank_var));
    PLX_CHECK(first_integer(kLocalSizeVars, 1, INT_MAX, &local_size, &local_size_var));
  }
  if (local_rank && local_size && *local_rank >= *local_size) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}={} is not below {}={}", local_rank_var, *local_rank,
                                 local_size_var, *local_size));
  }
  if (local_size && *local_size > env.world_size) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}={} exceeds the world size {}", local_size_var, *local_size,
                                 env.world_size));
  }
  env.local_rank = local_rank ? static_cast<int>(*local_rank) : -1;
  env.local_size = local_size ? static_cast<int>(*local_size) : -1;

  if (auto addr = env_value("PLEXUS_MASTER_ADDR")) env.master_addr = *addr;
  else if (auto addr2 = env_value("MASTER_ADDR")) env.master_addr = *addr2;
  for (const char* name : {"PLEXUS_MASTER_PORT", "MASTER_PORT"}) {
    if (auto text = env_value(name)) {
      int64_t port = 0;
      PLX_CHECK(parse_integer_variable(name, *text, 1, 65535, &port));
      env.master_port = static_cast<int>(port);
      break;
    }
  }
  *out = env;
  return PLX_SUCCESS;
}

}  // namespace plexus::bootstrap
