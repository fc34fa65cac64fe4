#include "engine/placement/smp_config_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "engine/placement/smp_config.h"

namespace plexus::engine {

namespace {

// Closes the descriptor on every path out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_smp_config_source(const std::string& argument, std::string* label) {
  if (!argument.empty() && argument.front() == '{') {
    *label = "(inline JSON)";
    if (argument.size() > kMaxSmpConfigBytes) {
      throw SmpConfigError(fmt::format("inline JSON of {} bytes is over the limit of {} bytes",
                                       argument.size(), kMaxSmpConfigBytes));
    }
    return argument;
  }
  *label = fmt::format("{:?}", argument);  // quoted, control characters escaped
  if (argument.empty()) throw SmpConfigError("expected a file name or inline JSON ('{...}')");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  Descriptor file{::open(argument.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    throw SmpConfigError(fmt::format("cannot open: {}", std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) {
    throw SmpConfigError(fmt::format("cannot stat: {}", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw SmpConfigError(S_ISDIR(st.st_mode)
                             ? "is a folder, not a JSON file"
                             : "is not a regular file (a device, FIFO or socket); give a JSON "
                               "file or inline JSON");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxSmpConfigBytes) {
    throw SmpConfigError(fmt::format("{} bytes is over the limit of {} bytes", st.st_size,
                                     kMaxSmpConfigBytes));
  }
  // Read at most one byte past the limit, so a file that grows meanwhile is still refused.
  std::string text(kMaxSmpConfigBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(file.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SmpConfigError(fmt::format("cannot read: {}", std::strerror(errno)));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxSmpConfigBytes) {
    throw SmpConfigError(fmt::format("over the limit of {} bytes", kMaxSmpConfigBytes));
  }
  text.resize(got);
  return text;
}

}  // namespace plexus::engine
