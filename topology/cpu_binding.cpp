// cpu_binding.cpp - see cpu_binding.h.
#include "topology/cpu_binding.h"

#include <hwloc.h>
#include <pthread.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace plexus::topology {

namespace {

// A bitmap, freed with its owner.
struct Bitmap {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  Bitmap() = default;
  explicit Bitmap(hwloc_const_bitmap_t from) : b(hwloc_bitmap_dup(from)) {}
  ~Bitmap() { hwloc_bitmap_free(b); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
};

std::string errno_text(int err) { return std::string(std::strerror(err)); }

// This process's hwloc topology, loaded on first use and kept to the end of the process (never
// destroyed, so no thread can outlive it); read-only afterwards, which hwloc allows from several
// threads at once.
plx_result_t load(hwloc_topology_t* out, std::string* error) {
  static hwloc_topology_t topo = nullptr;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    if (hwloc_topology_init(&topo) != 0) {
      load_error = "hwloc_topology_init: " + errno_text(errno);
      topo = nullptr;
    } else if (hwloc_topology_load(topo) != 0) {
      load_error = "hwloc_topology_load: " + errno_text(errno);
      hwloc_topology_destroy(topo);
      topo = nullptr;
    }
  });
  if (topo == nullptr) {
    *error = load_error;
    return PLX_ERROR_SYSTEM;
  }
  *out = topo;
  return PLX_SUCCESS;
}

std::string list_of(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "";
  std::string out(text);
  std::free(text);
  return out;
}

// The os_index of the one NUMA node whose cpus include all of `set`; kNoNuma if none.
int numa_of(hwloc_topology_t t, hwloc_const_bitmap_t set) {
  if (hwloc_bitmap_iszero(set)) return kNoNuma;
  const int nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (node->cpuset && hwloc_bitmap_isincluded(set, node->cpuset))
      return static_cast<int>(node->os_index);
  }
  return kNoNuma;
}

plx_result_t get_process_cpus(hwloc_topology_t t, Bitmap* out, std::string* error) {
  if (hwloc_get_cpubind(t, out->b, HWLOC_CPUBIND_PROCESS) != 0) {
    *error = "hwloc_get_cpubind(HWLOC_CPUBIND_PROCESS): " + errno_text(errno);
    return PLX_ERROR_SYSTEM;
  }
  hwloc_bitmap_and(out->b, out->b, hwloc_topology_get_allowed_cpuset(t));
  return PLX_SUCCESS;
}

// The `index` mod count-th object of `type` with cpus in `within`, as its cpus within `within`.
bool pick(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_bitmap_t within, int index,
          Bitmap* out) {
  std::vector<hwloc_obj_t> objects;
  const int count = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < count; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(t, type, static_cast<unsigned>(i));
    if (obj->cpuset && hwloc_bitmap_intersects(obj->cpuset, within)) objects.push_back(obj);
  }
  if (objects.empty()) return false;
  hwloc_bitmap_and(out->b, objects[static_cast<size_t>(index) % objects.size()]->cpuset, within);
  return true;
}

}  // namespace

std::optional<PinMode> parse_pin_mode(std::string_view text) {
  if (text == "none") return PinMode::None;
  if (text == "numa") return PinMode::Numa;
  if (text == "core") return PinMode::Core;
  return std::nullopt;
}

std::string_view to_string(PinMode mode) {
  switch (mode) {
    case PinMode::None: return "none";
    case PinMode::Numa: return "numa";
    case PinMode::Core: return "core";
  }
  return "?";
}

plx_result_t process_binding(ProcessBinding* out, std::string* error) {
  hwloc_topology_t t = nullptr;
  if (plx_result_t rc = load(&t, error); rc != PLX_SUCCESS) return rc;
  Bitmap allowed;
  if (plx_result_t rc = get_process_cpus(t, &allowed, error); rc != PLX_SUCCESS) return rc;
  hwloc_const_bitmap_t host = hwloc_topology_get_allowed_cpuset(t);
  ProcessBinding b;
  b.allowed_cpus = list_of(allowed.b);
  b.host_cpus = list_of(host);
  b.bound = !hwloc_bitmap_isequal(allowed.b, host);
  b.numa_node = numa_of(t, allowed.b);
  *out = std::move(b);
  return PLX_SUCCESS;
}

