// provider_select.h - which libfabric provider a communicator runs on.
//
// PLEXUS_FI_PROVIDER forces one ("tcp", "tcp;ofi_rxm", "shm", "efa", ...). Otherwise:
//   1. efa, if the host has it;
//   2. shm, if every rank is on this host and shm passed its self-test on every rank (it may
//      lack the cross-process memory access it relies on in a container); the communicator
//      gathers the verdicts at rendezvous so that all ranks decide alike;
//   3. tcp (as tcp;ofi_rxm), on the loopback interface when every rank is on this host.
// Each decision and the reason for a fallback are logged at PLEXUS_DEBUG=INFO.
//
// FI_HMEM: once the provider is chosen, a second fi_getinfo asks the same provider, on the same
// domain and address format, for caps | FI_HMEM with mr_mode | FI_MR_HMEM. The entry it offers
// is opened instead of the first (device buffers of plx_send/plx_recv then go straight to the
// provider, transport.h post_send_hmem) with PLEXUS_FI_HMEM=1 (the default) when it offers host
// messages as much as the first (inject size, queue sizes, largest message: efa), with
// PLEXUS_FI_HMEM=2 always (shm of libfabric 1.17 then loses its inject protocol); never with 0.
// Should it fail to open, the first entry is: asking for FI_HMEM never changes the provider.
#pragma once

#include <string>

#include "comm/transport/ofi/ofi_util.h"

namespace plexus::comm::ofi {

// The fi_getinfo hints Plexus needs: RDM endpoint, tagged messages, directed receive, no local
// memory registration, fi_context2 per operation. `provider` may be empty (any).
InfoPtr make_hints(const std::string& provider);

// The entry of the same provider, domain and address format as `chosen` with FI_HMEM, or null
// when the provider offers none (or PLEXUS_FI_HMEM=0). Never fails.
InfoPtr hmem_variant(const fi_info& chosen);

// Chooses the provider and returns the fi_info entry (interface) to open: its FI_HMEM variant
// when PLEXUS_FI_HMEM takes it (above), with the plain entry chained after it (->next) for
// OfiTransport::open to fall back on. Errors: PLX_ERROR_INVALID_ARGUMENT for a PLEXUS_FI_HMEM
// not in 0..2; PLX_ERROR_TRANSPORT if the forced provider (or none at all) can be opened.
plx_result_t select_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
                             InfoPtr* out);

// Runs the shm self-test once per process (cached): opens an shm endpoint, sends itself a small
// and a 1 MiB message, checks the bytes. Returns true if shm works; else *why says why not.
bool shm_works(std::string* why);

}  // namespace plexus::comm::ofi
