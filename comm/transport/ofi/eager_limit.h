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
#include <string>
#include <string_view>

namespace plexus::comm::ofi {

// rxm's packet header is below this many bytes (its control and operation headers).
constexpr size_t kRxmHeaderBoundBytes = 128;
// The largest FI_OFI_RXM_BUFFER_SIZE a communicator accepts: rxm allocates its receive pools in
// buffers of that size, so that 16 MiB ones made two ranks reach 3.5 GB each and never finish
// setting up (and 64 MiB ones fail in fi_enable with ENOMEM).
constexpr size_t kMaxRxmBufferBytes = size_t{1} << 20;

// The eager limit of `provider` (fi_fabric_attr's prov_name, e.g. "tcp;ofi_rxm") when
// FI_OFI_RXM_BUFFER_SIZE is `rxm_buffer_size` and FI_OFI_RXM_EAGER_LIMIT is `rxm_eager_limit`
// (nullptr: unset). For ofi_rxm each value is read as libfabric reads it (strtol, base 0:
// "32768", "0x8000" and " 32768" alike, digits up to the first other character): the buffer
// size (unset: rxm's default 16384) less kRxmHeaderBoundBytes, or the eager limit if it is set
// and smaller (rxm sends eagerly up to it: fi_info -e). A value outside
// 1 KiB..kMaxRxmBufferBytes, or one that does not parse, gives 0 (unknown). 0 for every other
// provider.
size_t eager_limit_bytes(std::string_view provider, const char* rxm_buffer_size,
                         const char* rxm_eager_limit = nullptr);

// The same for this process's FI_OFI_RXM_BUFFER_SIZE and FI_OFI_RXM_EAGER_LIMIT, read once, on
// the first call, as libfabric reads them once when it loads the provider. Thread-safe.
size_t process_eager_limit_bytes(std::string_view provider);

// For an ofi_rxm `provider`, what is wrong with FI_OFI_RXM_BUFFER_SIZE = `rxm_buffer_size` for
// a communicator, naming the variable, or "" when nothing is (unset, or any value rxm copes
// with: libfabric 1.17 takes values it cannot use, below its headers or unparsable, as its
// default, with a warning). Wrong: negative (rxm reads it as a huge size_t and fails with
// ENOMEM) or above kMaxRxmBufferBytes (see there). "" for every other provider.
std::string rxm_buffer_size_problem(std::string_view provider, const char* rxm_buffer_size);

// The same for this process's FI_OFI_RXM_BUFFER_SIZE (read once, as above).
std::string process_rxm_buffer_size_problem(std::string_view provider);

}  // namespace plexus::comm::ofi
