// gnuplot_process.h - runs gnuplot on a script, without a shell, bounded in time.
//
// gnuplot is looked up on PATH (posix_spawnp) and started in `folder` with argv
// {"gnuplot", script_name}, stdin from /dev/null and stdout and stderr into log_name there, so
// the script names its files relative to that folder and no path reaches gnuplot's command
// language. The caller waits; past timeout_s, or once SIGINT or SIGTERM has asked for a stop
// (a StopRequestScope of the caller's, engine/train/stop_request.h), the child is sent SIGKILL
// by its pid and reaped. gnuplot stays in the caller's process group, so a launcher's signal to
// the rank's group reaches it. What a failed gnuplot printed is quoted from its log's last
// 4 KiB, at most 400 bytes, control characters shown as '?'.
#pragma once

#include <string>

namespace plexus::train {

// "" if gnuplot ran the script and exited with status 0. Otherwise the cause, e.g.
//   "gnuplot was not found on PATH (install gnuplot, e.g. apt-get install gnuplot-nox)"
//   "gnuplot exited with status 1: <the last lines it printed>"
//   "gnuplot was killed by signal 9 (Killed)"
//   "gnuplot ran past 60 s and was killed"
//   "stopped by SIGINT while gnuplot ran"
std::string run_gnuplot(const std::string& folder, const std::string& script_name,
                        const std::string& log_name, double timeout_s);

// True if PATH names an executable "gnuplot" (what run_gnuplot will find), for an early warning.
bool gnuplot_on_path();

}  // namespace plexus::train
