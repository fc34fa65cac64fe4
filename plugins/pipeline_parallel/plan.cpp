// plan.cpp - building a rank's action list (plan.h).
#include "plan.h"

namespace plexus::pipeline {

void add_forward(Plan* plan, int chunk, int microbatch) {
  Action a;
  a.kind = ActionKind::kForward;
  a.chunk = chunk;
  a.microbatch = microbatch;
  plan->push_back(a);
}

void add_backward(Plan* plan, int chunk, int microbatch) {
  Action a;
  a.kind = ActionKind::kBackward;
  a.chunk = chunk;
  a.microbatch = microbatch;
  plan->push_back(a);
}

void add_exchange(Plan* plan, bool send_activation, bool send_gradient, bool recv_activation,
                  bool recv_gradient) {
  if (!send_activation && !send_gradient && !recv_activation && !recv_gradient) return;
  Action a;
  a.kind = ActionKind::kExchange;
  a.send_activation = send_activation;
  a.send_gradient = send_gradient;
  a.recv_activation = recv_activation;
  a.recv_gradient = recv_gradient;
  plan->push_back(a);
}

}  // namespace plexus::pipeline
