// p2p.cpp - the links between neighbouring pipeline stages (p2p.h).
#include "p2p.h"

#include <fmt/format.h>

namespace plexus::pipeline {

plx_result_t Links::open(plx_comm_t pipeline_group, std::unique_ptr<Links>* out,
                         std::string* why) {
  std::unique_ptr<Links> links(new Links);
  plx_result_t r = plx_comm_rank(pipeline_group, &links->stage_);
  if (r == PLX_SUCCESS) r = plx_comm_size(pipeline_group, &links->stages_);
  if (r == PLX_SUCCESS) r = plx_comm_split(pipeline_group, 0, links->stage_, &links->activations_);
  if (r == PLX_SUCCESS) r = plx_comm_split(pipeline_group, 0, links->stage_, &links->gradients_);
  if (r != PLX_SUCCESS) {
    *why = fmt::format("splitting the pipeline group into its activation and gradient links: {}",
                       plx_get_last_error(pipeline_group));
    links->failed_ = true;
    return r;
  }
  *out = std::move(links);
  return PLX_SUCCESS;
}

Links::~Links() {
  for (plx_comm_t comm : {activations_, gradients_}) {
    if (comm == nullptr) continue;
    if (failed_) {
      plx_comm_abort(comm);
    } else {
      plx_comm_destroy(comm);
    }
  }
}

plx_result_t Links::exchange(const Transfer& t, size_t count, std::string* why) {
  plx_result_t queued = plx_group_start();
  if (queued != PLX_SUCCESS) {
    *why = fmt::format("plx_group_start: {}", plx_get_last_error(nullptr));
    return queued;
  }
  std::string queue_error;
  auto queue = [&](plx_result_t r, const char* what) {
    if (r != PLX_SUCCESS && queued == PLX_SUCCESS) {
      queued = r;
      queue_error = fmt::format("{}: {}", what, plx_get_last_error(nullptr));
    }
  };
  if (t.send_activation) {
    queue(plx_send(t.send_activation, count, PLX_FLOAT32, next(), activations_, nullptr),
          "sending an activation");
  }
  if (t.recv_activation) {
    queue(plx_recv(t.recv_activation, count, PLX_FLOAT32, previous(), activations_, nullptr),
          "receiving an activation");
  }
  if (t.send_gradient) {
    queue(plx_send(t.send_gradient, count, PLX_FLOAT32, previous(), gradients_, nullptr),
          "sending a gradient");
  }
  if (t.recv_gradient) {
    queue(plx_recv(t.recv_gradient, count, PLX_FLOAT32, next(), gradients_, nullptr),
          "receiving a gradient");
  }
  const plx_result_t ended = plx_group_end();
  if (queued != PLX_SUCCESS) {
    *why = queue_error;
    return queued;
  }
  if (ended != PLX_SUCCESS) {
    *why = fmt::format("exchange with stages {} (previous) and {} (next): {}", previous(), next(),
                       plx_get_last_error(nullptr));
  }
  return ended;
}

plx_result_t Links::sum(double* values, size_t count, std::string* why) {
  plx_result_t r =
      plx_allreduce(values, values, count, PLX_FLOAT64, PLX_SUM, activations_, nullptr);
  if (r != PLX_SUCCESS) *why = fmt::format("bubble allreduce: {}", plx_get_last_error(nullptr));
  return r;
}

}  // namespace plexus::pipeline
