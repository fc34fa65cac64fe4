// plexus-info: what this Plexus build is and how it can be configured.
//   plexus-info            version, libfabric, CUDA, the plugins found and the folders searched
//   plexus-info --env      the table of every PLEXUS_* variable (name, type, default, help)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "engine/device/device.h"
#include "engine/plugin/plugin_loader.h"
#include "plexus/plexus.h"


int main(int argc, char** argv) {
  bool env = false;
  CLI::App app{"plexus-info: this Plexus build and its configuration"};
  app.add_flag("--env", env, "print the table of PLEXUS_* environment variables");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (env) {
    if (plx_print_config(stdout) != PLX_SUCCESS) {
      std::fprintf(stderr, "plexus-info: %s\n", plx_get_last_error(nullptr));
      return 1;
    }
    return 0;
  }
  int version = 0;
  plx_get_version(&version);
  std::printf("Plexus %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
  unsigned fabric = 0, api = 0;
  plx_get_libfabric_version(&fabric, &api);
  std::printf("libfabric: %u.%u loaded, API %u.%u requested%s\n", fabric >> 16, fabric & 0xffff,
              api >> 16, api & 0xffff,
              api < (1u << 16 | 18) ? " (efa device RDMA and FI_HMEM on every EFA need 1.18 or later)"
                                    : "");
  std::string why;
  int gpus = plexus::engine::cuda_device_count(&why);
  std::printf("CUDA: %s, %d device(s)%s%s\n",
              plexus::engine::cuda_compiled() ? "compiled in" : "not compiled in", gpus,
              gpus ? "" : ": ", gpus ? "" : why.c_str());
  std::printf("plugins:");
  for (const std::string& name : plexus::engine::available_plugins()) std::printf(" %s", name.c_str());
  std::printf("\n");
  // The folders searched, in order: PLEXUS_PLUGIN_PATH's, then the one beside libplexus.so.
  std::printf("plugin path:");
  for (const std::string& dir : plexus::engine::plugin_search_path()) std::printf(" %s", dir.c_str());
  std::printf("\n");
  return 0;
}
