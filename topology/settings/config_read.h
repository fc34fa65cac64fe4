// config_read.h - reading the table's variables (config_table.h) from the environment.
//
// Environment values are hostile: a value is parsed whole (no trailing text, no overflow, within
// the caller's range) or refused with a message naming the variable and the value. Errors are
// returned as text, since this library sits below comm's per-thread last error: comm wraps these
// in comm/base/config.h, topology and the tools pass the text on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plexus/plexus.h"

namespace plexus {

// The environment value of `name` (any variable, not only ours); nullopt when unset or empty.
std::optional<std::string> env_value(const char* name);

// The text of a table variable: the environment's, else the table default; nullopt if neither,
// or if `name` is not in the table (a programming error the table tests catch).
std::optional<std::string> config_text(std::string_view name);

// The environment's text of a table variable exactly as set, empty included (config_text treats
// empty as unset); nullopt when unset or not in the table. For a variable whose empty value
// must be refused rather than ignored (PLEXUS_JOB_TOKEN: empty must not turn authentication
// off).
std::optional<std::string> config_text_as_set(std::string_view name);

// Parses `text` as a decimal integer in min..max. On failure returns PLX_ERROR_INVALID_ARGUMENT
// and sets *error to "NAME=text is not an integer in min..max".
plx_result_t parse_integer_text(std::string_view name, std::string_view text, int64_t min,
                                int64_t max, int64_t* out, std::string* error);

// Parses `text` as a byte count (decimal with an optional K, M or G suffix, powers of 1024) in
// min..max. On failure PLX_ERROR_INVALID_ARGUMENT and *error
// "NAME=text is not a byte count in min..max (suffixes K, M, G allowed)".
plx_result_t parse_bytes_text(std::string_view name, std::string_view text, size_t min,
                              size_t max, size_t* out, std::string* error);

// A table variable as an integer or a byte count: config_text() parsed as above; *out nullopt
// when the variable is unset and has no default. PLX_ERROR_INTERNAL ("NAME is not in the config
// table") for a name the table lacks. *out is written only on success.
plx_result_t read_config_integer(std::string_view name, int64_t min, int64_t max,
                                 std::optional<int64_t>* out, std::string* error);
plx_result_t read_config_bytes(std::string_view name, size_t min, size_t max,
                               std::optional<size_t>* out, std::string* error);

}  // namespace plexus
