// smp_config_source.h - the text behind plexus-train --smp-config ARG: ARG itself when it
// starts with '{' (inline JSON), else the file it names. The file is treated as hostile: it must
// be a regular file (not a device, FIFO or folder; checked on the opened descriptor) of at most
// kMaxSmpConfigBytes, and inline JSON has the same limit.
#pragma once

#include <cstddef>
#include <string>

namespace plexus::engine {

constexpr size_t kMaxSmpConfigBytes = 1 << 20;  // 1 MiB: far above any real configuration

// The JSON text; *label becomes what messages call it ("'path'" or "(inline JSON)").
// Throws SmpConfigError (smp_config.h) naming the file and the cause.
std::string read_smp_config_source(const std::string& argument, std::string* label);

}  // namespace plexus::engine
