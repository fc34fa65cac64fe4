// config.cpp - the PLEXUS_* variable table and its typed getters.
#include "comm/core/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "comm/core/error.h"

namespace plexus {

namespace {

// clang-format off
constexpr ConfigVariable kVariables[] = {
  {"PLEXUS_RANK", ConfigType::Integer, "",
   "Rank of this process in the world communicator (plx_comm_init_from_env). When unset, "
   "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID are tried in that order."},
  {"PLEXUS_WORLD_SIZE", ConfigType::Integer, "",
   "Number of ranks in the world communicator. Falls back to WORLD_SIZE, "
   "OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS (same family as the rank)."},
  {"PLEXUS_LOCAL_RANK", ConfigType::Integer, "",
   "Index of this process among the ranks on its host. Falls back to LOCAL_RANK, "
   "OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; else computed from host ids."},
  {"PLEXUS_LOCAL_WORLD_SIZE", ConfigType::Integer, "",
   "Number of ranks on this host. Falls back to LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, "
   "MPI_LOCALNRANKS; else computed from host ids."},
  {"PLEXUS_MASTER_ADDR", ConfigType::String, "",
   "Address of the rendezvous server (rank 0 listens there). Falls back to MASTER_ADDR, then "
   "127.0.0.1. plx_get_unique_id listens on it when set."},
  {"PLEXUS_MASTER_PORT", ConfigType::Integer, "",
   "TCP port of the rendezvous server. Falls back to MASTER_PORT, then 29500 "
   "(plx_get_unique_id: a port chosen by the kernel)."},
  {"PLEXUS_JOB_TOKEN", ConfigType::String, "",
   "Secret of the job (16..1024 bytes), the same on every rank: a rank must prove it (an "
   "HMAC-SHA256 over the server's challenge, never the token itself) before the rendezvous "
   "admits it. plexus-run sets a random one. Unset: a key derived from the launcher's job id "
   "(torchrun, Open MPI, PMIx, Slurm), which keeps jobs apart but is no secret; see "
   "docs/security.md."},
  {"PLEXUS_TRANSPORT", ConfigType::String, "ofi",
   "Transport of the communicators: \"ofi\" (libfabric; PLEXUS_FI_PROVIDER picks the provider) "
   "or \"ucx\" (UCX; its own UCX_TLS and UCX_NET_DEVICES apply). Every rank must use the same."},
  {"PLEXUS_CHECK_ARGS", ConfigType::Integer, "1",
   "1: every collective first compares a 32-byte signature of its arguments across the ranks "
   "(ceil(log2 n) rounds of 72-byte messages) and returns PLX_ERROR_MISMATCH on every rank if "
   "they differ. "
   "0: skip the check (lower latency; mismatched calls then hang until PLEXUS_TIMEOUT_MS)."},
  {"PLEXUS_FI_PROVIDER", ConfigType::String, "",
   "libfabric provider to use, e.g. \"tcp\", \"tcp;ofi_rxm\", \"shm\", \"efa\". Unset: efa if "
   "present, else shm when every rank is on one host and shm passes a self-test, else tcp."},
  {"PLEXUS_FI_MAX_MSG_BYTES", ConfigType::Bytes, "0",
   "Largest single libfabric message; larger transport messages are split. 0 uses the "
   "provider's max_msg_size. Small values exercise the split path in tests."},
  {"PLEXUS_FI_HMEM", ConfigType::Integer, "1",
   "FI_HMEM: plx_send and plx_recv of device buffers hand the libfabric provider registered "
   "device memory instead of staging it through host memory. 1: open the provider with FI_HMEM "
   "when its FI_HMEM entry serves host messages as well (efa). 2: whenever it offers one (shm of "
   "libfabric 1.17 then loses its inject protocol: a group of many sends before their receives "
   "can stall). 0: never. The provider itself never changes. Set alike on every rank; any "
   "other value fails communicator creation, whatever the transport."},
  {"PLEXUS_TIMEOUT_MS", ConfigType::Integer, "300000",
   "Bound in milliseconds on the rendezvous, on any single wait without progress, and on the "
   "shutdown handshake of plx_comm_destroy."},
  {"PLEXUS_CHUNK_BYTES", ConfigType::Bytes, "1M",
   "Pipelining slice of the collective algorithms: the largest message the ring, chain, tree and "
   "halving/doubling algorithms cut a buffer into. Device buffers: the chunk of the pipelined "
   "staging (clamped to 64K..16M) and a quarter of a CUDA IPC slot."},
  {"PLEXUS_SHM", ConfigType::Integer, "1",
   "1: ranks of a communicator that all share a host map one shared-memory segment of staging "
   "buffers (2 x PLEXUS_CHUNK_BYTES per rank) and the cost model may pick the shm algorithms. "
   "0 on any rank: no segment (the shm algorithms, if forced, run their flat fallback) and no "
   "CUDA IPC for device buffers (they are staged)."},
  {"PLEXUS_DEBUG", ConfigType::LogLevel, "WARN",
   "Log level on stderr: WARN, INFO (decisions and errors) or TRACE (every message)."},
  {"PLEXUS_HOST_ID", ConfigType::String, "",
   "Overrides the host identity (default <hostname>/<boot id>); ranks with equal ids are "
   "on one host. Lets one machine emulate a cluster."},
  {"PLEXUS_TOPO_FILE", ConfigType::String, "",
   "Loads this host's topology from a file (Plexus JSON, or hwloc XML) instead of discovering "
   "it; a cluster file's host is chosen by PLEXUS_HOST_ID. See docs/topology.md."},
  {"PLEXUS_TOPO_DUMP_FILE", ConfigType::String, "",
   "Writes the discovered topology (Plexus JSON) to this file."},
  {"PLEXUS_PIN", ConfigType::String, "",
   "Pins each communicator's progress thread through hwloc: \"none\", \"numa\" (the NUMA node "
   "of the rank's local rank, or the process's own cpus when it is already bound) or \"core\" "
   "(one core per local rank). Unset: numa unless the process is bound to fewer cpus."},
  {"PLEXUS_ALGO", ConfigType::String, "",
   "Forces algorithms, e.g. \"allreduce:ring,broadcast:binomial\" (collective:algorithm, "
   "comma-separated; <collective>:auto or unset = chosen by the cost model). Names: "
   "docs/tuning.md; PLEXUS_DEBUG=INFO logs every choice and why."},
  {"PLEXUS_COST_MODEL", ConfigType::String, "",
   "\"alpha_us,beta_ns_per_byte,gamma_ns_per_byte\" (e.g. \"2.5,0.1,0.05\"): the cost model's "
   "latency, inverse bandwidth and reduction cost, used instead of measuring them; two more "
   "values \"...,inter_alpha_us,inter_beta_ns_per_byte\" give the network between hosts. Lets "
   "one machine emulate another's algorithm choices."},
  {"PLEXUS_CACHE_DIR", ConfigType::String, "",
   "Folder of the measured cost-model parameters (one JSON file per host and provider). "
   "Unset: $XDG_CACHE_HOME/plexus, else $HOME/.cache/plexus. Delete the file to re-measure."},
};
// clang-format on

const char* type_name(ConfigType type) {
  switch (type) {
    case ConfigType::Integer: return "integer";
    case ConfigType::Bytes: return "bytes";
    case ConfigType::String: return "string";
    case ConfigType::LogLevel: return "level";
  }
  return "?";
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// The raw text of a table variable: the environment's, else the default (nullopt if neither).
std::optional<std::string> raw_value(std::string_view name) {
  const ConfigVariable* var = find_config_variable(name);
  if (!var) return std::nullopt;
  if (auto value = env_value(std::string(name).c_str())) return value;
  if (var->default_value.empty()) return std::nullopt;
  return std::string(var->default_value);
}

plx_result_t parse_bytes(std::string_view name, std::string_view text, size_t min, size_t max,
                         size_t* out) {
  std::string_view digits = text;
  uint64_t scale = 1;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': scale = 1ull << 10; break;
      case 'M': scale = 1ull << 20; break;
      case 'G': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  const bool parsed = !digits.empty() && ec == std::errc() && end == digits.data() + digits.size();
  if (!parsed || value > std::numeric_limits<uint64_t>::max() / scale || value * scale < min ||
      value * scale > max) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}={} is not a byte count in {}..{} (suffixes K, M, G allowed)",
                                 name, text, min, max));
  }
  *out = static_cast<size_t>(value * scale);
  return PLX_SUCCESS;
}

}  // namespace

