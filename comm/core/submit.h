// submit.h - how a C ABI call becomes work for its communicator's executor.
//
// Outside a group: a blocking call runs its task now (on this thread when the communicator is
// idle) and returns its result; a non-blocking call queues it for the progress thread and hands
// back a request. Inside a group (plx_group_start): the operation joins the group's task for
// that communicator, and plx_group_end runs every communicator's task concurrently. Whoever
// completes a task (the blocking call, plx_wait/plx_test/plx_waitall, plx_group_end) runs its
// completion steps (task.h; CompletionScope below attaches one to an operation).
#pragma once

#include <memory>

#include "comm/core/task.h"
#include "plexus/plexus.h"

// What a plx_request_t points to.
struct plx_request {
  std::shared_ptr<plexus::comm::Task> task;
};

namespace plexus::comm {

// `request` NULL: blocking. The op's tag base must already be set.
plx_result_t submit_collective(plx_comm* comm, const CollectiveOp& op, plx_request_t* request);
plx_result_t submit_p2p(plx_comm* comm, const P2POp& op, plx_request_t* request);
// A refused call's signature comparison (op.refused; c_api_collectives.cpp). Outside a group it
// goes to the progress thread with nobody to wait for it, its result dropped; inside one it takes
// the refused call's place in the group's task, so the group fails at plx_group_end on every
// rank at the refused call's position (run_task.cpp finishes the group's sends and receives).
// No completion step is attached.
void submit_refused(plx_comm* comm, const CollectiveOp& op);
// A custom step (comm split), always blocking and never inside a group.
plx_result_t submit_body(plx_comm* comm, std::function<plx_result_t()> body);

// While one lives on the calling thread, the next operation submitted on that thread
// (submit_collective, submit_p2p; in a group or not, with a request or not) carries `step` as a
// completion step of its task (task.h): it runs once the operation's task has finished, on the
// thread that completes it: plx_wait, plx_test, plx_waitall for a request, plx_group_end for a
// group, the call itself when blocking outside a group. If nothing was submitted when the scope
// ends (an argument error), the step is destroyed unrun. Scopes do not nest.
class CompletionScope {
 public:
  explicit CompletionScope(Completion step);
  ~CompletionScope();
  CompletionScope(const CompletionScope&) = delete;
  CompletionScope& operator=(const CompletionScope&) = delete;

  // Whether an operation took the step.
  bool attached() const { return attached_; }

 private:
  friend void attach_pending_completion(Task& task);
  Completion step_;
  bool attached_ = false;
};

// Gives the calling thread's pending CompletionScope step, if any, to `task` (submit.cpp).
void attach_pending_completion(Task& task);

// Group state of the calling thread.
bool in_group();
bool in_open_group(const Task& task);  // queued in an open group (any thread's), not yet run
void group_start();
plx_result_t group_end();  // PLX_ERROR_INVALID_USAGE without a start

}  // namespace plexus::comm
