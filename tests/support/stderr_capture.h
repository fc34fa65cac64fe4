// stderr_capture.h - what this process writes to stderr (file descriptor 2) while a
// StderrCapture lives: fd 2 goes to an unlinked temporary file until finish() (or the
// destructor) puts the old stderr back.
//
//   StderrCapture capture;
//   ...                                  // code that logs
//   const std::string log = capture.finish();
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace plexus::test {

class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/plexus-stderr-XXXXXX";
    file_ = mkstemp(path);
    if (file_ < 0) return;
    unlink(path);
    std::fflush(stderr);
    saved_ = dup(2);
    dup2(file_, 2);
  }
  ~StderrCapture() { finish(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Restores stderr and returns what was written to it ("" if the capture could not start).
  std::string finish() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
    if (file_ < 0) return text_;
    char buf[4096];
    for (ssize_t n; (n = pread(file_, buf, sizeof(buf), static_cast<off_t>(text_.size()))) > 0;)
      text_.append(buf, static_cast<size_t>(n));
    close(file_);
    file_ = -1;
    return text_;
  }

 private:
  int file_ = -1;
  int saved_ = -1;
  std::string text_;
};

}  // namespace plexus::test
