// plugin_loader.h - finds, dlopens and checks Plexus plugins (include/plexus/plugin.h).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "plexus/plugin.h"

namespace plexus::engine {

class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The folders searched, in order: each entry of PLEXUS_PLUGIN_PATH, then plexus/plugins beside
// the libplexus.so this process loaded (build/lib/plexus/plugins in the build tree,
// <prefix>/<libdir>/plexus/plugins in an install or an unpacked package, wherever it was moved).
std::vector<std::string> plugin_search_path();

// Names of the plugins found on the search path (from libplexus_plugin_<name>.so), sorted.
std::vector<std::string> available_plugins();

// A loaded plugin. Unloads (dlclose) on destruction. api() is the plugin's table widened to this
// engine's ABI: the hooks an older plugin's smaller table lacks read as NULL, so callers test a
// hook for NULL whatever the plugin's version.
class LoadedPlugin {
 public:
  LoadedPlugin() = default;
  LoadedPlugin(LoadedPlugin&& other) noexcept;
  LoadedPlugin& operator=(LoadedPlugin&& other) noexcept;
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
  ~LoadedPlugin();

  const plx_plugin_t& api() const { return api_; }
  const std::string& path() const { return path_; }
  // The ABI version the plugin was built for (1 or 2).
  uint32_t abi_version() const { return api_.abi_version; }

 private:
  friend LoadedPlugin load_plugin(const std::string& name);
  void* handle_ = nullptr;
  plx_plugin_t api_{};  // copied from the plugin, widened; its strings point into the library
  std::string path_;
};

// Loads plugin `name`. Accepts plugins built for ABI version 1 (struct_size at least
// PLX_PLUGIN_V1_SIZE) and 2. Throws PluginError naming the plugin and listing the available ones
// when it is not found, or giving dlerror() text, or the ABI mismatch.
LoadedPlugin load_plugin(const std::string& name);

}  // namespace plexus::engine
