// deliberate_leak.h - giving up memory that a failed wait left transport requests posted into.
//
// After a failed wait the transport may still hold pointers to posted requests and their
// buffers, and may still write into them (pipeline.h), so such memory is never freed: its owner
// releases it and tells LeakSanitizer the leak is meant. The communicator is dead after such a
// failure anyway (see plexus.h). Pipeline and StagingBuffer leak this way.
#pragma once

#include <memory>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

namespace plexus::comm {

// Releases what `owner` holds without freeing it.
template <typename T>
void leak_on_purpose(std::unique_ptr<T>& owner) {
  auto* leaked = owner.release();
#if defined(__SANITIZE_ADDRESS__)
  if (leaked != nullptr) __lsan_ignore_object(leaked);
#else
  (void)leaked;
#endif
}

}  // namespace plexus::comm
