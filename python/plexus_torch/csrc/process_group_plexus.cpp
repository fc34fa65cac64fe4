// process_group_plexus.cpp - see process_group_plexus.h. One method per torch operation, each:
// check the arguments, stage list arguments into one flat tensor where Plexus takes one buffer,
// issue the non-blocking Plexus call, and leave the copy back into the caller's list (if any) to
// the epilogue, run on the completion thread once the data has arrived.
#include "process_group_plexus.h"

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>

#include "tensor_checks.h"

namespace plexus::torch_backend {

namespace {

constexpr const char* kUniqueIdKey = "plexus_unique_id";
constexpr const char* kErrorPrefix = "error:";

size_t count_of(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

plx_datatype_t dtype(const char* op_name, const at::Tensor& t) {
  return datatype_of(op_name, t.scalar_type());
}

// "plexus <op>: <plexus message>" for a call that failed before it made a request.
[[noreturn]] void fail_call(const char* op_name, plx_result_t result) {
  fail(op_name, std::string(plx_get_error_string(result)) + ": " + plx_get_last_error(nullptr));
}

// The ranks' blocks of a list argument laid end to end (a copy; the list's own tensors may be
// anywhere in memory, of any strides).
at::Tensor flatten(const std::vector<at::Tensor>& tensors, at::ScalarType type) {
  int64_t total = 0;
  for (const at::Tensor& t : tensors) total += t.numel();
  at::Tensor flat = at::empty({total}, at::TensorOptions().dtype(type));
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    flat.narrow(0, offset, t.numel()).copy_(t.reshape({-1}));
    offset += t.numel();
  }
  return flat;
}

// Copies consecutive blocks of `flat` into `tensors` (the inverse of flatten).
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

// Element counts and displacements of an all-to-all from torch's split sizes (rows of dim 0;
// empty: equal blocks). Throws when they do not add up to the tensor's rows.
void alltoall_layout(const char* op_name, const at::Tensor& t, const std::vector<int64_t>& splits,
                     int size, const char* what, std::vector<size_t>* counts,
                     std::vector<size_t>* displs) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t row_elements = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> row_counts(splits);
  if (row_counts.empty()) {
    if (rows % size != 0) {
      fail(op_name, std::string(what) + " has " + std::to_string(rows) +
                        " rows, not divisible by the group size " + std::to_string(size) +
                        " (pass split sizes)");
    }
    row_counts.assign(size, rows / size);
  }
  if (static_cast<int>(row_counts.size()) != size) {
    fail(op_name, std::string(what) + " split sizes have " + std::to_string(row_counts.size()) +
                      " entries, expected the group size " + std::to_string(size));
  }
  int64_t sum = 0;
  for (int64_t c : row_counts) {
    if (c < 0) fail(op_name, std::string(what) + " split size " + std::to_string(c) + " < 0");
    sum += c;
  }
  if (sum != rows) {
    fail(op_name, std::string(what) + " split sizes add up to " + std::to_string(sum) +
                      " rows, but the tensor has " + std::to_string(rows));
  }
  counts->resize(size);
  displs->resize(size);
  size_t offset = 0;
  for (int j = 0; j < size; ++j) {
    (*counts)[j] = static_cast<size_t>(row_counts[j] * row_elements);
    (*displs)[j] = offset;
    offset += (*counts)[j];
  }
}

// Complex tensors as their real views (torch.view_as_real: a trailing dimension of 2), for the
// calls that only move bytes, as torch's own all_reduce hands a complex SUM to the backend.
std::vector<at::Tensor> real_views(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : tensors) {
    out.push_back(t.defined() && t.is_complex() && t.is_contiguous() ? at::view_as_real(t) : t);
  }
  return out;
}

// Whether the bytes of `a` and `b` overlap (views of one storage, not only the same tensor).
bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  const size_t a_bytes = a.numel() * a.element_size(), b_bytes = b.numel() * b.element_size();
  return a_bytes > 0 && b_bytes > 0 && a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

}  // namespace

std::atomic<bool> interpreter_exiting{false};

