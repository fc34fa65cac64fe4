// launcher_env.cpp - launcher environment discovery (see launcher_env.h).
#include "topology/launcher_env.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "topology/settings/config_read.h"

namespace plexus::topology {

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

// PLX_ERROR_INVALID_ARGUMENT with *error = message.
plx_result_t refuse(std::string* error, std::string message) {
  *error = std::move(message);
  return PLX_ERROR_INVALID_ARGUMENT;
}

// Reads the first set variable of `names` as an integer in min..max; *name_out says which.
plx_result_t first_integer(std::span<const char* const> names, int64_t min, int64_t max,
                           std::optional<int64_t>* out, const char** name_out,
                           std::string* error) {
  for (const char* name : names) {
    if (auto text = env_value(name)) {
      int64_t value = 0;
      if (plx_result_t r = parse_integer_text(name, *text, min, max, &value, error);
          r != PLX_SUCCESS) {
        return r;
      }
      *out = value;
      *name_out = name;
      return PLX_SUCCESS;
    }
  }
  *out = std::nullopt;
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t read_launcher_env(LauncherEnv* out, std::string* error, bool with_local) {
  LauncherEnv env;
  for (const Family& family : kFamilies) {
    auto rank_text = env_value(family.rank_var);
    auto size_text = env_value(family.size_var);
    if (!rank_text && !size_text) continue;
    if (!rank_text || !size_text) {
      const char* missing = rank_text ? family.size_var : family.rank_var;
      const char* present = rank_text ? family.rank_var : family.size_var;
      return refuse(error, std::string(present) + "=" + (rank_text ? *rank_text : *size_text) +
                               " is set but " + missing + " is not");
    }
    int64_t size = 0;
    int64_t rank = 0;
    if (plx_result_t r = parse_integer_text(family.size_var, *size_text, 1, INT_MAX, &size, error);
        r != PLX_SUCCESS) {
      return r;
    }
    if (plx_result_t r = parse_integer_text(family.rank_var, *rank_text, 0, INT_MAX, &rank, error);
        r != PLX_SUCCESS) {
      return r;
    }
    if (rank >= size) {
      return refuse(error, std::string(family.rank_var) + "=" + std::to_string(rank) +
                               " is not below " + family.size_var + "=" + std::to_string(size));
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
    if (plx_result_t r =
            first_integer(kLocalRankVars, 0, INT_MAX, &local_rank, &local_rank_var, error);
        r != PLX_SUCCESS) {
      return r;
    }
    if (plx_result_t r =
            first_integer(kLocalSizeVars, 1, INT_MAX, &local_size, &local_size_var, error);
        r != PLX_SUCCESS) {
      return r;
    }
  }
  if (local_rank && local_size && *local_rank >= *local_size) {
    return refuse(error, std::string(local_rank_var) + "=" + std::to_string(*local_rank) +
                             " is not below " + local_size_var + "=" +
                             std::to_string(*local_size));
  }
  if (local_size && *local_size > env.world_size) {
    return refuse(error, std::string(local_size_var) + "=" + std::to_string(*local_size) +
                             " exceeds the world size " + std::to_string(env.world_size));
  }
  env.local_rank = local_rank ? static_cast<int>(*local_rank) : -1;
  env.local_size = local_size ? static_cast<int>(*local_size) : -1;

  if (auto addr = env_value("PLEXUS_MASTER_ADDR")) env.master_addr = *addr;
  else if (auto addr2 = env_value("MASTER_ADDR")) env.master_addr = *addr2;
  for (const char* name : {"PLEXUS_MASTER_PORT", "MASTER_PORT"}) {
    if (auto text = env_value(name)) {
      int64_t port = 0;
      if (plx_result_t r = parse_integer_text(name, *text, 1, 65535, &port, error);
          r != PLX_SUCCESS) {
        return r;
      }
      env.master_port = static_cast<int>(port);
      break;
    }
  }
  *out = env;
  return PLX_SUCCESS;
}

}  // namespace plexus::topology
