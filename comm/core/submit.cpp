// submit.cpp - see submit.h.
#include "comm/core/submit.h"

#include <utility>
#include <vector>

#include "comm/base/error.h"
#include "comm/core/communicator.h"

namespace plexus::comm {
namespace {

struct GroupState {
  int depth = 0;
  // One task per communicator, in the order the communicators were first used.
  std::vector<std::pair<plx_comm*, std::shared_ptr<Task>>> tasks;
};

thread_local GroupState g_group;
thread_local CompletionScope* t_scope = nullptr;  // the open CompletionScope of this thread

std::shared_ptr<Task> group_task(plx_comm* comm) {
  for (auto& [c, task] : g_group.tasks) {
    if (c == comm) return task;
  }
  g_group.tasks.emplace_back(comm, std::make_shared<Task>());
  g_group.tasks.back().second->in_open_group = true;
  return g_group.tasks.back().second;
}

template <typename AddOp>
plx_result_t submit(plx_comm* comm, plx_request_t* request, AddOp&& add) {
  if (g_group.depth > 0) {
    std::shared_ptr<Task> task = group_task(comm);
    std::unique_ptr<plx_request> made(request ? new plx_request{task} : nullptr);
    add(*task);
    attach_pending_completion(*task);
    if (request) *request = made.release();
    return PLX_SUCCESS;
  }
  auto task = std::make_shared<Task>();
  add(*task);
  attach_pending_completion(*task);
  task->may_park = request != nullptr && task->collectives.empty() && !task->p2p.empty();
  if (request) {
    std::unique_ptr<plx_request> made(new plx_request{task});
    comm->executor->submit(task);
    *request = made.release();
    return PLX_SUCCESS;
  }
  ActiveCall active(comm);
  comm->executor->run_now(task);
  return task->complete();
}

}  // namespace

plx_result_t submit_collective(plx_comm* comm, const CollectiveOp& op, plx_request_t* request) {
  return submit(comm, request, [&](Task& task) { task.collectives.push_back(op); });
}

plx_result_t submit_p2p(plx_comm* comm, const P2POp& op, plx_request_t* request) {
  return submit(comm, request, [&](Task& task) { task.p2p.push_back(op); });
}

void submit_refused(plx_comm* comm, const CollectiveOp& op) {
  if (g_group.depth > 0) {
    group_task(comm)->collectives.push_back(op);
    return;
  }
  auto task = std::make_shared<Task>();
  task->collectives.push_back(op);
  comm->executor->submit(task);
}

plx_result_t submit_body(plx_comm* comm, std::function<plx_result_t()> body) {
  auto task = std::make_shared<Task>();
  task->body = std::move(body);
  ActiveCall active(comm);
  return comm->executor->run_now(task);
}

CompletionScope::CompletionScope(Completion step) : step_(std::move(step)) { t_scope = this; }

CompletionScope::~CompletionScope() {
  if (t_scope == this) t_scope = nullptr;
}

void attach_pending_completion(Task& task) {
  CompletionScope* scope = t_scope;
  if (scope == nullptr || scope->attached_) return;
  t_scope = nullptr;  // one operation per scope
  if (scope->step_) task.add_completion(std::move(scope->step_));
  scope->attached_ = true;
}

bool in_group() { return g_group.depth > 0; }

bool in_open_group(const Task& task) { return task.in_open_group.load(); }

void group_start() { ++g_group.depth; }

plx_result_t group_end() {
  if (g_group.depth == 0) {
    return set_error(PLX_ERROR_INVALID_USAGE, "no plx_group_start() is open on this thread");
  }
  if (--g_group.depth > 0) return PLX_SUCCESS;
  auto tasks = std::move(g_group.tasks);
  g_group.tasks.clear();
  // Every communicator's task goes to its progress thread first, then all are awaited: a group
  // spanning communicators must not run them one after the other (their peers may order them
  // differently).
  for (auto& [comm, task] : tasks) {
    task->in_open_group = false;
    comm->executor->submit(task);
  }
  plx_result_t first = PLX_SUCCESS;
  std::string message;
  for (auto& [comm, task] : tasks) {
    const plx_result_t result = task->complete();  // with the members' completion steps
    if (result != PLX_SUCCESS && first == PLX_SUCCESS) {
      first = result;
      message = last_error();
    }
  }
  if (first != PLX_SUCCESS) return set_error(first, message);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