ProcessGroupPlexus::ProcessGroupPlexus(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout)
    : BackendBase(rank, size) {
  constexpr const char* op_name = "init_process_group";
  if (size < 1) fail(op_name, "world size " + std::to_string(size) + " is below 1");
  check_rank(op_name, rank, size, "rank");
  plx_unique_id_t id;
  if (rank == 0) {
    const plx_result_t result = plx_get_unique_id(&id);
    if (result != PLX_SUCCESS) {
      std::string reason = std::string(plx_get_error_string(result)) + ": " +
                           plx_get_last_error(nullptr);
      if (const char* port = std::getenv("PLEXUS_MASTER_PORT")) {
        reason += std::string(" (PLEXUS_MASTER_PORT=") + port +
                  " is set, so every group's rank 0 listens on that one port: unset it, the "
                  "store carries each group's address)";
      }
      // Tell the other ranks at once rather than leave them waiting for the key.
      const std::string message = std::string(kErrorPrefix) + "rank 0: " + reason;
      store->set(kUniqueIdKey, std::vector<uint8_t>(message.begin(), message.end()));
      fail(op_name, "rank 0: " + reason);
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + PLX_UNIQUE_ID_BYTES));
  } else {
    const std::vector<uint8_t> value = store->get(kUniqueIdKey);
    const std::string text(value.begin(), value.end());
    if (text.rfind(kErrorPrefix, 0) == 0) {
      fail(op_name, "rank " + std::to_string(rank) + ": rank 0 could not start the rendezvous: " +
                        text.substr(std::strlen(kErrorPrefix)));
    }
    if (value.size() != PLX_UNIQUE_ID_BYTES) {
      fail(op_name, "rank " + std::to_string(rank) + ": the store's " + kUniqueIdKey + " holds " +
                        std::to_string(value.size()) + " bytes, expected " +
                        std::to_string(PLX_UNIQUE_ID_BYTES));
    }
    std::memcpy(id.internal, value.data(), PLX_UNIQUE_ID_BYTES);
  }
  const plx_result_t result = plx_comm_init_rank(&comm_, size, id, rank);
  if (result != PLX_SUCCESS) fail_call(op_name, result);
  if (rank == 0) {
    // Every rank has joined, so every rank has read the id: a later group of the same name in
    // the same store must not find this one's.
    try {
      store->deleteKey(kUniqueIdKey);
    } catch (const std::exception&) {
      // A store without deletion: the key is overwritten by the next rank 0 anyway.
    }
  }
  collectives_ = std::make_unique<CompletionQueue>(CompletionQueue::Mode::Ordered);
  p2p_ = std::make_unique<CompletionQueue>(CompletionQueue::Mode::Polled);
#if TORCH_VERSION_MAJOR < 2
  init();
#endif
  (void)timeout;  // Plexus's own timeout (PLEXUS_TIMEOUT_MS) bounds every wait
}

ProcessGroupPlexus::~ProcessGroupPlexus() {
  // Python drops the group holding the GIL, but the completion threads may need it (a future's
  // Python callback, or releasing one), and destroying waits for the peers: let it go meanwhile.
  const bool finalizing = interpreter_exiting.load() || (Py_IsInitialized() && _Py_IsFinalizing());
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
  if (finalizing || outstanding_->load() > 0) {
    plx_comm_abort(comm_);  // the outstanding requests end with PLX_ERROR_ABORTED
  } else {
    plx_comm_destroy(comm_);
  }
  collectives_.reset();
  p2p_.reset();
}

std::string ProcessGroupPlexus::transport_name() const {
  const char* name = "";
  plx_comm_transport_name(comm_, &name);
  return name;
}

