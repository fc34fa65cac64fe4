// provider_select.h - which libfabric provider a communicator runs on.
//
// PLEXUS_FI_PROVIDER forces one ("tcp", "tcp;ofi_rxm", "shm", "efa", ...). Otherwise:
//   1. efa, if the host has it;
//   2. shm, if every rank is on this host and shm passed its self-test on every rank (it may
//      lack the cross-process memory access it relies on in a container); the communicator
//      gathers the verdicts at rendezvous so that all ranks decide alike;
//   3. tcp (as tcp;ofi_rxm), on the loopback interface when every rank is on this host.
// Each decision and the reason for a fallback are logged at PLEXUS_DEBUG=INFO.
#pragma once

#include <string>

#include "comm/transport/ofi/ofi_util.h"

namespace plexus::comm::ofi {

// The fi_getinfo hints Plexus needs: RDM endpoint, tagged messages, directed receive, no local
// memory registration, fi_context2 per operation. `provider` may be empty (any).
InfoPtr make_hints(const std::string& provider);

// Chooses the provider and returns the fi_info entry (interface) to open. Errors:
// PLX_ERROR_TRANSPORT if the forced provider (or none at all) can be opened.
plx_result_t select_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
                             InfoPtr* out);

// Runs the shm self-test once per process (cached): opens an shm endpoint, sends itself a small
// and a 1 MiB message, checks the bytes. Returns true if shm works; else *why says why not.
bool shm_works(std::string* why);

}  // namespace plexus::comm::ofi
