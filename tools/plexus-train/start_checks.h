// start_checks.h - what plexus-train checks before it starts a communicator, so a bad output
// path is refused at once (exit 2) rather than after hours of training.
#pragma once

#include <string>

namespace plexus::train {

// "" if every rank can write `pattern` (--memory-report) at the end: its folder (the text
// before the last '/', "." if none) exists, is a folder and a file can be created and removed
// in it. A folder that itself holds "{rank}" differs per rank and is checked by each rank, with
// its number substituted, before training starts (engine/train/output_checks.h). Otherwise the
// message: "--memory-report 'PATH': folder 'F' <reason>".
std::string check_memory_report_folder(const std::string& pattern);

// "" if `path` (--plot) can take the plot at the end: its name ends in ".png" (any case), and,
// when `writer` (rank 0 draws; other ranks check the name only), a file can be written there
// now (topology/output_path.h: its folder exists and is writable, and it is not a folder, a
// symbolic link or a device). Otherwise the message: "--plot 'PATH': <reason>".
std::string check_plot_path(const std::string& path, bool writer);

}  // namespace plexus::train