std::span<const ConfigVariable> config_variables() { return kVariables; }

const ConfigVariable* find_config_variable(std::string_view name) {
  for (const auto& var : kVariables) {
    if (var.name == name) return &var;
  }
  return nullptr;
}

void print_config_table(FILE* out) {
  for (const auto& var : kVariables) {
    std::string text = fmt::format("{} ({}, default: {})\n    {}\n", var.name, type_name(var.type),
                                   var.default_value.empty() ? "unset" : var.default_value,
                                   var.help);
    std::fwrite(text.data(), 1, text.size(), out);
  }
}

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

plx_result_t parse_integer_variable(std::string_view name, std::string_view text, int64_t min,
                                    int64_t max, int64_t* out) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}={} is not an integer in {}..{}", name, text, min, max));
  }
  *out = value;
  return PLX_SUCCESS;
}

plx_result_t config_integer(std::string_view name, int64_t min, int64_t max,
                            std::optional<int64_t>* out) {
  if (!find_config_variable(name)) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("{} is not in the config table", name));
  }
  auto text = raw_value(name);
  if (!text) {
    *out = std::nullopt;
    return PLX_SUCCESS;
  }
  int64_t value = 0;
  PLX_CHECK(parse_integer_variable(name, *text, min, max, &value));
  *out = value;
  return PLX_SUCCESS;
}

