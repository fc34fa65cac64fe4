// env_settings_fuzz_target.cpp - the fuzzing entry point for the environment variables libplexus
// reads: integers and byte counts (comm/base/config.h), PLEXUS_DEBUG, PLEXUS_ALGO
// (comm/tuning/algo_override.h), PLEXUS_COST_MODEL (comm/tuning/cost_model_text.h), PLEXUS_PIN
// (topology/cpu_binding.h), the launchers' rank variables (topology/launcher_env.h) and
// PLEXUS_JOB_TOKEN (comm/bootstrap/job_key.h).
//
// Input bytes: [which byte] then the text. An environment value ends at its first NUL, so the
// getters see the text up to it; the parsers that take a string_view see all of it. The
// properties checked (a failure aborts, which the fuzzer reports):
//  - every parser returns PLX_SUCCESS or PLX_ERROR_INVALID_ARGUMENT with a message naming the
//    variable, never crashes, hangs or overflows (ASan and UBSan);
//  - integers and byte counts are accepted exactly when a reference reading of the text
//    (optional '-', decimal digits, for byte counts a K/M/G suffix) is in range, with its value;
//  - PLEXUS_DEBUG is accepted exactly when it is WARN, INFO or TRACE in any case (unset: WARN);
//  - PLEXUS_ALGO: accepted overrides force only algorithms of their own collective, and written
//    back (format_algo_overrides) parse to the same overrides; the env getter agrees;
//  - PLEXUS_COST_MODEL: accepted values are 3 or 5 finite numbers in 0..1e6 (scaled to seconds),
//    the fifth not 0;
//  - PLEXUS_PIN: accepted exactly as none, numa or core, which to_string gives back;
//  - launcher variables (the input's lines, one per variable of a fixed list; an empty line is
//    unset): accepted values give 0 <= rank < world size from the first family set, a local rank
//    below the local size, a local size within the world, a port in 1..65535;
//  - PLEXUS_JOB_TOKEN: accepted exactly when unset or 16..1024 bytes, the same key every time.
// The same entry point replays tests/fuzz/corpus/env_settings/ in ctest (corpus_replay_test.cpp).
#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/bootstrap/job_key.h"
#include "comm/bootstrap/launcher_env.h"
#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/cost_model_text.h"
#include "topology/cpu_binding.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using namespace plexus;

using plexus::fuzz::require;

void set_env(const char* name, const std::string& value) {
  if (value.empty()) unsetenv(name);
  else setenv(name, value.c_str(), 1);
}

// The text as an environment variable holds it: up to its first NUL.
std::string env_text(std::string_view text) { return std::string(text.substr(0, text.find('\0'))); }

// Reference reading of "-?[0-9]+", saturating at 2^80, far outside int64 and uint64 but with
// room for a byte count's scale (nullopt: not such a text).
std::optional<__int128> reference_integer(std::string_view text, bool allow_minus) {
  const bool minus = allow_minus && !text.empty() && text[0] == '-';
  if (minus) text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  __int128 value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = std::min<__int128>(value * 10 + (c - '0'), static_cast<__int128>(1) << 80);
  }
  return minus ? -value : value;
}

void check_integer(const uint8_t* data, size_t size) {
  static constexpr int64_t kBounds[][2] = {
      {0, INT_MAX}, {1, INT_MAX}, {1, 65535}, {INT64_MIN, INT64_MAX}, {-5, 5}, {0, 0}, {2, 1}};
  if (size < 1) return;
  const auto& [min, max] = kBounds[data[0] % std::size(kBounds)];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  int64_t value = 12345;
  const plx_result_t rc = parse_integer_variable("PLEXUS_FUZZ", text, min, max, &value);
  const std::optional<__int128> expected = reference_integer(text, true);
  const bool valid = expected && *expected >= min && *expected <= max;
  require(valid == (rc == PLX_SUCCESS), "parse_integer_variable disagrees with the reference");
  if (valid) {
    require(value == *expected, "parse_integer_variable read another value");
  } else {
    require(rc == PLX_ERROR_INVALID_ARGUMENT && value == 12345, "a refused integer was written");
    require(std::string_view(last_error()).starts_with("PLEXUS_FUZZ="),
            "a refused integer's message does not name the variable");
  }
}

