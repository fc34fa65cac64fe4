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
// is a listening TCP socket of the address family asked for, bound to exactly the port the
// rendezvous was asked for. Anything else (a malformed value, a closed descriptor, a pipe, another
// port or family: a variable copied into a process that did not inherit the descriptor, say) is
// logged at WARN naming the variable and the reason, and the server binds the port itself as
// before; no other rank waits on an error rank 0 alone would see. If that bind then fails because
// the port is in use, the error says the launcher's listener may still hold it (a wrapper that
// closed the descriptor before starting the real rank 0).
#pragma once

namespace plexus::bootstrap {

// If PLEXUS_RENDEZVOUS_FD names a listening TCP socket of `family` (AF_INET or AF_INET6) bound
// to `port` (1..65535), returns it, marked close-on-exec (so programs the rank runs do not keep
// the port open). Otherwise -1: an unset variable, a port of 0, a later call (the descriptor is
// handed out once per process), or a value or descriptor that fails a check (a WARN, see above).
// Thread-safe.
int take_inherited_listener(int family, int port);

// True when PLEXUS_RENDEZVOUS_FD is set (whether or not it was usable): a bind of the port that
// fails with EADDRINUSE then names the launcher's listener as the likely holder.
bool inherited_listener_offered();

}  // namespace plexus::bootstrap
