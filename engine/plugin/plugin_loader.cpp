#include "engine/plugin/plugin_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>

#include "plexus/plexus.h"
#include "topology/settings/config_read.h"

namespace plexus::engine {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "libplexus_plugin_";
constexpr const char* kSuffix = ".so";
// Where the plugins sit relative to libplexus.so's folder, in the build tree (build/lib) and in
// an install (<prefix>/<libdir>); CMakeLists.txt's PLEXUS_PLUGIN_SUBDIR.
constexpr const char* kPluginSubdir = PLEXUS_PLUGIN_SUBDIR;

// The folder libplexus.so was loaded from (dladdr on one of its public functions), so that the
// plugins are found beside the library wherever the build or the install tree was moved to.
std::string library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plx_get_version), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  fs::path library = fs::canonical(info.dli_fname, ec);
  return ec ? std::string() : library.parent_path().string();
}

// The highest N (up to kMaxProbedAbi) for which the library exports plx_plugin_entry_v<N>, 0 if
// none: what ABI a plugin that lacks this engine's symbol was built for. Probed only on that
// failure path.
constexpr uint32_t kMaxProbedAbi = 999;
uint32_t exported_abi(void* handle) {
  for (uint32_t n = kMaxProbedAbi; n >= 1; --n) {
    if (dlsym(handle, (PLX_PLUGIN_ENTRY_PREFIX + std::to_string(n)).c_str()) != nullptr) return n;
  }
  return 0;
}

// "plugin 'NAME': FILE was built for plugin ABI N (SYMBOL) but this engine speaks 1..3
// (plx_plugin_entry_v3; plx_plugin_v1 for ABI 1 to 3)".
std::string abi_mismatch(const std::string& name, const std::string& file, uint32_t abi,
                         const std::string& symbol) {
  return "plugin '" + name + "': " + file + " was built for plugin ABI " + std::to_string(abi) +
         " (" + symbol + ") but this engine speaks 1.." + std::to_string(PLX_PLUGIN_ABI_VERSION) +
         " (" + PLX_PLUGIN_ENTRY_SYMBOL + "; " + PLX_PLUGIN_LEGACY_ENTRY_SYMBOL +
         " for ABI 1 to 3)";
}
}  // namespace

std::vector<std::string> plugin_search_path() {
  std::vector<std::string> dirs;
  if (const std::optional<std::string> env = config_text("PLEXUS_PLUGIN_PATH")) {
    const std::string& all = *env;
    size_t start = 0;
    while (start <= all.size()) {
      size_t end = all.find(':', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) dirs.push_back(all.substr(start, end - start));
      start = end + 1;
    }
  }
  if (std::string lib = library_dir(); !lib.empty()) dirs.push_back(lib + "/" + kPluginSubdir);
  return dirs;
}

std::vector<std::string> available_plugins() {
  std::set<std::string> names;
  for (const std::string& dir : plugin_search_path()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::error_code type_ec;
      if (!entry.is_regular_file(type_ec)) continue;  // as load_plugin: regular files only
      std::string file = entry.path().filename().string();
      if (file.rfind(kPrefix, 0) == 0 && file.size() > std::string(kPrefix).size() + 3 &&
          file.compare(file.size() - 3, 3, kSuffix) == 0) {
        names.insert(file.substr(std::string(kPrefix).size(),
                                 file.size() - std::string(kPrefix).size() - 3));
      }
    }
  }
  return {names.begin(), names.end()};
}

LoadedPlugin::LoadedPlugin(LoadedPlugin&& other) noexcept
    : handle_(other.handle_),
      api_(other.api_),
      path_(std::move(other.path_)),
      entry_symbol_(std::move(other.entry_symbol_)) {
  other.handle_ = nullptr;
  other.api_ = plx_plugin_t{};
}

LoadedPlugin& LoadedPlugin::operator=(LoadedPlugin&& other) noexcept {
  if (this != &other) {
    if (handle_) dlclose(handle_);
    handle_ = other.handle_;
    api_ = other.api_;
    path_ = std::move(other.path_);
    entry_symbol_ = std::move(other.entry_symbol_);
    other.handle_ = nullptr;
    other.api_ = plx_plugin_t{};
  }
  return *this;
}

