#include "topology/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "topology/pci_bus_id.h"

namespace plexus::topology {

namespace {

// The few NVML declarations used, as nvml.h (CUDA 12) gives them; no header is needed.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlMaxLinks = 18;   // NVML_NVLINK_MAX_LINKS
constexpr unsigned kNvmlNameBytes = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr int kNvmlFeatureEnabled = 1;   // NVML_FEATURE_ENABLED
enum : int { kRemoteGpu = 0, kRemoteIbmNpu = 1, kRemoteSwitch = 2 };  // nvmlIntNvLinkDeviceType_t

struct nvmlPciInfo_t {  // the _v3 / _v2 layout
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_version)(nvmlDevice_t, unsigned, unsigned*) = nullptr;
  nvmlReturn_t (*link_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*link_remote_type)(nvmlDevice_t, unsigned, int*) = nullptr;  // optional
};

template <typename F>
void bind(void* lib, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
}

std::string error_text(const Api& api, nvmlReturn_t rc) {
  const char* text = api.error_string ? api.error_string(rc) : nullptr;
  return text ? std::string(text) : "NVML error " + std::to_string(rc);
}

// The bus id NVML gives, normalized; from the numbers when the string does not parse.
std::string bus_id_of(const nvmlPciInfo_t& pci) {
  char text[sizeof(pci.busId) + 1] = {};
  std::memcpy(text, pci.busId, sizeof(pci.busId));
  if (auto id = normalize_pci_bus_id(text)) return *id;
  return format_pci_bus_id(pci.domain, pci.bus, pci.device, 0);
}

// Reads links 0..17 of `device`: active ones grouped by (remote, remote bus id, version).
std::vector<NvLinkGroup> read_links(const Api& api, nvmlDevice_t device) {
  std::vector<NvLinkGroup> groups;
  for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
    int state = 0;
    if (api.link_state(device, link, &state) != kNvmlSuccess || state != kNvmlFeatureEnabled)
      continue;
    NvLinkGroup one;
    one.links = 1;
    unsigned version = 0;
    if (api.link_version && api.link_version(device, link, &version) == kNvmlSuccess)
      one.version = version;
    nvmlPciInfo_t remote{};
    if (api.link_remote_pci && api.link_remote_pci(device, link, &remote) == kNvmlSuccess)
      one.remote_pci_bus_id = bus_id_of(remote);
    int type = -1;
    if (api.link_remote_type && api.link_remote_type(device, link, &type) == kNvmlSuccess) {
      one.remote = type == kRemoteGpu      ? NvLinkRemote::Gpu
                   : type == kRemoteSwitch ? NvLinkRemote::Switch
                   : type == kRemoteIbmNpu ? NvLinkRemote::Cpu
                                           : NvLinkRemote::Unknown;
    }
    auto same = [&](const NvLinkGroup& g) {
      return g.remote == one.remote && g.remote_pci_bus_id == one.remote_pci_bus_id &&
             g.version == one.version;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end())
      groups.push_back(one);
    else
      ++it->links;
  }
  return groups;
}

void read_gpus(const Api& api, const char* library, NvmlReport* report) {
  unsigned count = 0;
  if (nvmlReturn_t rc = api.count(&count); rc != kNvmlSuccess) {
    report->note = std::string("nvmlDeviceGetCount_v2: ") + error_text(api, rc);
    return;
  }
  std::string skipped;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    nvmlPciInfo_t pci{};
    nvmlReturn_t rc = api.handle(i, &device);
    if (rc == kNvmlSuccess) rc = api.pci(device, &pci);
    if (rc != kNvmlSuccess) {
      skipped += "; GPU " + std::to_string(i) + " skipped: " + error_text(api, rc);
      continue;
    }
    NvmlGpu gpu;
    gpu.pci_bus_id = bus_id_of(pci);
    char name[kNvmlNameBytes] = {};
    if (api.name(device, name, sizeof(name) - 1) == kNvmlSuccess) gpu.name = name;
    nvmlMemory_t memory{};
    if (api.memory && api.memory(device, &memory) == kNvmlSuccess) gpu.memory_bytes = memory.total;
    gpu.nvlinks = read_links(api, device);
    report->gpus.push_back(std::move(gpu));
  }
  // Without nvmlDeviceGetNvLinkRemoteDeviceType, a remote end that is one of our GPUs is a GPU.
  for (NvmlGpu& gpu : report->gpus)
    for (NvLinkGroup& group : gpu.nvlinks)
      if (!api.link_remote_type &&
          std::any_of(report->gpus.begin(), report->gpus.end(),
                      [&](const NvmlGpu& g) { return g.pci_bus_id == group.remote_pci_bus_id; }))
        group.remote = NvLinkRemote::Gpu;
  report->loaded = true;
  report->note = std::string("NVML (") + library + "): " + std::to_string(report->gpus.size()) +
                 " GPU" + (report->gpus.size() == 1 ? "" : "s") + skipped;
}

}  // namespace

NvmlReport query_nvml(const char* library) {
  NvmlReport report;
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    report.note = why ? why : std::string(library) + ": cannot be opened";
    return report;
  }
  Api api;
  bind(lib, "nvmlInit_v2", &api.init);
  bind(lib, "nvmlShutdown", &api.shutdown);
  bind(lib, "nvmlErrorString", &api.error_string);
  bind(lib, "nvmlDeviceGetCount_v2", &api.count);
  bind(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle);
  bind(lib, "nvmlDeviceGetName", &api.name);
  bind(lib, "nvmlDeviceGetPciInfo_v3", &api.pci);
  bind(lib, "nvmlDeviceGetMemoryInfo", &api.memory);
  bind(lib, "nvmlDeviceGetNvLinkState", &api.link_state);
  bind(lib, "nvmlDeviceGetNvLinkVersion", &api.link_version);
  bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.link_remote_pci);
  bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &api.link_remote_type);
  if (!api.init || !api.shutdown || !api.count || !api.handle || !api.name || !api.pci ||
      !api.link_state) {
    report.note =
        std::string(library) + ": not an NVML library (a required nvml* symbol is missing)";
  } else if (nvmlReturn_t rc = api.init(); rc != kNvmlSuccess) {
    report.note = std::string("nvmlInit_v2: ") + error_text(api, rc);
  } else {
    read_gpus(api, library, &report);
    api.shutdown();
  }
  dlclose(lib);
  return report;
}

}  // namespace plexus::topology
