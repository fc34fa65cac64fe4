// cpu_binding.h - where this process may run, which NUMA node that is, and which cpus a
// communicator's progress thread is pinned to (PLEXUS_PIN), through hwloc.
//
//   PLEXUS_PIN   process not bound (may run on every cpu)   process bound to fewer cpus
//   (unset)      numa                                        left as is
//   none         left as is                                  left as is
//   numa         NUMA node (local_rank * nodes / local_size)  the process's own cpus
//   core         core (local_rank mod cores) of the host      core (local_rank mod cores) of
//                                                             the process's own cpus
//
// A core is all the PUs (hardware threads) of one physical core. Every cpu set is intersected
// with the cpus this process may use, so pinning never widens a binding.
//
// hwloc's view of the machine is loaded once per process (it takes tens of milliseconds) and
// shared, read-only, by every call here; all functions are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "plexus/plexus.h"
#include "topology/host_topology.h"

namespace plexus::topology {

enum class PinMode { None, Numa, Core };

// "none", "numa", "core" (exact, lower case); nullopt otherwise.
std::optional<PinMode> parse_pin_mode(std::string_view text);
std::string_view to_string(PinMode mode);

struct ProcessBinding {
  std::string allowed_cpus;  // cpulist this process may run on ("0-3,8")
  std::string host_cpus;     // cpulist of every cpu of the host it could be given
  bool bound = false;        // allowed_cpus is a strict subset of host_cpus
  int numa_node = kNoNuma;   // os_index of the one NUMA node holding allowed_cpus, else kNoNuma
};

// This process's binding (hwloc_get_cpubind with HWLOC_CPUBIND_PROCESS). PLX_ERROR_SYSTEM
// naming the hwloc call and errno on failure; *out is written only on success. Thread-safe.
plx_result_t process_binding(ProcessBinding* out, std::string* error);

struct PinPlan {
  PinMode mode = PinMode::None;  // what is applied, after the default rule above
  std::string cpus;              // cpulist to bind the thread to; "" = leave the thread as is
  int numa_node = kNoNuma;       // the NUMA node holding `cpus`, kNoNuma if none or several
  std::string reason;            // one line for the log: "PLEXUS_PIN=numa: NUMA node 0 (cpus 0-1)"
};

// The plan for a rank with `local_rank` of `local_size` on its host. `mode` nullopt: the default
// (numa when the process is not bound, else none). PLX_ERROR_INVALID_ARGUMENT naming
// local_rank / local_size when local_rank is not in 0..local_size-1; PLX_ERROR_SYSTEM when
// hwloc fails. *out is written only on success.
plx_result_t plan_pinning(std::optional<PinMode> mode, int local_rank, int local_size,
                          PinPlan* out, std::string* error);

// Binds the calling thread to `cpus` (a cpulist) through hwloc_set_thread_cpubind.
// PLX_ERROR_INVALID_ARGUMENT if `cpus` is not a non-empty cpulist; PLX_ERROR_SYSTEM naming the
// cpus and errno when hwloc or the kernel refuses.
plx_result_t bind_this_thread(const std::string& cpus, std::string* error);

}  // namespace plexus::topology
