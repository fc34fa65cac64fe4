// ucx_util.h - small helpers shared by the UCX transport's files: the wire tag that carries the
// sender's rank, and the one way a UCX status becomes a Plexus error.
#pragma once

#include <ucs/type/status.h>

#include <cstdint>
#include <string_view>

#include "comm/transport/tag.h"
#include "plexus/plexus.h"

namespace plexus::comm::ucx {

// UCX tags carry no source, so the sender's rank rides in bits kTagUserBits..63 of the wire tag
// (comm/transport/tag.h): 19 bits, so at most 2^19 ranks.
constexpr int kRankBits = 64 - kTagUserBits;
constexpr int64_t kMaxRanks = int64_t{1} << kRankBits;
constexpr uint64_t kUserTagMask = (uint64_t{1} << kTagUserBits) - 1;
// A directed receive matches every bit: the source rank and the tag of the layers above.
constexpr uint64_t kFullTagMask = ~uint64_t{0};

// The tag a message from `src_rank` carries on the wire.
constexpr uint64_t wire_tag(int src_rank, uint64_t tag) {
  return (static_cast<uint64_t>(src_rank) << kTagUserBits) | (tag & kUserTagMask);
}

// Records "rank R: <call> failed: <ucs_status_string> (<status>)[: <detail>]" and returns
// PLX_ERROR_TRANSPORT.
plx_result_t ucx_error(int rank, std::string_view call, ucs_status_t status,
                       std::string_view detail = {});

}  // namespace plexus::comm::ucx
