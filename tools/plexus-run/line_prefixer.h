// line_prefixer.h - turns one rank's output stream into whole lines, each prefixed "[R] ".
//
// Bytes are buffered until a newline; the whole lines of each read leave in one write, and the
// launcher is the only writer of its stdout and stderr, so lines of different ranks never
// interleave mid-line. A line longer than kMaxLineBytes is cut there (written with a newline;
// the rest continues on the next prefixed line).
// finish() writes a final partial line (with the prefix, a newline added) at end of stream.
// With an empty prefix the stream is copied unchanged, still a whole line at a time.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace plexus::launcher {

class LinePrefixer {
 public:
  static constexpr size_t kMaxLineBytes = 1 << 20;

  LinePrefixer(std::string prefix, int out_fd) : prefix_(std::move(prefix)), out_fd_(out_fd) {}

  void feed(const char* data, size_t bytes);
  void finish();

 private:
  // Appends prefix + pending_ + tail (+ '\n') to batch_ and clears pending_.
  void append_line(const char* tail, size_t bytes, bool add_newline);

  std::string prefix_;
  int out_fd_;
  std::string pending_;  // the current line, without its prefix
  std::string batch_;    // the prefixed lines of one feed(), written at once
};

// Writes all of data to fd, retrying on EINTR and waiting (bounded) on EAGAIN. Returns false if
// the output is gone (EPIPE, EBADF, ...): the launcher keeps running and drops the output.
bool write_fully(int fd, const char* data, size_t bytes);

}  // namespace plexus::launcher
