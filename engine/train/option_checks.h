// option_checks.h - plexus-train's options checked against each other and the placement
// before the communicator's groups, plugins or model exist. Each check throws
// std::invalid_argument (bad input, exit code 2) naming the option, its value and the rule.
// Sizes (model dimensions, memory) are size_limits.h's.
#pragma once

#include <string>

#include "engine/checkpoint/schedule_resume.h"
#include "engine/config/options.h"
#include "engine/placement/placement.h"

namespace plexus::engine {

// --pipeline-schedule as the plugin ABI's PLX_PIPELINE_* code.
int schedule_code(const std::string& name);

// --lr-schedule-on-resume.
ResumeSchedule resume_schedule_option(const std::string& name);

// Every count positive, every rate finite and >= 0, the batch divisible by the data-parallel
// degree and into --microbatches, --virtual-stages and --microbatches as the pipeline schedule
// needs, --lr finite and positive, the two schedule options known.
void check_options(const TrainOptions& o, const Placement& placement);

}  // namespace plexus::engine
