#include "tools/plexus-run/line_prefixer.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

namespace plexus::launcher {

bool write_fully(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    ssize_t n = write(fd, data, bytes);
    if (n > 0) {
      data += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // someone made our stdout non-blocking: wait, bounded
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

void LinePrefixer::append_line(const char* tail, size_t bytes, bool add_newline) {
  batch_.append(prefix_);
  batch_.append(pending_);
  if (bytes > 0) batch_.append(tail, bytes);
  if (add_newline) batch_.push_back('\n');
  pending_.clear();
}

void LinePrefixer::feed(const char* data, size_t bytes) {
  batch_.clear();
  while (bytes > 0) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', bytes));
    if (newline == nullptr) {
      pending_.append(data, bytes);
      if (pending_.size() >= kMaxLineBytes) append_line(nullptr, 0, !prefix_.empty());
      break;
    }
    size_t take = static_cast<size_t>(newline - data) + 1;
    append_line(data, take, false);
    data += take;
    bytes -= take;
  }
  // Every complete line of this read leaves in one write(): no other writer can split it.
  if (!batch_.empty()) write_fully(out_fd_, batch_.data(), batch_.size());
}

void LinePrefixer::finish() {
  if (pending_.empty()) return;
  batch_.clear();
  append_line(nullptr, 0, !prefix_.empty());
  write_fully(out_fd_, batch_.data(), batch_.size());
}

}  // namespace plexus::launcher
