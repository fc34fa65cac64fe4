#include "comm/bootstrap/inherited_listener.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <string>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "topology/settings/config_read.h"

namespace plexus::bootstrap {
namespace {

constexpr const char* kVariable = "PLEXUS_RENDEZVOUS_FD";

// Why `fd` is not a listening TCP socket of `family` on `port`; "" when it is.
std::string why_not_listener(int fd, int family, int port) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return std::string("fstat: ") + std::strerror(errno);
  if (!S_ISSOCK(st.st_mode)) return "not a socket";
  int value = 0;
  socklen_t len = sizeof(value);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &len) != 0 || value != SOCK_STREAM) {
    return "not a stream socket";
  }
  len = sizeof(value);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &len) != 0 || value == 0) {
    return "not listening";
  }
  sockaddr_storage address{};
  len = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) {
    return std::string("getsockname: ") + std::strerror(errno);
  }
  if (address.ss_family != family) {
    return address.ss_family == AF_INET ? "an IPv4 socket, the address is IPv6"
                                        : "not an IPv4 socket, as the address is";
  }
  int bound = -1;
  if (address.ss_family == AF_INET) {
    bound = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  } else if (address.ss_family == AF_INET6) {
    bound = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  } else {
    return "not a TCP socket";
  }
  if (bound != port) return "bound to port " + std::to_string(bound);
  return "";
}

}  // namespace

int take_inherited_listener(int family, int port) {
  const std::optional<std::string> text = config_text(kVariable);
  if (!text || port <= 0) return -1;
  static std::atomic<bool> taken{false};
  if (taken.exchange(true)) return -1;
  int64_t value = 0;
  if (parse_integer_variable(kVariable, *text, 3, INT_MAX, &value) != PLX_SUCCESS) {
    log_message(LogLevel::Warn, "{}; binding port {} instead", last_error(), port);
    clear_error();
    return -1;
  }
  const int candidate = static_cast<int>(value);
  const std::string why = why_not_listener(candidate, family, port);
  if (!why.empty()) {
    log_message(LogLevel::Warn,
                "{}={} is not a listening TCP socket on port {} ({}); binding the port instead",
                kVariable, candidate, port, why);
    return -1;
  }
  fcntl(candidate, F_SETFD, FD_CLOEXEC);
  return candidate;
}

bool inherited_listener_offered() { return config_text(kVariable).has_value(); }

}  // namespace plexus::bootstrap
