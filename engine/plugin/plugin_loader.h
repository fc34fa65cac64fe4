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
  // The ABI version the plugin was built for (1, 2 or 3).
  uint32_t abi_version() const { return api_.abi_version; }
  // The symbol it was loaded through: PLX_PLUGIN_ENTRY_SYMBOL (plx_plugin_entry_v3), or
  // PLX_PLUGIN_LEGACY_ENTRY_SYMBOL (plx_plugin_v1) for a plugin built before the symbol carried
  // the ABI version.
  const std::string& entry_symbol() const { return entry_symbol_; }

 private:
  friend LoadedPlugin load_plugin(const std::string& name);
  void* handle_ = nullptr;
  plx_plugin_t api_{};  // copied from the plugin, widened; its strings point into the library
  std::string path_;
  std::string entry_symbol_;
};

// Loads plugin `name` through PLX_PLUGIN_ENTRY_SYMBOL (its table's abi_version must be this
// ABI's), or through the legacy plx_plugin_v1 (abi_version 1, 2 or 3; struct_size at least that
// version's fields). Throws PluginError naming the plugin and listing the available ones when
// it is not found, or giving dlerror() text, or the ABI mismatch: "plugin 'NAME': FILE was built
// for plugin ABI N (plx_plugin_entry_vN) but this engine speaks 1..3 (plx_plugin_entry_v3; ...)".
LoadedPlugin load_plugin(const std::string& name);

}  // namespace plexus::engine
