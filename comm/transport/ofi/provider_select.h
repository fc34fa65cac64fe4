// provider_select.h - which libfabric provider a communicator runs on.
//
// PLEXUS_FI_PROVIDER forces one ("tcp", "tcp;ofi_rxm", "shm", "efa", ...). Otherwise:
//   1. efa, if the host has it, on the NIC nearest the rank's GPU (nic_select.h);
//   2. shm, if every rank is on this host and shm passed its self-test on every rank (it may
//      lack the cross-process memory access it relies on in a container); the communicator
//      gathers the verdicts at rendezvous so that all ranks decide alike;
//   3. tcp (as tcp;ofi_rxm), on the loopback interface when every rank is on this host.
// A job spanning hosts keeps to the NICs PLEXUS_FI_NICS names (libfabric domains: "eth0,eth1",
// "rdmap79s0-rdm,..."), its local ranks spread over them as over efa's (nic_select.h); a list
// naming none of the provider's fails with PLX_ERROR_INVALID_ARGUMENT naming what it offers.
// Each decision and the reason for a fallback are logged at PLEXUS_DEBUG=INFO.
//
// FI_HMEM: once the provider is chosen, a second fi_getinfo asks the same provider, on the same
// domain and address format, for caps | FI_HMEM with mr_mode | FI_MR_HMEM. The entry it offers
// is opened instead of the first (device buffers of plx_send/plx_recv then go straight to the
// provider, transport.h post_send_hmem) with PLEXUS_FI_HMEM=1 (the default) when it offers host
// messages as much as the first (inject size, queue sizes, largest message: efa), with
// PLEXUS_FI_HMEM=2 always (shm of libfabric 1.17 then loses its inject protocol); never with 0.
// With 1, should it fail to open, the first entry is (asking for FI_HMEM never changes the
// provider), and a refused FI_HMEM is a WARN once where GPUDirect RDMA was expected
// (report_hmem_refused). PLEXUS_FI_HMEM=2 demands it: select_provider fails (PLX_ERROR_UNSUPPORTED,
// naming fi_getinfo's answer) when the provider offers no FI_HMEM entry, and opening the transport
// fails when the entry does not open (an efa NIC without GPUDirect RDMA, endpoint.cpp).
#pragma once

#include <string>

#include "comm/transport/ofi/nic_select.h"
#include "comm/transport/ofi/ofi_util.h"

namespace plexus::comm::ofi {

// The fi_getinfo hints Plexus needs: RDM endpoint, tagged messages, directed receive, no local
// memory registration, fi_context2 per operation. `provider` may be empty (any).
InfoPtr make_hints(const std::string& provider);

// The entry of the same provider, domain and address format as `chosen` with FI_HMEM, or null
// when the provider offers none, and then *why (when not null) says what fi_getinfo answered.
// Never fails.
InfoPtr hmem_variant(const fi_info& chosen, std::string* why = nullptr);

// Logs that `provider` refused FI_HMEM (`why`) under the default PLEXUS_FI_HMEM=1: a WARN, once
// per process, when GPUDirect RDMA was to be expected (the provider is efa, or the process sees
// a GPU), since device buffers are then staged through host memory; else at INFO (a CPU job
// loses nothing). Returns whether this call logged the WARN. Thread-safe. (When an offered
// FI_HMEM entry then fails to open, OfiTransport::open reports it as efa's refusal of GPUDirect
// RDMA: a WARN for efa, INFO for the others, whose FI_HMEM entries only spare a staging copy.)
bool report_hmem_refused(const std::string& provider, bool gpu_visible, const std::string& why);

// Chooses the provider and returns the fi_info entry (interface) to open: its FI_HMEM variant
// when PLEXUS_FI_HMEM takes it (above), with the plain entry chained after it (->next) for
// OfiTransport::open to fall back on (PLEXUS_FI_HMEM=1 only). Errors: PLX_ERROR_INVALID_ARGUMENT
// for a PLEXUS_FI_HMEM not in 0..2; PLX_ERROR_TRANSPORT if the forced provider (or any at all)
// cannot be opened; PLX_ERROR_UNSUPPORTED if PLEXUS_FI_HMEM=2 and the provider refuses FI_HMEM.
// A provider with one domain per NIC (efa) opens the NIC nearest the rank (nic_select.h), by
// `where`: its local rank and size and its current CUDA device. `gpu_visible`: the process sees
// a GPU (a refused FI_HMEM is then a WARN).
plx_result_t select_provider(int rank, const RankLocality& where, bool gpu_visible,
                             bool all_ranks_on_this_host, bool shm_ok_everywhere, InfoPtr* out);

// Runs the shm self-test once per process (cached): opens an shm endpoint, sends itself a small
// and a 1 MiB message, checks the bytes. Returns true if shm works; else *why says why not.
bool shm_works(std::string* why);

}  // namespace plexus::comm::ofi
