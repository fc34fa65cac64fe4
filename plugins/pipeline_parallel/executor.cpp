// executor.cpp - runs one rank's plan for one step (executor.h).
#include "executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace plexus::pipeline {

namespace {

using Buffer = std::vector<float>;
using Key = std::pair<int, int>;  // (chunk, microbatch)

// Boundary tensors of the step in flight.
class StepState {
 public:
  StepState(const Plan& plan, const Geometry& g, size_t count) : g_(g), count_(count) {
    // Receives are matched in plan order: the k-th activation received is the input of the k-th
    // forward that takes one, and likewise for gradients (plan.h).
    for (const Action& a : plan) {
      if (a.kind == ActionKind::kForward && g.takes_input(a.chunk)) {
        inputs_due_.push_back({a.chunk, a.microbatch});
      }
      if (a.kind == ActionKind::kBackward && g.gives_output(a.chunk)) {
        gradients_due_.push_back({a.chunk, a.microbatch});
      }
    }
  }

  plx_result_t forward(const plx_stage_ops_t& ops, int chunk, int m, std::string* why);
  plx_result_t backward(const plx_stage_ops_t& ops, int chunk, int m, std::string* why);
  plx_result_t exchange(const Action& a, Links* links, std::string* why);
  plx_result_t check_done(std::string* why) const;

 private:
  Buffer take() {
    // At least one element, so that data() is never NULL: a NULL buffer means "no message".
    if (pool_.empty()) return Buffer(count_ > 0 ? count_ : 1);
    Buffer b = std::move(pool_.back());
    pool_.pop_back();
    return b;
  }
  void give(Buffer b) { pool_.push_back(std::move(b)); }

