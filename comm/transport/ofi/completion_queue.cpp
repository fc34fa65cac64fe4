// completion_queue.cpp - fi_cq_read / fi_cq_readerr.
#include "comm/transport/ofi/completion_queue.h"

#include <fmt/format.h>

#include <algorithm>

namespace plexus::comm::ofi {

plx_result_t CompletionQueue::open(fid_domain* domain, int rank,
                                   std::unique_ptr<CompletionQueue>* out) {
  auto queue = std::make_unique<CompletionQueue>();
  queue->rank_ = rank;
  fi_cq_attr attr = {};
  attr.format = FI_CQ_FORMAT_TAGGED;
  attr.wait_obj = FI_WAIT_NONE;  // polled; the transport backs off by itself
  fid_cq* raw = nullptr;
  int ret = fi_cq_open(domain, &attr, &raw, nullptr);
  if (ret != 0) return ofi_error(rank, "fi_cq_open", ret);
  queue->cq_.reset(raw);
  *out = std::move(queue);
  return PLX_SUCCESS;
}

plx_result_t CompletionQueue::poll(Completion* out, size_t max, size_t* count) {
  constexpr size_t kBatch = 16;
  fi_cq_tagged_entry entries[kBatch];
  *count = 0;
  const ssize_t got = fi_cq_read(cq_.get(), entries, std::min(max, kBatch));
  if (got > 0) {
    for (ssize_t i = 0; i < got; ++i) {
      Completion& c = out[(*count)++];
      c.context = entries[i].op_context;
      c.result = PLX_SUCCESS;
      c.is_send = (entries[i].flags & FI_SEND) != 0;
      c.error.clear();
    }
    return PLX_SUCCESS;
  }
  if (got == -FI_EAGAIN) return PLX_SUCCESS;
  if (got != -FI_EAVAIL) return ofi_error(rank_, "fi_cq_read", got);

  fi_cq_err_entry err = {};
  const ssize_t ret = fi_cq_readerr(cq_.get(), &err, 0);
  if (ret == -FI_EAGAIN) return PLX_SUCCESS;
  if (ret < 0) return ofi_error(rank_, "fi_cq_readerr", ret);
  char detail[256] = {};
  const char* provider_text =
      fi_cq_strerror(cq_.get(), err.prov_errno, err.err_data, detail, sizeof(detail));
  Completion& c = out[(*count)++];
  c.context = err.op_context;
  c.result = PLX_ERROR_TRANSPORT;
  c.is_send = (err.flags & FI_SEND) != 0;
  c.error = fmt::format("{} failed: {} ({}); provider: {} ({}); {} bytes", 
                        c.is_send ? "fi_tsend" : "fi_trecv", fi_strerror(err.err), err.err,
                        provider_text ? provider_text : "", err.prov_errno, err.len);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::ofi
