// completion_queue.h - the completion queue of one endpoint, read without blocking.
//
// Progress in Plexus is manual: every fi_cq_read also drives the provider's state machines, so
// the transport calls poll() in its wait loop (with backoff when idle) rather than waiting on
// an OS object.
#pragma once

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <memory>
#include <string>

#include "comm/transport/ofi/ofi_util.h"

namespace plexus::comm::ofi {

struct Completion {
  void* context = nullptr;         // the operation's fi_context2
  plx_result_t result = PLX_SUCCESS;
  bool is_send = false;            // from the entry's FI_SEND flag
  std::string error;               // set when result != PLX_SUCCESS (fi_cq_strerror text)
};

class CompletionQueue {
 public:
  static plx_result_t open(fid_domain* domain, int rank, std::unique_ptr<CompletionQueue>* out);

  fid_cq* cq() const { return cq_.get(); }

  // Reads up to `max` completions into out[0..*count). Never blocks. A failed operation comes
  // back as a Completion with its error; a failure of the queue itself returns
  // PLX_ERROR_TRANSPORT.
  plx_result_t poll(Completion* out, size_t max, size_t* count);

 private:
  int rank_ = 0;
  FidPtr<fid_cq> cq_;
};

}  // namespace plexus::comm::ofi
