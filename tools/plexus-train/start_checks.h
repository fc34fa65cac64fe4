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

// "" if `path` (--plot) is named as a PNG image (ends in ".png", any case), else the message
// "--plot 'PATH': the name must end in .png ...". Where it is written is checked by rank 0, the
// one that draws, once the communicator exists (engine/train/output_checks.h), so that a bad
// folder ends every rank at once.
std::string check_plot_name(const std::string& path);

}  // namespace plexus::train
