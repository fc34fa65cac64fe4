// writable_folder.h - whether this process can write files in a folder now: it exists, is a
// folder, and a probe file can be created and removed in it (mkstemp, then unlink), so that
// permissions, a read-only mount or a full inode table all show before anything real is
// written. The one probe behind output_path.h, plexus-train's start checks and the checkpoint
// folder check. Thread safety: none needed (the probe file's name is unique).
#pragma once

#include <string>

namespace plexus::topology {

// "" if `folder` is an existing, writable folder; otherwise the reason, naming it:
//   "folder 'F' cannot be used: <strerror>"  (stat failed: missing, a part not a folder, ...)
//   "folder 'F' is not a folder"
//   "folder 'F' is not writable: <strerror>"  (the probe could not be created)
std::string writable_folder_problem(const std::string& folder);

}  // namespace plexus::topology
