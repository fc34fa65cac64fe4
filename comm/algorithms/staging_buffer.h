// staging_buffer.h - a scratch buffer that transport requests are posted into or out of.
//
// The gather, scatter and all-to-all algorithms pack blocks into scratch memory and post sends
// from it or receives into it. If a wait then fails, those requests may still be posted: the
// transport keeps pointers into the buffer and may still read or write it (pipeline.h). So a
// StagingBuffer is freed only after the algorithm declares it idle with settle(PLX_SUCCESS);
// on every other path (an early PLX_CHECK return, a failed wait) the destructor leaks it on
// purpose, as Pipeline does with its own staging slots. The communicator is dead after such a
// failure anyway (see plexus.h).
//
//   StagingBuffer tmp(bytes);                 // uninitialized (make_unique_for_overwrite)
//   ... post requests on tmp.data(), wait ...
//   return tmp.settle(pipe.finish());         // frees on success, leaks on failure
#pragma once

#include <cstddef>
#include <memory>

#include "comm/algorithms/deliberate_leak.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class StagingBuffer {
 public:
  explicit StagingBuffer(size_t bytes)
      : data_(bytes > 0 ? std::make_unique_for_overwrite<unsigned char[]>(bytes) : nullptr) {}
  ~StagingBuffer() {
    if (!idle_) leak_on_purpose(data_);  // a request may still use it (see above)
  }
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;

  unsigned char* data() const { return data_.get(); }

  // Passes `result` through; PLX_SUCCESS means no request uses the buffer any more, so the
  // destructor may free it.
  plx_result_t settle(plx_result_t result) {
    idle_ = result == PLX_SUCCESS;
    return result;
  }

 private:
  std::unique_ptr<unsigned char[]> data_;
  bool idle_ = false;
};

}  // namespace plexus::comm
