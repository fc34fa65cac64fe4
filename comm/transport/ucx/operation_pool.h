// operation_pool.h - the transport's own record of every send and receive UCX holds.
//
// UCX calls a completion callback with the user_data given at posting. That pointer is an
// Operation owned by the transport, not the caller's Request: after a failure the caller may
// destroy its Requests while UCX still holds the operations, and the transport's destructor must
// still cancel them and drive progress to close its endpoints. So an Operation outlives its
// Request; detaching (req = nullptr) makes a late completion touch nothing of the caller's.
// Records are reused; a pool only grows to the most operations in flight at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/transport/transport.h"

namespace plexus::comm::ucx {

class UcxTransport;

struct Operation {
  UcxTransport* owner = nullptr;
  Request* req = nullptr;       // the caller's request; nullptr once detached
  void* ucx_request = nullptr;  // UCX's handle while in flight
  bool is_send = false;
  bool posting = false;  // inside ucp_tag_*_nbx: a completion now is released by the poster
  bool in_use = false;
  int peer = -1;
  uint64_t tag = 0;
  size_t bytes = 0;
};

class OperationPool {
 public:
  Operation* acquire() {
    if (free_.empty()) {
      records_.push_back(std::make_unique<Operation>());
      free_.push_back(records_.back().get());
    }
    Operation* op = free_.back();
    free_.pop_back();
    *op = Operation{};
    op->in_use = true;
    ++in_use_;
    return op;
  }

  void release(Operation* op) {
    op->in_use = false;
    op->req = nullptr;
    op->ucx_request = nullptr;
    free_.push_back(op);
    --in_use_;
  }

  size_t in_use() const { return in_use_; }

  // The operations still held by UCX (a snapshot: callbacks may release them meanwhile).
  std::vector<Operation*> live() const {
    std::vector<Operation*> out;
    for (const auto& record : records_) {
      if (record->in_use) out.push_back(record.get());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<Operation>> records_;
  std::vector<Operation*> free_;
  size_t in_use_ = 0;
};

}  // namespace plexus::comm::ucx
