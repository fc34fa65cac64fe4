// carver.h - hands out consecutive slices of one float buffer. With base == nullptr it only
// counts, so the same code first sizes a buffer and then carves it (activations, gradients).
#pragma once

#include <cstddef>

namespace plexus::engine {

class Carver {
 public:
  explicit Carver(float* base) : base_(base) {}
  float* take(size_t n) {
    float* p = base_ != nullptr ? base_ + used_ : nullptr;
    used_ += n;
    return p;
  }
  size_t used() const { return used_; }

 private:
  float* base_;
  size_t used_ = 0;
};

}  // namespace plexus::engine
