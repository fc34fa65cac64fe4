// config.h - comm's view of the PLEXUS_* table (topology/settings/config_table.h): the typed getters with
// comm's error reporting (set_error), the log level, and the once-per-process report of unknown
// PLEXUS_* names.
//
// Every variable is declared once in topology/settings/config_table.cpp with its full name, type, default
// and help, so `grep PLEXUS_TIMEOUT_MS` finds its definition and print_config_table() documents
// all of them. Launcher variables that Plexus merely honours (RANK, OMPI_COMM_WORLD_RANK,
// SLURM_PROCID, ...) belong to their launchers and are listed in topology/launcher_env.cpp
// instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "comm/base/log.h"
#include "plexus/plexus.h"
#include "topology/settings/config_read.h"
#include "topology/settings/config_table.h"

namespace plexus {

// Parses `text` as a decimal integer in min..max. On failure returns
// PLX_ERROR_INVALID_ARGUMENT with the message "NAME=text is not an integer in min..max"
// (set_error), which callers prefix with the function and rank.
plx_result_t parse_integer_variable(std::string_view name, std::string_view text, int64_t min,
                                    int64_t max, int64_t* out);

// Typed getters for table variables: the environment's value if set, else the table default.
// A variable without a default that is unset leaves *out as nullopt. Malformed values return
// PLX_ERROR_INVALID_ARGUMENT naming the variable and its value (set_error).
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
plx_result_t config_spin_us(int* out);          // PLEXUS_SPIN_US

// Logs each line of unknown_setting_lines(environ) (topology/settings/unknown_settings.h) as a WARN,
// the first time it is called in the process; later calls do nothing. Thread-safe. Called when a
// communicator is created, once its rank is known to the log.
void report_unknown_settings();

}  // namespace plexus