std::string ProcessGroupPlexus::last_algorithm() const {
  std::lock_guard<std::mutex> lock(submit_mutex_);
  const char* name = "";
  plx_comm_last_algorithm(comm_, &name);
  return name;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::submit(
    const char* op_name, c10d::OpType type, bool point_to_point, std::vector<at::Tensor> outputs,
    std::vector<at::Tensor> inputs, const std::function<plx_result_t(plx_request_t*)>& issue,
    Epilogue epilogue) {
  auto pending = std::make_shared<PendingRequest>();
  pending->op_name = op_name;
  pending->epilogue = std::move(epilogue);
  pending->outstanding = outstanding_;
  auto work = c10::make_intrusive<WorkPlexus>(getRank(), type, std::move(outputs),
                                               std::move(inputs), pending);
  std::lock_guard<std::mutex> lock(submit_mutex_);
  const plx_result_t result = issue(&pending->request);
  if (result != PLX_SUCCESS) fail_call(op_name, result);
  ++*outstanding_;
  (point_to_point ? p2p_ : collectives_)->push(std::move(pending), work);
  return work;
}

plx_red_op_t ProcessGroupPlexus::acquire_op(const char* op_name, const c10d::ReduceOp& op,
                                            at::ScalarType type) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return reduce_op(op_name, op, type);
  if (!at::isFloatingType(type)) {
    fail(op_name, std::string("PREMUL_SUM takes floating-point tensors (") + c10::toString(type) +
                      " would round the factor to an integer)");
  }
  // The factor as one element of the tensor's dtype (rounded as torch rounds it).
  const at::Tensor scalar =
      at::scalar_tensor(premul_factor(op_name, op), at::TensorOptions().dtype(type));
  plx_red_op_t premul;
  std::lock_guard<std::mutex> lock(submit_mutex_);
  const plx_result_t result =
      plx_red_op_create_premul_sum(&premul, scalar.data_ptr(), datatype_of(op_name, type), comm_);
  if (result != PLX_SUCCESS) fail_call(op_name, result);
  return premul;
}