// Byte counts: PLEXUS_CHUNK_BYTES (default 1M, 1..2^40) through config_bytes.
void check_bytes(std::string_view text) {
  const std::string value = env_text(text);
  set_env("PLEXUS_CHUNK_BYTES", value);
  std::optional<size_t> out;
  const plx_result_t rc = config_bytes("PLEXUS_CHUNK_BYTES", 1, size_t{1} << 40, &out);
  std::string_view digits = value.empty() ? std::string_view("1M") : std::string_view(value);
  __int128 scale = 1;
  if (!digits.empty()) {
    switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
      case 'K': scale = 1 << 10; break;
      case 'M': scale = 1 << 20; break;
      case 'G': scale = 1 << 30; break;
      default: break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  const std::optional<__int128> count = reference_integer(digits, false);
  const __int128 bytes = count ? *count * scale : 0;
  const bool valid = count && bytes >= 1 && bytes <= (static_cast<__int128>(1) << 40);
  require(valid == (rc == PLX_SUCCESS), "config_bytes disagrees with the reference", value);
  if (valid) require(out && *out == bytes, "config_bytes read another value", value);
  else require(std::string_view(last_error()).starts_with("PLEXUS_CHUNK_BYTES="),
               "a refused byte count's message does not name the variable");
  size_t chunk = 0;
  require((config_chunk_bytes(&chunk) == PLX_SUCCESS) == valid && (!valid || chunk == bytes),
          "config_chunk_bytes disagrees with config_bytes");
}

// PLEXUS_TIMEOUT_MS (default 300000, 1..INT_MAX) through config_integer and config_timeout_ms.
void check_timeout(std::string_view text) {
  const std::string value = env_text(text);
  set_env("PLEXUS_TIMEOUT_MS", value);
  std::optional<int64_t> out;
  const plx_result_t rc = config_integer("PLEXUS_TIMEOUT_MS", 1, INT_MAX, &out);
  const std::optional<__int128> expected =
      value.empty() ? std::optional<__int128>(300000) : reference_integer(value, true);
  const bool valid = expected && *expected >= 1 && *expected <= INT_MAX;
  require(valid == (rc == PLX_SUCCESS), "config_integer disagrees with the reference", value);
  if (valid) require(out && *out == *expected, "config_integer read another value", value);
  int timeout = 0;
  require((config_timeout_ms(&timeout) == PLX_SUCCESS) == valid &&
              (!valid || timeout == *expected),
          "config_timeout_ms disagrees with config_integer");
}

void check_log_level(std::string_view text) {
  const std::string value = env_text(text);
  set_env("PLEXUS_DEBUG", value);
  std::string upper = value.empty() ? "WARN" : value;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  LogLevel level = LogLevel::Trace;
  std::string why;
  const plx_result_t rc = config_log_level(&level, &why);
  if (upper == "WARN" || upper == "INFO" || upper == "TRACE") {
    require(rc == PLX_SUCCESS, "a valid PLEXUS_DEBUG was refused", value);
    const LogLevel expected = upper == "WARN"   ? LogLevel::Warn
                              : upper == "INFO" ? LogLevel::Info
                                                : LogLevel::Trace;
    require(level == expected, "PLEXUS_DEBUG read as another level", value);
  } else {
    require(rc == PLX_ERROR_INVALID_ARGUMENT && level == LogLevel::Trace,
            "an invalid PLEXUS_DEBUG was accepted", value);
    require(why == "PLEXUS_DEBUG=" + value + " is not one of WARN, INFO, TRACE",
            "an invalid PLEXUS_DEBUG's message is not the documented one", why);
  }
  unsetenv("PLEXUS_DEBUG");
}

void check_algo(std::string_view text) {
  comm::AlgoOverrides overrides;
  const plx_result_t rc = comm::parse_algo_overrides(text, "PLEXUS_ALGO", 3, &overrides);
  comm::AlgoOverrides spec;
  const plx_result_t spec_rc = comm::parse_algo_overrides(text, &spec);
  require(rc == spec_rc, "the env and plx_comm_set_algorithm forms disagree");
  if (rc != PLX_SUCCESS) {
    require(rc == PLX_ERROR_INVALID_ARGUMENT, "a refused PLEXUS_ALGO is not INVALID_ARGUMENT");
    require(std::string_view(last_error()).starts_with("spec \""),
            "a refused spec's message does not start with it");
  } else {
    require(overrides.forced == spec.forced && overrides.source == "PLEXUS_ALGO" &&
                spec.source == "plx_comm_set_algorithm",
            "the two forms read different overrides");
    for (size_t c = 0; c < overrides.forced.size(); ++c) {
      if (overrides.forced[c]) {
        const auto collective = static_cast<comm::Collective>(c);
        require(comm::algorithm_collective(*overrides.forced[c]) == collective,
                "an algorithm forced for another collective");
      }
    }
    const std::string written = comm::format_algo_overrides(overrides);
    comm::AlgoOverrides back;
    require(comm::parse_algo_overrides(written, "PLEXUS_ALGO", 3, &back) == PLX_SUCCESS &&
                back.forced == overrides.forced,
            "overrides written back do not parse to themselves", written);
  }
  // Through the environment: what the getter sees is the text up to a NUL.
  const std::string value = env_text(text);
  set_env("PLEXUS_ALGO", value);
  comm::AlgoOverrides from_env;
  comm::AlgoOverrides direct;
  const plx_result_t env_rc = comm::algo_overrides_from_env(3, &from_env);
  require(env_rc == comm::parse_algo_overrides(value, "PLEXUS_ALGO", 3, &direct) &&
              (env_rc != PLX_SUCCESS || from_env.forced == direct.forced),
          "algo_overrides_from_env disagrees with parse_algo_overrides");
  unsetenv("PLEXUS_ALGO");
}

void check_cost_model(std::string_view text) {
  comm::CostParams params;
  params.alpha_s = -1;
  const plx_result_t rc = comm::parse_cost_model(text, 3, &params);
  if (rc != PLX_SUCCESS) {
    require(rc == PLX_ERROR_INVALID_ARGUMENT && params.alpha_s == -1,
            "a refused PLEXUS_COST_MODEL was written");
    require(std::string_view(last_error()).starts_with("PLEXUS_COST_MODEL=\""),
            "a refused PLEXUS_COST_MODEL's message does not name it");
    return;
  }
  const auto commas = std::count(text.begin(), text.end(), ',');
  require(commas == 2 || commas == 4, "PLEXUS_COST_MODEL accepted with neither 3 nor 5 values");
  const double values[] = {params.alpha_s * 1e6, params.beta_s_per_byte * 1e9,
                           params.gamma_s_per_byte * 1e9, params.inter_alpha_s * 1e6,
                           params.inter_beta_s_per_byte * 1e9};
  for (double v : values) {
    require(std::isfinite(v) && v >= 0 && v <= 1e6 * (1 + 1e-12),
            "a PLEXUS_COST_MODEL value out of 0..1e6");
  }
  require((commas == 4) == params.two_level(), "five values are not two levels");
}

void check_pin(std::string_view text) {
  const std::optional<topology::PinMode> mode = topology::parse_pin_mode(text);
  const bool valid = text == "none" || text == "numa" || text == "core";
  require(mode.has_value() == valid, "parse_pin_mode disagrees with none, numa, core");
  if (mode) require(topology::to_string(*mode) == text, "a pin mode does not write back");
}

constexpr const char* kLauncherVars[] = {
    "PLEXUS_RANK", "PLEXUS_WORLD_SIZE", "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
    "PLEXUS_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
    "SLURM_LOCALID", "PLEXUS_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PLEXUS_MASTER_ADDR", "MASTER_ADDR",
    "PLEXUS_MASTER_PORT", "MASTER_PORT"};
// Name, rank variable, size variable, in launcher_env.h's order of precedence.
constexpr const char* kFamilies[][3] = {
    {"PLEXUS", "PLEXUS_RANK", "PLEXUS_WORLD_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"MPICH", "PMI_RANK", "PMI_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"}};

void check_launcher(std::string_view text) {
  // One line per variable, in kLauncherVars' order; missing or empty lines leave it unset.
  std::vector<std::string> lines;
  for (size_t begin = 0; begin <= text.size() && lines.size() < std::size(kLauncherVars);) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    lines.push_back(env_text(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  lines.resize(std::size(kLauncherVars));
  for (size_t i = 0; i < lines.size(); ++i) set_env(kLauncherVars[i], lines[i]);
  bootstrap::LauncherEnv env;
  env.rank = -7;
  const plx_result_t rc = bootstrap::read_launcher_env(&env);
  for (const char* name : kLauncherVars) unsetenv(name);
  if (rc != PLX_SUCCESS) {
    require(rc == PLX_ERROR_INVALID_ARGUMENT && env.rank == -7,
            "a refused launcher environment was written");
    require(std::string_view(last_error()).find('=') != std::string_view::npos,
            "a refused launcher environment's message names no variable", last_error());
    return;
  }
  std::string family = "none";
  for (const auto& f : kFamilies) {
    const auto set = [&](const char* name) {
      for (size_t i = 0; i < std::size(kLauncherVars); ++i)
        if (std::strcmp(kLauncherVars[i], name) == 0) return !lines[i].empty();
      return false;
    };
    if (set(f[1]) || set(f[2])) {
      family = f[0];
      break;
    }
  }
  require(env.family == family, "the launcher family is not the first one set", env.family);
  require(env.world_size >= 1 && env.rank >= 0 && env.rank < env.world_size,
          "rank not in 0..world size - 1");
  require(env.local_size == -1 || (env.local_size >= 1 && env.local_size <= env.world_size),
          "local size not in 1..world size");
  require(env.local_rank == -1 || env.local_rank >= 0, "a negative local rank");
  require(env.local_rank == -1 || env.local_size == -1 || env.local_rank < env.local_size,
          "local rank not below the local size");
  require(env.master_port >= 1 && env.master_port <= 65535 && !env.master_addr.empty(),
          "a bad rendezvous address");
}

void check_job_token(std::string_view text) {
  const std::string value = env_text(text);
  for (const char* name : {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                           "SLURM_JOB_ID", "SLURM_STEP_ID"}) {
    unsetenv(name);
  }
  set_env("PLEXUS_JOB_TOKEN", value);
  bootstrap::JobKey key;
  key.source = "untouched";
  const plx_result_t rc = bootstrap::job_key_from_env(&key);
  const bool valid = value.empty() || (value.size() >= 16 && value.size() <= 1024);
  require((rc == PLX_SUCCESS) == valid, "PLEXUS_JOB_TOKEN's length check is wrong");
  if (rc == PLX_SUCCESS) {
    require(key.secret == !value.empty(), "a token key is not secret, or the fixed key is");
    bootstrap::JobKey again;
    require(bootstrap::job_key_from_env(&again) == PLX_SUCCESS && again.bytes == key.bytes,
            "the same token gave another key");
  } else {
    require(rc == PLX_ERROR_INVALID_ARGUMENT && key.source == "untouched",
            "a refused token was written");
    require(std::string_view(last_error()).starts_with("PLEXUS_JOB_TOKEN is "),
            "a refused token's message does not name it");
  }
  unsetenv("PLEXUS_JOB_TOKEN");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The log level is read once, before any input sets PLEXUS_DEBUG: fuzzing never logs.
  static const LogLevel level = log_level();
  (void)level;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 9) {
    case 0: check_integer(data + 1, size - 1); break;
    case 1: check_bytes(text); break;
    case 2: check_timeout(text); break;
    case 3: check_log_level(text); break;
    case 4: check_algo(text); break;
    case 5: check_cost_model(text); break;
    case 6: check_pin(text); break;
    case 7: check_launcher(text); break;
    default: check_job_token(text); break;
  }
  return 0;
}