plx_result_t config_bytes(std::string_view name, size_t min, size_t max,
                          std::optional<size_t>* out) {
  if (!find_config_variable(name)) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("{} is not in the config table", name));
  }
  auto text = raw_value(name);
  if (!text) {
    *out = std::nullopt;
    return PLX_SUCCESS;
  }
  size_t value = 0;
  PLX_CHECK(parse_bytes(name, *text, min, max, &value));
  *out = value;
  return PLX_SUCCESS;
}

std::optional<std::string> config_string(std::string_view name) { return raw_value(name); }

plx_result_t config_log_level(LogLevel* out, std::string* why) {
  const std::string text = upper(raw_value("PLEXUS_DEBUG").value_or("WARN"));
  if (text == "WARN") *out = LogLevel::Warn;
  else if (text == "INFO") *out = LogLevel::Info;
  else if (text == "TRACE") *out = LogLevel::Trace;
  else {
    *why = fmt::format("PLEXUS_DEBUG={} is not one of WARN, INFO, TRACE",
                       env_value("PLEXUS_DEBUG").value_or(""));
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  return PLX_SUCCESS;
}

plx_result_t config_timeout_ms(int* out) {
  std::optional<int64_t> value;
  PLX_CHECK(config_integer("PLEXUS_TIMEOUT_MS", 1, std::numeric_limits<int>::max(), &value));
  *out = static_cast<int>(value.value_or(300000));
  return PLX_SUCCESS;
}

plx_result_t config_chunk_bytes(size_t* out) {
  std::optional<size_t> value;
  PLX_CHECK(config_bytes("PLEXUS_CHUNK_BYTES", 1, size_t{1} << 40, &value));
  *out = value.value_or(size_t{1} << 20);
  return PLX_SUCCESS;
}

}  // namespace plexus