void ProcessGroupPlexus::release_op(plx_red_op_t op) {
  // A queued call has copied the factor already (plexus.h), so the op can go at once.
  if (op < PLX_NUM_OPS) return;
  std::lock_guard<std::mutex> lock(submit_mutex_);
  plx_red_op_destroy(op, comm_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  constexpr const char* op_name = "broadcast";
  std::vector<at::Tensor> real = real_views(tensors);
  at::Tensor& t = single_tensor(op_name, real);
  check_rank(op_name, opts.rootRank, getSize(), "root");
  if (opts.rootTensor != 0) fail(op_name, "root tensor index must be 0");
  return submit(op_name, c10d::OpType::BROADCAST, false, {tensors[0]}, {},
                [&](plx_request_t* request) {
                  return plx_ibroadcast(t.data_ptr(), t.data_ptr(), count_of(t),
                                        dtype(op_name, t), static_cast<int>(opts.rootRank),
                                        comm_, request);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  constexpr const char* op_name = "allreduce";
  at::Tensor& t = single_tensor(op_name, tensors);
  const plx_red_op_t op = acquire_op(op_name, opts.reduceOp, t.scalar_type());
  auto work = submit(op_name, c10d::OpType::ALLREDUCE, false, {t}, {}, [&](plx_request_t* request) {
    return plx_iallreduce(t.data_ptr(), t.data_ptr(), count_of(t), dtype(op_name, t), op, comm_,
                          request);
  });
  release_op(op);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  constexpr const char* op_name = "allreduce_coalesced";
  if (tensors.empty()) fail(op_name, "no tensors");
  const at::ScalarType type = tensors[0].scalar_type();
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(op_name, tensors[i], ("tensors[" + std::to_string(i) + "]").c_str());
    if (tensors[i].scalar_type() != type) {
      fail(op_name, "tensors[" + std::to_string(i) + "] has dtype " +
                        c10::toString(tensors[i].scalar_type()) + ", expected " +
                        c10::toString(type) + " (all must share one dtype)");
    }
  }
  at::Tensor flat = flatten(tensors, type);
  const plx_red_op_t op = acquire_op(op_name, opts.reduceOp, type);
  auto work = submit(
      op_name, c10d::OpType::ALLREDUCE_COALESCED, false, tensors, {flat},
      [&](plx_request_t* request) {
        return plx_iallreduce(flat.data_ptr(), flat.data_ptr(), count_of(flat),
                              dtype(op_name, flat), op, comm_, request);
      },
      [flat, tensors]() mutable { unflatten(flat, tensors); });
  release_op(op);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  constexpr const char* op_name = "reduce";
  at::Tensor& t = single_tensor(op_name, tensors);
  check_rank(op_name, opts.rootRank, getSize(), "root");
  if (opts.rootTensor != 0) fail(op_name, "root tensor index must be 0");
  const plx_red_op_t op = acquire_op(op_name, opts.reduceOp, t.scalar_type());
  const bool root = opts.rootRank == getRank();
  auto work = submit(op_name, c10d::OpType::REDUCE, false, {t}, {}, [&](plx_request_t* request) {
    // Only the root's tensor receives the result; the others' are left as they are.
    return plx_ireduce(t.data_ptr(), root ? t.data_ptr() : nullptr, count_of(t),
                       dtype(op_name, t), op, static_cast<int>(opts.rootRank), comm_, request);
  });
  release_op(op);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  constexpr const char* op_name = "allgather";
  at::Tensor& in = single_tensor(op_name, inputs);
  if (outputs.size() != 1) fail(op_name, "takes exactly one output list per rank");
  std::vector<at::Tensor>& out = outputs[0];
  if (static_cast<int>(out.size()) != getSize()) {
    fail(op_name, "output list has " + std::to_string(out.size()) +
                      " tensors, expected the group size " + std::to_string(getSize()));
  }
  check_same(op_name, out, in.scalar_type(), in.numel(), "output_tensor_list");
  at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
  return submit(
      op_name, c10d::OpType::ALLGATHER, false, out, {in},
      [&](plx_request_t* request) {
        return plx_iallgather(in.data_ptr(), flat.data_ptr(), count_of(in), dtype(op_name, in),
                              comm_, request);
      },
      [flat, out]() mutable { unflatten(flat, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  constexpr const char* op_name = "_allgather_base";
  check_tensor(op_name, input, "input tensor");
  check_tensor(op_name, output, "output tensor");
  check_like(op_name, output, input.scalar_type(), input.numel() * getSize(),
             "output tensor");
  return submit(op_name, c10d::OpType::_ALLGATHER_BASE, false, {output}, {input},
                [&](plx_request_t* request) {
                  return plx_iallgather(input.data_ptr(), output.data_ptr(), count_of(input),
                                        dtype(op_name, input), comm_, request);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  constexpr const char* op_name = "allgather_coalesced";
  if (inputs.empty()) fail(op_name, "no input tensors");
  if (static_cast<int>(output_lists.size()) != getSize()) {
    fail(op_name, "has " + std::to_string(output_lists.size()) +
                      " output lists, expected the group size " + std::to_string(getSize()));
  }
  const at::ScalarType type = inputs[0].scalar_type();
  std::vector<at::Tensor> outputs;  // rank by rank, input by input: the gathered order
  for (const std::vector<at::Tensor>& list : output_lists) {
    if (list.size() != inputs.size()) {
      fail(op_name, "an output list has " + std::to_string(list.size()) + " tensors, expected " +
                        std::to_string(inputs.size()) + " (one per input)");
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      check_like(op_name, inputs[i], type, inputs[i].numel(),
                 "input_tensor_list[" + std::to_string(i) + "]");
      check_like(op_name, list[i], type, inputs[i].numel(),
                 "output_tensor_lists[r][" + std::to_string(i) + "]");
      outputs.push_back(list[i]);
    }
  }
  at::Tensor flat_in = flatten(inputs, type);
  at::Tensor flat_out = at::empty({flat_in.numel() * getSize()}, flat_in.options());
  return submit(
      op_name, c10d::OpType::ALLGATHER_COALESCED, false, outputs, {flat_in},
      [&](plx_request_t* request) {
        return plx_iallgather(flat_in.data_ptr(), flat_out.data_ptr(), count_of(flat_in),
                              dtype(op_name, flat_in), comm_, request);
      },
      [flat_out, outputs]() mutable { unflatten(flat_out, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  constexpr const char* op_name = "gather";
  at::Tensor& in = single_tensor(op_name, inputs);
  check_rank(op_name, opts.rootRank, getSize(), "root");
  const int root = static_cast<int>(opts.rootRank);
  if (root != getRank()) {
    if (!outputs.empty() && !outputs[0].empty()) {
      fail(op_name, "only the root (rank " + std::to_string(root) + ") takes a gather list");
    }
    return submit(op_name, c10d::OpType::GATHER, false, {}, {in}, [&](plx_request_t* request) {
      return plx_igather(in.data_ptr(), nullptr, count_of(in), dtype(op_name, in), root, comm_,
                         request);
    });
  }
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize()) {
    fail(op_name, "the root's gather list must hold the group size " +
                      std::to_string(getSize()) + " of tensors");
  }
  std::vector<at::Tensor>& out = outputs[0];
  check_same(op_name, out, in.scalar_type(), in.numel(), "gather_list");
  at::Tensor flat = at::empty({in.numel() * getSize()}, in.options());
  return submit(
      op_name, c10d::OpType::GATHER, false, out, {in},
      [&](plx_request_t* request) {
        return plx_igather(in.data_ptr(), flat.data_ptr(), count_of(in), dtype(op_name, in), root,
                           comm_, request);
      },
      [flat, out]() mutable { unflatten(flat, out); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  constexpr const char* op_name = "scatter";
  at::Tensor& out = single_tensor(op_name, outputs);
  check_rank(op_name, opts.rootRank, getSize(), "root");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;  // the root's blocks, end to end
  if (root == getRank()) {
    if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
      fail(op_name, "the root's scatter list must hold the group size " +
                        std::to_string(getSize()) + " of tensors");
    }
    check_same(op_name, inputs[0], out.scalar_type(), out.numel(), "scatter_list");
    flat = flatten(inputs[0], out.scalar_type());
  } else if (!inputs.empty() && !inputs[0].empty()) {
    fail(op_name, "only the root (rank " + std::to_string(root) + ") takes a scatter list");
  }
  std::vector<at::Tensor> reads;
  if (flat.defined()) reads.push_back(flat);
  return submit(op_name, c10d::OpType::SCATTER, false, {out}, reads, [&](plx_request_t* request) {
    return plx_iscatter(flat.defined() ? flat.data_ptr() : nullptr, out.data_ptr(), count_of(out),
                        dtype(op_name, out), root, comm_, request);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  constexpr const char* op_name = "reduce_scatter";
  at::Tensor& out = single_tensor(op_name, outputs);
  if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
    fail(op_name, "the input list must hold the group size " + std::to_string(getSize()) +
                      " of tensors");
  }
  check_same(op_name, inputs[0], out.scalar_type(), out.numel(), "input_list");
  at::Tensor flat = flatten(inputs[0], out.scalar_type());
  const plx_red_op_t op = acquire_op(op_name, opts.reduceOp, out.scalar_type());
  auto work = submit(op_name, c10d::OpType::REDUCE_SCATTER, false, {out}, {flat},
                     [&](plx_request_t* request) {
                       return plx_ireduce_scatter(flat.data_ptr(), out.data_ptr(), count_of(out),
                                                  dtype(op_name, out), op, comm_, request);
                     });
  release_op(op);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  constexpr const char* op_name = "_reduce_scatter_base";
  check_tensor(op_name, input, "input tensor");
  check_tensor(op_name, output, "output tensor");
  check_like(op_name, input, output.scalar_type(), output.numel() * getSize(),
             "input tensor");
  const plx_red_op_t op = acquire_op(op_name, opts.reduceOp, output.scalar_type());
  auto work = submit(op_name, c10d::OpType::_REDUCE_SCATTER_BASE, false, {output}, {input},
                     [&](plx_request_t* request) {
                       return plx_ireduce_scatter(input.data_ptr(), output.data_ptr(),
                                                  count_of(output), dtype(op_name, output), op,
                                                  comm_, request);
                     });
  release_op(op);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  constexpr const char* op_name = "alltoall_base";
  check_tensor(op_name, input, "input tensor");
  check_tensor(op_name, output, "output tensor");
  if (output.scalar_type() != input.scalar_type()) {
    fail(op_name, std::string("output dtype ") + c10::toString(output.scalar_type()) +
                      " differs from the input's " + c10::toString(input.scalar_type()));
  }
  const plx_datatype_t type = dtype(op_name, input);
  if (output_split_sizes.empty() && input_split_sizes.empty()) {
    if (input.numel() != output.numel() || input.numel() % getSize() != 0) {
      fail(op_name, "input and output must have the same number of elements, divisible by the "
                    "group size " + std::to_string(getSize()) + " (input " +
                        std::to_string(input.numel()) + ", output " +
                        std::to_string(output.numel()) + ")");
    }
    at::Tensor send = overlaps(input, output) ? input.clone() : input;
    return submit(op_name, c10d::OpType::ALLTOALL_BASE, false, {output}, {send},
                  [&](plx_request_t* request) {
                    return plx_ialltoall(send.data_ptr(), output.data_ptr(),
                                         count_of(input) / static_cast<size_t>(getSize()), type,
                                         comm_, request);
                  });
  }
  auto layout = std::make_shared<std::array<std::vector<size_t>, 4>>();
  auto& [sendcounts, sdispls, recvcounts, rdispls] = *layout;
  alltoall_layout(op_name, input, input_split_sizes, getSize(), "input", &sendcounts, &sdispls);
  alltoall_layout(op_name, output, output_split_sizes, getSize(), "output", &recvcounts, &rdispls);
  // Plexus's alltoallv is never in place: send from a copy when the two share memory (the same
  // tensor, or views of one storage).
  at::Tensor send = overlaps(input, output) ? input.clone() : input;
  return submit(
      op_name, c10d::OpType::ALLTOALL_BASE, false, {output}, {send},
      [&](plx_request_t* request) {
        return plx_ialltoallv(send.data_ptr(), sendcounts.data(), sdispls.data(),
                              output.data_ptr(), recvcounts.data(), rdispls.data(), type, comm_,
                              request);
      },
      [layout]() {});  // Plexus reads the counts until the call is done
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  constexpr const char* op_name = "alltoall";
  if (static_cast<int>(inputs.size()) != getSize() ||
      static_cast<int>(outputs.size()) != getSize()) {
    fail(op_name, "input and output lists must each hold the group size " +
                      std::to_string(getSize()) + " of tensors (got " +
                      std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()) +
                      ")");
  }
  const at::ScalarType type = inputs[0].scalar_type();
  datatype_of(op_name, type);
  auto layout = std::make_shared<std::array<std::vector<size_t>, 4>>();
  auto& [sendcounts, sdispls, recvcounts, rdispls] = *layout;
  size_t send_offset = 0, recv_offset = 0;
  for (int j = 0; j < getSize(); ++j) {
    check_like(op_name, inputs[j], type, inputs[j].numel(),
               "input_tensor_list[" + std::to_string(j) + "]");
    check_like(op_name, outputs[j], type, outputs[j].numel(),
               "output_tensor_list[" + std::to_string(j) + "]");
    sendcounts.push_back(count_of(inputs[j]));
    sdispls.push_back(send_offset);
    send_offset += count_of(inputs[j]);
    recvcounts.push_back(count_of(outputs[j]));
    rdispls.push_back(recv_offset);
    recv_offset += count_of(outputs[j]);
  }
  at::Tensor flat_in = flatten(inputs, type);
  at::Tensor flat_out = at::empty({static_cast<int64_t>(recv_offset)}, flat_in.options());
  return submit(
      op_name, c10d::OpType::ALLTOALL, false, outputs, {flat_in},
      [&](plx_request_t* request) {
        return plx_ialltoallv(flat_in.data_ptr(), sendcounts.data(), sdispls.data(),
                              flat_out.data_ptr(), recvcounts.data(), rdispls.data(),
                              datatype_of(op_name, type), comm_, request);
      },
      [flat_out, outputs, layout]() mutable { unflatten(flat_out, outputs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  constexpr const char* op_name = "send";
  std::vector<at::Tensor> real = real_views(tensors);
  at::Tensor& t = single_tensor(op_name, real);
  check_rank(op_name, dst_rank, getSize(), "destination rank");
  return submit(op_name, c10d::OpType::SEND, true, {}, {t}, [&](plx_request_t* request) {
    return plx_isend(t.data_ptr(), count_of(t), dtype(op_name, t), dst_rank, comm_, request);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  constexpr const char* op_name = "recv";
  std::vector<at::Tensor> real = real_views(tensors);
  at::Tensor& t = single_tensor(op_name, real);
  check_rank(op_name, src_rank, getSize(), "source rank");
  return submit(op_name, c10d::OpType::RECV, true, {tensors[0]}, {}, [&](plx_request_t* request) {
    return plx_irecv(t.data_ptr(), count_of(t), dtype(op_name, t), src_rank, comm_, request);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  fail("recv", "receiving from any source (src=None) is not supported: Plexus, as NCCL, "
               "matches each receive with a named source rank");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPlexus::barrier(const c10d::BarrierOptions& opts) {
  constexpr const char* op_name = "barrier";
  return submit(op_name, c10d::OpType::BARRIER, false, {}, {}, [&](plx_request_t* request) {
    return plx_ibarrier(comm_, request);
  });
}

}  // namespace plexus::torch_backend
