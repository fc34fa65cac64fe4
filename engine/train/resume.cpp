#include "engine/train/resume.h"

#include <cstdio>
#include <string>
#include <vector>

#include "engine/checkpoint/schedule_resume.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/train/option_checks.h"

namespace plexus::engine {

namespace {

void say(const std::string& line) {
  std::printf("plexus-train: %s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

ResumeState resume_training(const TrainOptions& o, const ShardedCheckpointContext& context,
                            StageModel& model, TrainingState& state, World& world) {
  ResumeState r;
  r.schedule = LrSchedule{o.lr, o.min_lr_ratio, o.warmup_steps, o.steps};
  if (o.checkpoint_dir.empty()) return r;
  const bool leader = world.rank() == 0;
  r.lock = lock_checkpoint_folder(context, world);
  if (leader) {
    if (!r.lock->previous_holder().empty()) {
      say(r.lock->path() + ": taking the lock over from " + r.lock->previous_holder() +
          ", which ended without releasing it");
    }
    std::string leftovers;
    for (const std::string& name : leftover_saves(context.dir, context.job)) {
      leftovers += (leftovers.empty() ? "" : ", ") + name;
    }
    if (!leftovers.empty()) {
      say(context.dir + " holds saves that other jobs did not finish: " + leftovers +
          " (never loaded; remove them to free their space)");
    }
  }
  std::string path;
  r.run = load_newest_sharded_checkpoint(context, o.global_batch, model, state, world, &path);
  if (!r.run) {
    if (leader) say("no checkpoint in " + context.dir + ": starting fresh");
    return r;
  }
  const ScheduleChoice choice =
      resume_schedule(path, r.run->schedule, r.schedule,
                      resume_schedule_option(o.lr_schedule_on_resume), r.run->next_step, o.steps);
  r.schedule = choice.schedule;
  if (leader) {
    say("resumed from " + path + ": next step " + std::to_string(r.run->next_step + 1) +
        (r.run->seed != o.seed ? " (data order from the checkpoint's --seed)" : ""));
    if (!choice.note.empty()) say(choice.note);
  }
  return r;
}

}  // namespace plexus::engine
