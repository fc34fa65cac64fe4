// inherited_listener.h - a rendezvous listener opened by the launcher and inherited by rank 0.
//
// A launcher that picks a free port and lets rank 0 bind it later races every other process on
// the host: between the pick and rank 0's bind (an exec and a library load, often a second under
// load) the kernel may hand the port to anyone's connect() or bind(0), and rank 0 then fails
// with "Address already in use". plexus-run closes that window by binding and listening itself
// and passing the listening socket to rank 0 alone, as an inherited descriptor named by
// PLEXUS_RENDEZVOUS_FD (the idea of systemd's socket activation, sd_listen_fds(3)).
//
// The variable is hostile input like any other: it is used only when it names a descriptor that
// is a listening TCP socket bound to exactly the port the rendezvous was asked for. Anything else
// (a closed descriptor, a pipe, another port: a variable copied into a child process that did not
// inherit the descriptor, say) is logged at WARN naming the variable and the reason, and the
// server binds the port itself as before. A value that is not an integer is an error.
#pragma once

#include "plexus/plexus.h"

namespace plexus::bootstrap {

// If PLEXUS_RENDEZVOUS_FD names a listening TCP socket bound to `port` (1..65535), sets *fd to
// it, marks it close-on-exec (so programs the rank runs do not keep the port open) and returns
// PLX_SUCCESS. The descriptor is handed out once per process: later calls, a port of 0, an unset
// variable or a descriptor that fails a check (logged, see above) leave *fd at -1 and return
// PLX_SUCCESS. Returns PLX_ERROR_INVALID_ARGUMENT ("PLEXUS_RENDEZVOUS_FD=x is not an integer in
// 3..2147483647", set_error) for a malformed value. Thread-safe.
plx_result_t take_inherited_listener(int port, int* fd);

}  // namespace plexus::bootstrap
