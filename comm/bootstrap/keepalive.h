// keepalive.h - TCP keepalive on a rendezvous connection, on both ends, so that a host that
// vanishes (power, network) is noticed on an idle connection within about 25 s, not the
// kernel's default of two hours: first probe after 10 s idle, then every 5 s, 3 probes.
#pragma once

namespace plexus::bootstrap {

// Best effort: an option the kernel refuses is skipped.
void enable_keepalive(int fd);

}  // namespace plexus::bootstrap
