// unique_id_server.h - the rendezvous servers that plx_get_unique_id() starts.
//
// Each call starts one server owned by the process (not by any communicator): it serves one
// communicator's rendezvous and liveness, then finishes by itself once every rank has left.
// Finished servers are reaped on the next call; those still running are stopped at exit.
#pragma once

#include "comm/bootstrap/unique_id.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

// Listens on PLEXUS_MASTER_ADDR (else this host's first non-loopback IPv4 address, else
// 127.0.0.1) and PLEXUS_MASTER_PORT (else a port the kernel picks), with a random job key.
// PLX_ERROR_SYSTEM (naming the address and errno text) if the listener cannot be opened.
plx_result_t start_unique_id_server(RendezvousAddress* out);

}  // namespace plexus::bootstrap
