// cuda_driver.h - asking the CUDA driver about a pointer without linking it or loading it.
//
// Device memory exists in a process only once that process has loaded the CUDA driver
// (libcuda.so.1, through its own CUDA runtime or another library). These calls look for the
// driver among the loaded objects (dl_iterate_phdr, then dlopen(RTLD_NOLOAD)), so they never
// load it, never search the file system, never initialise CUDA, and work in a
// libplexus built without CUDA: that is how such a build recognises a device pointer it cannot
// use and refuses it, instead of crashing in a host memcpy. Thread-safe.
#pragma once

namespace plexus::comm::device {

// True when libcuda.so.1 is loaded in this process (once true, it stays true).
bool cuda_driver_loaded();

// True when the loaded driver says ptr is device memory that is not managed (cuPointerGetAttribute:
// CU_POINTER_ATTRIBUTE_MEMORY_TYPE is device and CU_POINTER_ATTRIBUTE_IS_MANAGED is 0). False
// when the driver is not loaded, does not know the pointer, or ptr is NULL.
bool driver_says_device(const void* ptr);

// The loaded driver's entry point `name` (dlsym), or NULL when the driver is not loaded or lacks
// it. Never loads the driver.
void* cuda_driver_symbol(const char* name);

}  // namespace plexus::comm::device