  const Geometry& g_;
  size_t count_;
  std::vector<Buffer> pool_;
  std::deque<Key> inputs_due_, gradients_due_;  // receives still to come, in order
  std::map<Key, Buffer> inputs_, gradients_;    // received, not yet used
  std::deque<Buffer> outputs_, input_grads_;    // produced, not yet sent, oldest first
  std::map<Key, int> state_;                    // 1 = forward ran, 2 = backward ran
  int forwards_ = 0, backwards_ = 0;
};

std::string op_name(const char* what, int chunk, int m, const Geometry& g) {
  return fmt::format("{} of chunk {} (global chunk {}) microbatch {}", what, chunk,
                     chunk * g.stages + g.stage, m);
}

plx_result_t StepState::forward(const plx_stage_ops_t& ops, int chunk, int m, std::string* why) {
  const Key key{chunk, m};
  if (state_.count(key) != 0) {
    *why = "schedule error: " + op_name("second forward", chunk, m, g_);
    return PLX_ERROR_INTERNAL;
  }
  Buffer input;
  if (g_.takes_input(chunk)) {
    auto it = inputs_.find(key);
    if (it == inputs_.end()) {
      *why = "schedule error: " + op_name("forward", chunk, m, g_) + " before its input arrived";
      return PLX_ERROR_INTERNAL;
    }
    input = std::move(it->second);
    inputs_.erase(it);
  }
  Buffer output = g_.gives_output(chunk) ? take() : Buffer();
  char err[512] = {};
  const plx_result_t r =
      ops.forward(ops.engine, chunk, m, g_.takes_input(chunk) ? input.data() : nullptr,
                  g_.gives_output(chunk) ? output.data() : nullptr, err, sizeof(err));
  if (r != PLX_SUCCESS) {
    *why = op_name("forward", chunk, m, g_) + ": " + err;
    return r;
  }
  if (g_.takes_input(chunk)) give(std::move(input));
  if (g_.gives_output(chunk)) outputs_.push_back(std::move(output));
  state_[key] = 1;
  ++forwards_;
  return PLX_SUCCESS;
}

plx_result_t StepState::backward(const plx_stage_ops_t& ops, int chunk, int m, std::string* why) {
  const Key key{chunk, m};
  auto done = state_.find(key);
  if (done == state_.end() || done->second != 1) {
    *why = "schedule error: " + op_name("backward", chunk, m, g_) +
           (done == state_.end() ? " before its forward" : " twice");
    return PLX_ERROR_INTERNAL;
  }
  Buffer grad_output;
  if (g_.gives_output(chunk)) {
    auto it = gradients_.find(key);
    if (it == gradients_.end()) {
      *why = "schedule error: " + op_name("backward", chunk, m, g_) +
             " before its output gradient arrived";
      return PLX_ERROR_INTERNAL;
    }
    grad_output = std::move(it->second);
    gradients_.erase(it);
  }
  Buffer grad_input = g_.takes_input(chunk) ? take() : Buffer();
  char err[512] = {};
  const plx_result_t r = ops.backward(
      ops.engine, chunk, m, g_.gives_output(chunk) ? grad_output.data() : nullptr,
      g_.takes_input(chunk) ? grad_input.data() : nullptr, err, sizeof(err));
  if (r != PLX_SUCCESS) {
    *why = op_name("backward", chunk, m, g_) + ": " + err;
    return r;
  }
  if (g_.gives_output(chunk)) give(std::move(grad_output));
  if (g_.takes_input(chunk)) input_grads_.push_back(std::move(grad_input));
  done->second = 2;
  ++backwards_;
  return PLX_SUCCESS;
}

plx_result_t StepState::exchange(const Action& a, Links* links, std::string* why) {
  auto schedule_error = [&](const char* what) {
    *why = std::string("schedule error: an exchange ") + what;
    return PLX_ERROR_INTERNAL;
  };
  if (a.send_activation && outputs_.empty()) {
    return schedule_error("sends an activation but no forward output is waiting");
  }
  if (a.send_gradient && input_grads_.empty()) {
    return schedule_error("sends a gradient but no input gradient is waiting");
  }
  if (a.recv_activation && inputs_due_.empty()) {
    return schedule_error("receives an activation that no later forward takes");
  }
  if (a.recv_gradient && gradients_due_.empty()) {
    return schedule_error("receives a gradient that no later backward takes");
  }
  Buffer recv_activation = a.recv_activation ? take() : Buffer();
  Buffer recv_gradient = a.recv_gradient ? take() : Buffer();
  Transfer t;
  if (a.send_activation) t.send_activation = outputs_.front().data();
  if (a.send_gradient) t.send_gradient = input_grads_.front().data();
  if (a.recv_activation) t.recv_activation = recv_activation.data();
  if (a.recv_gradient) t.recv_gradient = recv_gradient.data();
  const plx_result_t r = links->exchange(t, count_, why);
  if (r != PLX_SUCCESS) return r;
  if (a.send_activation) {
    give(std::move(outputs_.front()));
    outputs_.pop_front();
  }
  if (a.send_gradient) {
    give(std::move(input_grads_.front()));
    input_grads_.pop_front();
  }
  if (a.recv_activation) {
    inputs_[inputs_due_.front()] = std::move(recv_activation);
    inputs_due_.pop_front();
  }
  if (a.recv_gradient) {
    gradients_[gradients_due_.front()] = std::move(recv_gradient);
    gradients_due_.pop_front();
  }
  return PLX_SUCCESS;
}

plx_result_t StepState::check_done(std::string* why) const {
  const int expected = g_.chunks * g_.microbatches;
  if (forwards_ != expected || backwards_ != expected || !outputs_.empty() ||
      !input_grads_.empty() || !inputs_due_.empty() || !gradients_due_.empty() ||
      !inputs_.empty() || !gradients_.empty()) {
    *why = fmt::format(
        "schedule error: the step ended with {} of {} forwards and {} backwards run, {} "
        "activations and {} gradients unsent, {} activations and {} gradients not received",
        forwards_, expected, backwards_, outputs_.size(), input_grads_.size(),
        inputs_due_.size(), gradients_due_.size());
    return PLX_ERROR_INTERNAL;
  }
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t run_plan(const Plan& plan, const Geometry& g, const plx_stage_ops_t& ops,
                      Links* links, double* blocked_s, std::string* why) {
  StepState step(plan, g, ops.activation_count);
  double blocked = 0;
  for (const Action& a : plan) {
    plx_result_t r = PLX_SUCCESS;
    switch (a.kind) {
      case ActionKind::kForward:
        r = step.forward(ops, a.chunk, a.microbatch, why);
        break;
      case ActionKind::kBackward:
        r = step.backward(ops, a.chunk, a.microbatch, why);
        break;
      case ActionKind::kExchange: {
        const auto start = std::chrono::steady_clock::now();
        r = step.exchange(a, links, why);
        blocked += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        break;
      }
    }
    if (r != PLX_SUCCESS) return r;
  }
  *blocked_s = blocked;
  return step.check_done(why);
}

}  // namespace plexus::pipeline
