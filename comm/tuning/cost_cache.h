// cost_cache.h - the cost model's parameters, measured once per host and transport, cached on
// disk, or given by PLEXUS_COST_MODEL.
//
// Where the parameters come from, in order (decided by rank 0, obeyed by all):
//   1. PLEXUS_COST_MODEL="alpha_us,beta_ns_per_byte,gamma_ns_per_byte", e.g. "2.5,0.1,0.05",
//      or with the two levels' inter-host values appended,
//      "alpha_us,beta_ns_per_byte,gamma_ns_per_byte,inter_alpha_us,inter_beta_ns_per_byte":
//      no measurement at all (tests, and emulating another machine). Three values on a
//      communicator that spans hosts mean one level.
//   2. The cache file <dir>/cost-<host>-<provider>.json, <dir> = PLEXUS_CACHE_DIR, else
//      $XDG_CACHE_HOME/plexus, else $HOME/.cache/plexus. A file that cannot be parsed, has another
//      format version, or names another host or provider is ignored with a WARN line.
//      On a communicator that spans hosts a file without the inter-host values does not do: it
//      is measured again (both levels) and rewritten.
//   3. measure_cost_params (comm/tuning/measure.h) on every rank, with both levels when the
//      communicator spans hosts; rank 0 then writes the cache atomically (a temporary file
//      renamed over the old one). A failed write is a WARN, not an error: the measured parameters
//      are used anyway.
// The file (format version kCostCacheVersion; the inter_* fields only with two levels):
//   {"format": "plexus-cost-model", "version": 2, "host_id": "...", "provider": "tcp;ofi_rxm",
//    "alpha_s": 2.9e-06, "beta_s_per_byte": 2.1e-10, "gamma_s_per_byte": 5e-11,
//    "inter_alpha_s": 2.5e-05, "inter_beta_s_per_byte": 4e-09, "measured_unix_s": 1700000000}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "comm/algorithms/host_layout.h"
#include "comm/transport/transport.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_model_text.h"  // parse_cost_model

namespace plexus::comm {

// 2: inter_beta_s_per_byte from a stream (measure.h); a file of version 1 is measured again.
constexpr int kCostCacheVersion = 2;

// The cache folder as described above; "" when none of the variables is set.
std::string cost_cache_dir();

// "cost-<host>-<provider>.json", each part with every character outside [A-Za-z0-9._-]
// replaced by '_' and cut to 100 characters.
std::string cost_cache_file_name(std::string_view host_id, std::string_view provider);

// Reads `path`; true and *out on success. False with *why ("no such file", "not JSON: ...",
// "version 0, expected 1", "host_id x, expected y", ...) otherwise. Never sets the last error.
bool read_cost_cache(const std::string& path, std::string_view host_id, std::string_view provider,
                     CostParams* out, std::string* why);

// Writes `path` atomically (creating its folder); false with *why on failure.
bool write_cost_cache(const std::string& path, std::string_view host_id,
                      std::string_view provider, const CostParams& params, std::string* why);

// Collective: every rank of the transport calls it with the same tag_base at communicator
// creation. Rank 0 picks the source (1-3 above) and broadcasts its decision; if it must measure,
// every rank runs measure_cost_params; every rank ends with rank 0's parameters in *out.
// Tag indices: tag_base | 0..kCostTagIndices-1 (measure.h). `host_id` keys the cache (with
// transport.name()); "" reads as "unknown-host". With one rank nothing is measured: *out comes
// from PLEXUS_COST_MODEL, else the cache, else kDefaultCostParams.
// Returns PLX_ERROR_INVALID_ARGUMENT if out is NULL or PLEXUS_COST_MODEL is malformed (rank 0's
// value decides; the other ranks report their own value's error, or that rank 0 rejected it), or
// the transport's error if a message fails. *out is written only on success. Logs at INFO where
// the parameters came from.
plx_result_t load_or_measure(Transport& transport, uint64_t tag_base, const std::string& host_id,
                             CostParams* out);
// The same for a communicator laid out as `hosts` (NULL: one host): with several hosts it
// measures both levels, and a cached or given one-level value set is taken as described above.
plx_result_t load_or_measure(Transport& transport, uint64_t tag_base, const std::string& host_id,
                             const HostLayout* hosts, CostParams* out);

}  // namespace plexus::comm
