// eager_limit.h - the largest message a libfabric provider sends eagerly: at once, without
// first asking its receiver for room.
//
// ofi_rxm (tcp;ofi_rxm, verbs;ofi_rxm) sends a message of up to its eager limit in one packet;
// a larger one goes by segmentation (SAR) or by rendezvous, whose receiver answers before the
// bytes move (libfabric's fi_rxm(7)). The limit is FI_OFI_RXM_BUFFER_SIZE (default 16384), less
// rxm's packet header in some libfabric versions and not in others, so Plexus counts
// kRxmHeaderBoundBytes less either way. On a link loaded both ways a non-eager message's answer
// queues behind the bytes ahead of it: on the emulated cluster the hierarchical allreduce's lane
// steps of 24-256 KiB ran 1.1-2.6x slower than steps of 16 KiB
// (comm/algorithms/hierarchical_segments.h).
#pragma once

#include <cstddef>
#include <string_view>

namespace plexus::comm::ofi {

// rxm's packet header is below this many bytes (its control and operation headers).
constexpr size_t kRxmHeaderBoundBytes = 128;

// The eager limit of `provider` (fi_fabric_attr's prov_name, e.g. "tcp;ofi_rxm") when
// FI_OFI_RXM_BUFFER_SIZE is `rxm_buffer_size` (nullptr: unset). For ofi_rxm the value is read as
// libfabric reads it (strtol, base 0: "32768", "0x8000" and " 32768" alike, digits up to the
// first other character); unset gives rxm's default 16384; a result outside 1 KiB..1 GiB (which
// libfabric refuses or cannot use), or one that does not parse, gives 0. The limit is that value
// less kRxmHeaderBoundBytes. 0 (unknown) for every other provider.
size_t eager_limit_bytes(std::string_view provider, const char* rxm_buffer_size);

// The same for this process's FI_OFI_RXM_BUFFER_SIZE, read once, on the first call, as
// libfabric reads it once when it loads the provider. Thread-safe.
size_t process_eager_limit_bytes(std::string_view provider);

}  // namespace plexus::comm::ofi
