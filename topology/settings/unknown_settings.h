// unknown_settings.h - PLEXUS_* variables in the environment that the table does not know.
//
// A misspelt setting (PLEXUS_ALOG=ring) would otherwise be ignored in silence. Each unknown name
// gets one line naming it and, when a known name is close, that name:
//   unknown setting PLEXUS_ALOG (did you mean PLEXUS_ALGO?)
//   unknown setting PLEXUS_FOO (plexus-info --env lists the known ones)
// The value is never shown: a misspelt PLEXUS_JOB_TOKEN would put the secret in the log.
// "Close" is an optimal-string-alignment distance (insertions, deletions, substitutions and
// swaps of neighbours, letter case ignored) of at most 1 + (letters after "PLEXUS_") / 3, at
// most 3: PLEXUS_TIMEOUT finds PLEXUS_TIMEOUT_MS, PLEXUS_FOO finds nothing. The nearest wins,
// the earlier in the table on a tie.
//
// Names are hostile: bytes outside printable ASCII (and the backslash) are written as
// \xNN, a name longer than kMaxShownBytes is cut (with "...") and a name that long gets
// no suggestion, and at most kMaxUnknownLines names are listed, then one line counts the rest.
// The lines are for comm's log (comm/base/config.h reports them once per process).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plexus {

inline constexpr size_t kMaxShownBytes = 64;
inline constexpr size_t kMaxUnknownLines = 16;

// Edit distance between a and b as described above (case-insensitive, adjacent swaps count 1).
size_t setting_name_distance(std::string_view a, std::string_view b);

// The table name closest to `name`, if one is close enough.
std::optional<std::string_view> nearest_setting_name(std::string_view name);

// The warning lines for `environment` ("NAME=value" entries, null-terminated like environ),
// in its order; empty when every PLEXUS_* name is in the table.
std::vector<std::string> unknown_setting_lines(const char* const* environment);

}  // namespace plexus
