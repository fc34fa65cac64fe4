// config.h - the one table of PLEXUS_* environment variables libplexus reads.
//
// Every variable is declared once in config.cpp with its full name, type, default and help, so
// `grep PLEXUS_TIMEOUT_MS` finds its definition and print_config_table() documents all of them.
// Launcher variables that Plexus merely honours (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...)
// belong to their launchers and are listed in comm/bootstrap/launcher_env.cpp instead.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "comm/core/log.h"
#include "plexus/plexus.h"

namespace plexus {

enum class ConfigType {
  Integer,   // decimal integer
  Bytes,     // byte count: decimal, optionally with a K, M or G suffix (powers of 1024)
  String,    // free text
  LogLevel,  // WARN, INFO or TRACE
};

struct ConfigVariable {
  std::string_view name;
  ConfigType type;
  std::string_view default_value;  // "" = no default (unset means "not given")
  std::string_view help;
};

// All variables, in the order print_config_table() shows them.
std::span<const ConfigVariable> config_variables();

// The table entry for `name`, or nullptr.
const ConfigVariable* find_config_variable(std::string_view name);

// Prints NAME, TYPE, DEFAULT and HELP for every variable, one block each.
void print_config_table(FILE* out);

// The environment value of `name` (any variable, not only ours); nullopt when unset or empty.
std::optional<std::string> env_value(const char* name);

// Parses `text` as a decimal integer in min..max. On failure returns
// PLX_ERROR_INVALID_ARGUMENT with the message "NAME=text is not an integer in min..max"
// (set_error), which callers prefix with the function and rank.
plx_result_t parse_integer_variable(std::string_view name, std::string_view text, int64_t min,
                                    int64_t max, int64_t* out);

// Typed getters for table variables: the environment's value if set, else the table default.
// A variable without a default that is unset leaves *out as nullopt. Malformed values return
// PLX_ERROR_INVALID_ARGUMENT naming the variable and its value.
plx_result_t config_integer(std::string_view name, int64_t min, int64_t max,
                            std::optional<int64_t>* out);
plx_result_t config_bytes(std::string_view name, size_t min, size_t max,
                          std::optional<size_t>* out);
std::optional<std::string> config_string(std::string_view name);

// PLEXUS_DEBUG as a level. On a malformed value returns PLX_ERROR_INVALID_ARGUMENT and writes the
// reason to *why without touching the thread's last error (the logger calls this).
plx_result_t config_log_level(LogLevel* out, std::string* why);

// Shorthands for the values every communicator reads.
plx_result_t config_timeout_ms(int* out);       // PLEXUS_TIMEOUT_MS
plx_result_t config_chunk_bytes(size_t* out);   // PLEXUS_CHUNK_BYTES

}  // namespace plexus