plx_result_t plan_pinning(std::optional<PinMode> mode, int local_rank, int local_size,
                          PinPlan* out, std::string* error) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    *error = "plan_pinning: local_rank " + std::to_string(local_rank) + " not in 0.." +
             std::to_string(local_size - 1) + " (local_size " + std::to_string(local_size) + ")";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  if (mode == PinMode::None) {  // nothing to look up: no hwloc
    PinPlan plan;
    plan.reason = "PLEXUS_PIN=none: progress thread left as is";
    *out = std::move(plan);
    return PLX_SUCCESS;
  }
  hwloc_topology_t t = nullptr;
  if (plx_result_t rc = load(&t, error); rc != PLX_SUCCESS) return rc;
  Bitmap allowed;
  if (plx_result_t rc = get_process_cpus(t, &allowed, error); rc != PLX_SUCCESS) return rc;
  const bool bound = !hwloc_bitmap_isequal(allowed.b, hwloc_topology_get_allowed_cpuset(t));
  const std::string given = mode ? "PLEXUS_PIN=" + std::string(to_string(*mode))
                                 : std::string("PLEXUS_PIN unset");
  PinPlan plan;
  plan.mode = mode.value_or(bound ? PinMode::None : PinMode::Numa);
  Bitmap chosen;
  if (plan.mode == PinMode::None) {
    plan.reason = given + ": progress thread left on the process's cpus " + list_of(allowed.b) +
                  (bound && !mode ? " (the process is already bound)" : "");
  } else if (plan.mode == PinMode::Numa && bound) {
    hwloc_bitmap_copy(chosen.b, allowed.b);
    plan.reason = given + ": the process is bound; progress thread on its cpus";
  } else if (plan.mode == PinMode::Numa) {
    const int nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    const int index = nodes > 0 ? static_cast<int>(static_cast<int64_t>(local_rank) * nodes /
                                                   local_size)
                                : 0;
    if (!pick(t, HWLOC_OBJ_NUMANODE, allowed.b, index, &chosen))
      hwloc_bitmap_copy(chosen.b, allowed.b);
    plan.reason = given + ": local rank " + std::to_string(local_rank) + " of " +
                  std::to_string(local_size) + ", progress thread on a NUMA node";
  } else {
    if (!pick(t, HWLOC_OBJ_CORE, allowed.b, local_rank, &chosen) &&
        !pick(t, HWLOC_OBJ_PU, allowed.b, local_rank, &chosen))
      hwloc_bitmap_copy(chosen.b, allowed.b);
    plan.reason = given + ": local rank " + std::to_string(local_rank) + " of " +
                  std::to_string(local_size) + ", progress thread on one core" +
                  (bound ? " of the process's cpus" : "");
  }
  if (plan.mode != PinMode::None) {
    plan.cpus = list_of(chosen.b);
    plan.numa_node = numa_of(t, chosen.b);
    plan.reason += " (cpus " + plan.cpus + ", NUMA node " +
                   (plan.numa_node == kNoNuma ? std::string("-")
                                              : std::to_string(plan.numa_node)) +
                   ")";
  }
  *out = std::move(plan);
  return PLX_SUCCESS;
}

plx_result_t bind_this_thread(const std::string& cpus, std::string* error) {
  Bitmap set;
  if (hwloc_bitmap_list_sscanf(set.b, cpus.c_str()) != 0 || hwloc_bitmap_iszero(set.b)) {
    *error = "bind_this_thread: cpus \"" + cpus + "\" is not a non-empty cpulist";
    return PLX_ERROR_INVALID_ARGUMENT;
  }
  hwloc_topology_t t = nullptr;
  if (plx_result_t rc = load(&t, error); rc != PLX_SUCCESS) return rc;
  if (hwloc_set_thread_cpubind(t, pthread_self(), set.b, 0) != 0) {
    *error = "hwloc_set_thread_cpubind(cpus " + cpus + "): " + errno_text(errno);
    return PLX_ERROR_SYSTEM;
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::topology
