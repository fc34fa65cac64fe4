// pinning.cpp - see pinning.h.
#include "comm/core/pinning.h"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "topology/cpu_binding.h"

namespace plexus::comm {

plx_result_t pin_progress_thread(plx_comm* comm) {
  std::optional<topology::PinMode> mode;
  if (std::optional<std::string> text = config_string("PLEXUS_PIN"); text && !text->empty()) {
    mode = topology::parse_pin_mode(*text);
    if (!mode) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("rank {}: PLEXUS_PIN={} is not one of none, numa, core",
                                   comm->rank, *text));
    }
  }
  if (mode == topology::PinMode::None) {
    log_message(LogLevel::Info, "rank {}: PLEXUS_PIN=none: progress thread left as is",
                comm->rank);
    return PLX_SUCCESS;
  }
  // Planned and applied on the progress thread itself, when it starts: a communicator that never
  // queues work never loads hwloc's topology for it.
  // By the process's place on its host, so that a split communicator's thread lands where its
  // world communicator's does (a split's own local rank counts only its members).
  const int rank = comm->rank;
  const int local_rank =
      comm->process_local_rank >= 0 ? comm->process_local_rank : comm->local_rank;
  const int local_size =
      comm->process_local_size >= 0 ? comm->process_local_size : comm->local_size;
  comm->executor->set_start_hook([mode, rank, local_rank, local_size] {
    topology::PinPlan plan;
    std::string error;
    if (topology::plan_pinning(mode, local_rank, local_size, &plan, &error) != PLX_SUCCESS) {
      log_message(LogLevel::Warn, "rank {}: progress thread not pinned: {}", rank, error);
      return;
    }
    log_message(LogLevel::Info, "rank {}: {}", rank, plan.reason);
    if (!plan.cpus.empty() && topology::bind_this_thread(plan.cpus, &error) != PLX_SUCCESS)
      log_message(LogLevel::Warn, "rank {}: progress thread not pinned: {}", rank, error);
  });
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
