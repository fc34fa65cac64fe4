/* fake_nvml.c - a stand-in for libnvidia-ml.so.1 with four GPUs, for the NVML tests:
 *   GPU 0 00000000:81:00.0 <- 4 NVLink 3 links -> GPU 1 00000000:82:00.0
 *   GPU 2 00000000:C1:00.0 -- 6 NVLink 4 links -> NVSwitch 00000000:E0:00.0 <- 6 links -- GPU 3
 *   (GPU 2's link 6 is present but disabled)
 * Built once as is and once with FAKE_NVML_NO_REMOTE_TYPE, to play a driver without
 * nvmlDeviceGetNvLinkRemoteDeviceType. Bus ids are upper-case with 8-digit domains, as NVML
 * writes them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3 };
static const char* const kBus[4] = {"00000000:81:00.0", "00000000:82:00.0", "00000000:C1:00.0",
                                    "00000000:C2:00.0"};
static const char* const kSwitch = "00000000:E0:00.0";

static int gpu_of(nvmlDevice_t d) { return (int)(uintptr_t)d - 1; }
static int link_count(int gpu) { return gpu < 2 ? 4 : (gpu == 2 ? 7 : 6); }

static void fill_pci(nvmlPciInfo_t* pci, const char* bus) {
  memset(pci, 0, sizeof(*pci));
  strcpy(pci->busId, bus);
  unsigned b = 0;
  sscanf(bus + 9, "%x", &b);
  pci->bus = b;
}

nvmlReturn_t nvmlInit_v2(void) { return OK; }
nvmlReturn_t nvmlShutdown(void) { return OK; }
const char* nvmlErrorString(nvmlReturn_t rc) { return rc == OK ? "Success" : "Fake error"; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  *count = 4;
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= 4) return INVALID_ARGUMENT;
  *d = (nvmlDevice_t)(uintptr_t)(i + 1);
  return OK;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned length) {
  snprintf(name, length, "Fake GPU %d", gpu_of(d));
  return OK;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  fill_pci(pci, kBus[gpu_of(d)]);
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = (unsigned long long)(gpu_of(d) + 1) << 30;
  m->free = m->total;
  m->used = 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* state) {
  int gpu = gpu_of(d);
  if ((int)link >= link_count(gpu)) return NOT_SUPPORTED;
  *state = !(gpu == 2 && link == 6);
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned* version) {
  *version = gpu_of(d) < 2 ? 3 : 4;
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link,
                                                 nvmlPciInfo_t* pci) {
  int gpu = gpu_of(d);
  fill_pci(pci, gpu < 2 ? kBus[1 - gpu] : kSwitch);
  return OK;
}
#ifndef FAKE_NVML_NO_REMOTE_TYPE
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned link, int* type) {
  *type = gpu_of(d) < 2 ? 0 : 2; /* NVML_NVLINK_DEVICE_TYPE_GPU, _SWITCH */
  return OK;
}
#endif
