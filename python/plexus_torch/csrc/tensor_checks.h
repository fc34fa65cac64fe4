// tensor_checks.h - what the torch backend accepts, and how a torch tensor, dtype and reduce op
// become a Plexus buffer, datatype and op.
//
// Every check throws c10::Error (a Python RuntimeError) whose message names the torch operation
// and the reason, e.g. "plexus allreduce: tensor is not contiguous (call .contiguous() first)".
// The checks are local: a rank whose arguments fail them raises at once, before anything is sent.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::torch_backend {

// The Plexus datatype of `type`. Bool travels as PLX_UINT8 (0 or 1; see reduce_op). Throws for
// complex, quantized and the unsigned/float8 types Plexus has no kernel for.
plx_datatype_t datatype_of(const char* op_name, at::ScalarType type);

// A reduce op for `type`: SUM, AVG, PRODUCT, MIN, MAX as Plexus's; on bool, SUM and MAX are a
// logical or and PRODUCT and MIN a logical and (as gloo computes them), AVG is refused.
// PREMUL_SUM is resolved by the caller (premul_factor). BAND, BOR and BXOR are refused.
plx_red_op_t reduce_op(const char* op_name, const c10d::ReduceOp& op, at::ScalarType type);

// PREMUL_SUM's factor (torch.distributed._make_nccl_premul_sum): a double, or a one-element
// tensor per input. Throws when the supplement is missing or holds anything else.
double premul_factor(const char* op_name, const c10d::ReduceOp& op);

// The single tensor of a one-tensor-per-rank call ("tensors" holding exactly one), checked with
// check_tensor.
at::Tensor& single_tensor(const char* op_name, std::vector<at::Tensor>& tensors);

// A dense, contiguous CPU tensor of a supported dtype; `what` names it in the message.
void check_tensor(const char* op_name, const at::Tensor& tensor, const char* what);

// `t` of `type` and `numel` elements (a dense CPU tensor; contiguity not needed); `name` names
// it in the message.
void check_like(const char* op_name, const at::Tensor& t, at::ScalarType type, int64_t numel,
                const std::string& name);

// `tensors` all of `type` and `numel` elements (dense CPU tensors; contiguity not needed).
void check_same(const char* op_name, const std::vector<at::Tensor>& tensors, at::ScalarType type,
                int64_t numel, const char* what);

// A rank in 0..size-1 (a root or a peer), named `what` in the message.
void check_rank(const char* op_name, int64_t rank, int size, const char* what);

// "plexus <op>: <reason>" as a c10::Error.
[[noreturn]] void fail(const char* op_name, const std::string& reason);

}  // namespace plexus::torch_backend
