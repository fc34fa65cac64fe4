// cost_model_text.h - PLEXUS_COST_MODEL's text: the cost model's parameters given instead of
// measured (cost_cache.h says when they apply).
#pragma once

#include <string_view>

#include "comm/tuning/cost_model.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// Parses PLEXUS_COST_MODEL's text: three or five comma-separated non-negative decimal numbers,
// alpha in microseconds, beta and gamma in nanoseconds per byte, then optionally the inter-host
// alpha (microseconds) and beta (nanoseconds per byte) (whitespace allowed), each at most 1e6,
// the fifth not 0. Returns PLX_ERROR_INVALID_ARGUMENT with "PLEXUS_COST_MODEL=\"text\": rank R:
// ..." otherwise; *out is written only on success.
plx_result_t parse_cost_model(std::string_view text, int rank, CostParams* out);

}  // namespace plexus::comm
