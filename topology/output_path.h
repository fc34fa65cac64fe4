// output_path.h - checks on a file that is written to a temporary name and renamed over its
// path: the rename would silently replace a symbolic link, a device, a FIFO or a folder's
// entry, so those are refused. Shared by the topology dump, the cost cache, checkpoints and
// plexus-train's reports.
#pragma once

#include <string>

namespace plexus::topology {

// The folder of a file path: the text before the last '/', "." if none, "/" for a file in the
// root.
std::string folder_of(const std::string& path);

// "" if renaming a new file onto `path` replaces nothing but a regular file: `path` does not
// exist, or lstat() says it is a regular file (a symbolic link is not followed). Otherwise the
// reason, naming the path: "'P' exists and is a symbolic link (...); refusing to replace it".
std::string replace_target_problem(const std::string& path);

// "" if a file can be written at `path` now: replace_target_problem(path) is "" and its folder
// (the text before the last '/', "." if none) exists, is a folder and a file can be created and
// removed in it. With `folders_created` (the writer creates missing folders), a missing folder
// is fine if its nearest existing ancestor is a writable folder (writable_folder.h's probe).
// Otherwise the reason, naming the path or the folder.
std::string output_file_problem(const std::string& path, bool folders_created = false);

}  // namespace plexus::topology
