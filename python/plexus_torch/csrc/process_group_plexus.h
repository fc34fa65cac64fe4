// process_group_plexus.h - Plexus as a torch.distributed backend ("plexus").
//
// One Plexus communicator per torch process group (the world group and each new_group), made
// through the store torch gives the backend: the group's rank 0 creates a unique id
// (plx_get_unique_id, a rendezvous server in its process on a kernel-chosen port), publishes its
// 128 bytes under the key "plexus_unique_id" (torch prefixes the key with the group's name), and
// every rank reads it and calls plx_comm_init_rank. No second well-known port is needed, so it
// works under torchrun, mp.spawn, Slurm or MPI alike.
//
// Every operation is a non-blocking Plexus call that returns at once; a Work per call completes
// on the group's completion thread (plexus_work.h). Argument errors are raised at once on the
// rank that made them; differing arguments across ranks (counts, dtypes, ops, roots) make Plexus
// return PLX_ERROR_MISMATCH on every rank, raised by the Work's wait() and set on its future,
// and the group stays usable. A lost peer is PLX_ERROR_REMOTE naming it.
//
// Point-to-point: the k-th send from rank a to rank b matches the k-th receive on b from a (tags
// are accepted and ignored, as NCCL has none; receives name their source). isend/irecv are
// plx_isend/plx_irecv, which stop holding the communicator once posted, so two ranks may each
// isend and then irecv to the other; batch_isend_irecv posts its operations together as one
// Plexus group (plx_group_start/plx_group_end).
//
// The base class is c10d::ProcessGroup in torch 1.x and c10d::Backend from torch 2.0; the
// method bodies do not depend on which (only torch 1.13 is built and tested here).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include "plexus/plexus.h"
#include "plexus_work.h"

namespace plexus::torch_backend {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

// Set by plexus_torch's atexit handler: a group destroyed from now on was never given to
// destroy_process_group, so the process is leaving without it (an uncaught exception, or a
// script that just ends): the destructor aborts instead of waiting for the other ranks.
extern std::atomic<bool> interpreter_exiting;

class ProcessGroupPlexus : public BackendBase {
 public:
  // Collective over the group's ranks: returns once every rank has joined (or throws, naming the
  // reason: a rank out of range, the unique id not published in time, Plexus's own error).
  ProcessGroupPlexus(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  // Destroys the communicator (plx_comm_destroy, which waits for the other ranks to destroy
  // theirs), then completes every outstanding Work. Aborts it instead (plx_comm_abort: nothing
  // waited for; peers see this rank lost) when Works are still outstanding (e.g. a receive nobody
  // answers) or when Python is exiting without destroy_process_group (an uncaught exception):
  // then this process exits at once and its peers learn of it within about a second.
  ~ProcessGroupPlexus() override;

  const std::string getBackendName() const override { return "plexus"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors,
                                               int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // batch_isend_irecv: nothing to do. Its sends and receives are plx_isend/plx_irecv, each posted
  // as soon as the communicator reaches it and then left in flight (plexus.h), so the batch's
  // operations are all posted without waiting for each other, and their Works complete as they
  // finish (not as one group: NCCL's ncclGroupEnd does not wait for them either).
  void startCoalescing() override {}
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override {}

  // The transport Plexus chose ("shm", "tcp;ofi_rxm", "ucx;...").
  std::string transport_name() const;
  // "collective:algorithm" of the last operation that ran (plx_comm_last_algorithm).
  std::string last_algorithm() const;

 private:
  // Calls `issue` (a non-blocking Plexus call that writes the request) under the submission lock,
  // throws its argument error at once, and queues the request for completion. Returns the Work,
  // which holds `outputs` (its result) and `inputs` (what the call reads) until it completes.
  c10::intrusive_ptr<c10d::Work> submit(const char* op_name, c10d::OpType type,
                                        bool point_to_point,
                                        std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> inputs,
                                        const std::function<plx_result_t(plx_request_t*)>& issue,
                                        Epilogue epilogue = nullptr);
  // An allreduce/reduce/reduce_scatter op for `type`; a pre-multiplied sum is created on the
  // communicator (plx_red_op_create_premul_sum) and must be released with release_op.
  plx_red_op_t acquire_op(const char* op_name, const c10d::ReduceOp& op, at::ScalarType type);
  void release_op(plx_red_op_t op);

  plx_comm_t comm_ = nullptr;
  mutable std::mutex submit_mutex_;  // one thread at a time on comm_ (plexus.h)
  // Requests issued and not yet completed: the destructor aborts when some are left.
  std::shared_ptr<std::atomic<int>> outstanding_ = std::make_shared<std::atomic<int>>(0);
  // Reset (drained) by the destructor after the communicator is destroyed or aborted.
  std::unique_ptr<CompletionQueue> collectives_;  // Ordered
  std::unique_ptr<CompletionQueue> p2p_;          // Polled
};

}  // namespace plexus::torch_backend
