// memory_kind.h - where a pointer lives: host memory, pinned host memory, a GPU, or managed.
//
// Collectives take device pointers wherever NCCL does (issue 6); each buffer is classified once
// per call with cudaPointerGetAttributes (CUDA 11+ semantics: ordinary host memory is "not
// registered", not an error). Classifying never fails: without CUDA in the build, without a
// driver or without a GPU, every pointer is Host and `reason` says why it could be nothing else.
// The first call initialises the CUDA driver (cuInit, through cudaGetDeviceCount) and, with a
// GPU present, the runtime: a process that forks afterwards must not use CUDA in the child, so
// host-only paths should not classify (a NULL stream means host buffers). Thread-safe.
#pragma once

#include <string>

namespace plexus::comm::device {

// Ordered from "a CPU can read it with a plain load, no CUDA involved" to "only a GPU kernel or
// a copy can reach it"; Managed can migrate both ways.
enum class MemoryKind {
  Host,        // pageable host memory, or any pointer CUDA does not know (nullptr included)
  PinnedHost,  // page-locked host memory: cudaMallocHost, cudaHostAlloc, cudaHostRegister
  Managed,     // cudaMallocManaged: migrates between host and device
  Device,      // cudaMalloc / cudaMallocAsync / a peer's buffer mapped with cudaIpcOpenMemHandle
};

struct MemoryInfo {
  MemoryKind kind = MemoryKind::Host;
  // Device ordinal (as cudaGetDevice numbers it in this process): the GPU that holds Device
  // memory, or the one that was current when pinned or managed memory was allocated or
  // registered (cudaPointerAttributes::device); -1 for Host.
  int device = -1;
  // Why the pointer is Host when CUDA could not be asked (no CUDA build, no driver, no GPU, or
  // the cudaPointerGetAttributes error); empty when CUDA answered.
  std::string reason;
};

// Classifies ptr (see the file comment). Never fails, never throws (beyond std::bad_alloc for the
// reason string).
MemoryInfo classify_pointer(const void* ptr);

// "host", "pinned host", "managed" or "device".
inline const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Host: return "host";
    case MemoryKind::PinnedHost: return "pinned host";
    case MemoryKind::Managed: return "managed";
    case MemoryKind::Device: return "device";
  }
  return "?";
}

}  // namespace plexus::comm::device