LoadedPlugin::~LoadedPlugin() {
  if (handle_) dlclose(handle_);
}

LoadedPlugin load_plugin(const std::string& name) {
  std::string file = kPrefix + name + kSuffix;
  std::string found;
  for (const std::string& dir : plugin_search_path()) {
    std::error_code ec;
    // A regular file (or a link to one): a folder or a FIFO of that name is passed over, never
    // handed to dlopen (which would fail, or block on the FIFO).
    if (fs::is_regular_file(fs::path(dir) / file, ec)) {
      found = (fs::path(dir) / file).string();
      break;
    }
  }
  if (found.empty()) {
    std::string list;
    for (const std::string& n : available_plugins()) list += (list.empty() ? "" : ", ") + n;
    throw PluginError("unknown plugin '" + name + "' (no " + file +
                      " on PLEXUS_PLUGIN_PATH or the plugin folders); available plugins: " +
                      (list.empty() ? "none" : list));
  }
  LoadedPlugin plugin;
  plugin.path_ = found;
  plugin.handle_ = dlopen(found.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin.handle_ == nullptr) {
    throw PluginError("plugin '" + name + "': dlopen " + found + ": " + dlerror());
  }
  // This ABI's entry symbol, else the one every plugin exported before the symbol carried the
  // version (ABI 1 to 3, told apart by the table's abi_version).
  std::string symbol = PLX_PLUGIN_ENTRY_SYMBOL;
  void* address = dlsym(plugin.handle_, symbol.c_str());
  if (address == nullptr) {
    symbol = PLX_PLUGIN_LEGACY_ENTRY_SYMBOL;
    address = dlsym(plugin.handle_, symbol.c_str());
  }
  if (address == nullptr) {
    if (const uint32_t other = exported_abi(plugin.handle_); other != 0) {
      throw PluginError(abi_mismatch(name, found, other, PLX_PLUGIN_ENTRY_PREFIX +
                                                             std::to_string(other)));
    }
    throw PluginError("plugin '" + name + "': " + found + " does not export " +
                      PLX_PLUGIN_ENTRY_SYMBOL + " (plugin ABI " +
                      std::to_string(PLX_PLUGIN_ABI_VERSION) + ")");
  }
  plugin.entry_symbol_ = symbol;
  const plx_plugin_t* table = reinterpret_cast<plx_plugin_entry_fn>(address)();
  const bool legacy = symbol == PLX_PLUGIN_LEGACY_ENTRY_SYMBOL;
  // A version N table is at least as large as version N's fields; older versions load with the
  // later hooks read as NULL (the table grows only by appending).
  const size_t needed = table == nullptr          ? sizeof(plx_plugin_t)
                        : table->abi_version >= 3 ? sizeof(plx_plugin_t)
                        : table->abi_version == 2 ? PLX_PLUGIN_V2_SIZE
                                                  : PLX_PLUGIN_V1_SIZE;
  // Through this ABI's symbol the table must say this ABI; through the legacy one, 1..3.
  const bool version_ok = table != nullptr && (legacy ? table->abi_version >= 1 &&
                                                            table->abi_version <= 3
                                                      : table->abi_version ==
                                                            PLX_PLUGIN_ABI_VERSION);
  if (!version_ok) {
    throw PluginError(
        abi_mismatch(name, found, table ? table->abi_version : 0, symbol) +
        (table ? " (table of " + std::to_string(table->struct_size) + " bytes)" : std::string()));
  }
  // The right version, but a table that cannot be one of it: say what is wrong with it.
  if (table->struct_size < needed) {
    throw PluginError("plugin '" + name + "': " + found + "'s table of plugin ABI " +
                      std::to_string(table->abi_version) + " is " +
                      std::to_string(table->struct_size) + " bytes; that version's is at least " +
                      std::to_string(needed));
  }
  if (table->name == nullptr) {
    throw PluginError("plugin '" + name + "': " + found + "'s table has no name (name is NULL)");
  }
  std::memcpy(&plugin.api_, table, std::min(table->struct_size, sizeof(plx_plugin_t)));
  if (name != plugin.api_.name) {
    throw PluginError("plugin '" + name + "': " + found + " calls itself '" + plugin.api_.name +
                      "'");
  }
  return plugin;
}

}  // namespace plexus::engine
