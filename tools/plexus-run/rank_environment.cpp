#include "tools/plexus-run/rank_environment.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "topology/host.h"

extern char** environ;

namespace plexus::launcher {

namespace {

// A close-on-exec TCP socket bound to a port the kernel picks on `ip` (network order); *port is
// that port. -1 with errno set on failure.
int bind_any_port(in_addr_t ip, int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = ip;
  socklen_t len = sizeof(sa);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    const int saved = errno;
    if (fd >= 0) close(fd);
    errno = saved;
    return -1;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

}  // namespace

int open_rendezvous_listener(const std::string& addr, int* port) {
  *port = 0;
  in_addr ip{};
  if (inet_pton(AF_INET, addr.c_str(), &ip) != 1) {
    errno = EAFNOSUPPORT;  // IPv6 or a host name: rank 0 binds the port itself
    return -1;
  }
  int fd = bind_any_port(ip.s_addr, port);
  if (fd < 0 && errno == EADDRNOTAVAIL) {  // not an address of this host: as the server does
    fd = bind_any_port(htonl(INADDR_ANY), port);
  }
  if (fd >= 0 && fd <= STDERR_FILENO) {  // a launcher started without stdin, say: the child
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);  // reopens 0..2
    close(fd);
    fd = moved;
  }
  if (fd < 0 || listen(fd, SOMAXCONN) != 0) {
    const int saved = errno;
    if (fd >= 0) close(fd);
    errno = saved;
    *port = 0;
    return -1;
  }
  return fd;
}

int find_free_port(const std::string& addr) {
  in_addr ip{};
  if (inet_pton(AF_INET, addr.c_str(), &ip) != 1) ip.s_addr = htonl(INADDR_ANY);
  int port = 0;
  const int fd = bind_any_port(ip.s_addr, &port);
  if (fd >= 0) close(fd);
  return port;
}

std::string random_job_token() {
  uint8_t bytes[32];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t got = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return "";
    filled += static_cast<size_t>(got);
  }
  std::string hex;
  for (uint8_t b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

std::vector<std::string> rank_environment(const LaunchOptions& options, int master_port,
                                          const std::string& job_token, int rank,
                                          int listener_fd) {
  // Ordered map so the child's environment is deterministic; later assignments win.
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  const std::string threads = std::to_string(topology::threads_per_rank(options.nranks));
  for (const char* name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (vars.find(name) == vars.end()) vars[name] = threads;
  }
  // The PSM libraries libfabric links catch SIGTERM/SIGINT in their constructors and call exit()
  // from the handler (provider_select.cpp); these switch that off before the rank starts.
  for (const char* name : {"IPATH_NO_BACKTRACE", "HFI_NO_BACKTRACE"}) vars.emplace(name, "1");
  vars["PLEXUS_RANK"] = std::to_string(rank);
  vars["PLEXUS_WORLD_SIZE"] = std::to_string(options.nranks);
  vars["PLEXUS_LOCAL_RANK"] = std::to_string(rank);
  vars["PLEXUS_LOCAL_WORLD_SIZE"] = std::to_string(options.nranks);
  vars["PLEXUS_MASTER_ADDR"] = options.master_addr;
  vars["PLEXUS_MASTER_PORT"] = std::to_string(master_port);
  // An inherited token wins (the user's choice); an empty one is no choice, and the library
  // would refuse it: the job's random token replaces it.
  if (vars["PLEXUS_JOB_TOKEN"].empty()) vars["PLEXUS_JOB_TOKEN"] = job_token;
  // Only rank 0 inherits the listener; a value inherited from an outer launcher names nothing
  // this job's ranks hold.
  vars.erase("PLEXUS_RENDEZVOUS_FD");
  if (rank == 0 && listener_fd >= 0) vars["PLEXUS_RENDEZVOUS_FD"] = std::to_string(listener_fd);

  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

}  // namespace plexus::launcher
