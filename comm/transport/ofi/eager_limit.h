// eager_limit.h - the largest message a libfabric provider sends eagerly: at once, without
// first asking its receiver for room.
//
// ofi_rxm (tcp;ofi_rxm, verbs;ofi_rxm) sends a message of up to its eager limit in one packet
// of FI_OFI_RXM_BUFFER_SIZE bytes (default 16 KiB) that carries rxm's own header; a larger one
// goes by segmentation (SAR) or by rendezvous, whose receiver answers before the bytes move
// (libfabric's fi_rxm(7)). On a link loaded both ways that answer queues behind the bytes ahead
// of it: on the emulated cluster the hierarchical allreduce's lane steps of 32-256 KiB ran
// 1.1-1.6x slower than steps of 16 KiB (comm/algorithms/hierarchical_segments.h).
#pragma once

#include <cstddef>
#include <string_view>

namespace plexus::comm::ofi {

// rxm's packet header is below this many bytes (its control and operation headers).
constexpr size_t kRxmHeaderBoundBytes = 128;

// The eager limit of `provider` (fi_fabric_attr's prov_name, e.g. "tcp;ofi_rxm"): for ofi_rxm
// FI_OFI_RXM_BUFFER_SIZE (a decimal byte count from 1 KiB to 1 GiB; anything else, or unset,
// rxm's default 16384) less kRxmHeaderBoundBytes; 0 (unknown) for every other provider.
size_t eager_limit_bytes(std::string_view provider);

}  // namespace plexus::comm::ofi
