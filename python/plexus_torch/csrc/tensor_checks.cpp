// tensor_checks.cpp - see tensor_checks.h.
#include "tensor_checks.h"

#include <c10/util/Exception.h>

namespace plexus::torch_backend {

void fail(const char* op_name, const std::string& reason) {
  TORCH_CHECK(false, "plexus ", op_name, ": ", reason);
}

plx_datatype_t datatype_of(const char* op_name, at::ScalarType type) {
  switch (type) {
    case at::kFloat: return PLX_FLOAT32;
    case at::kDouble: return PLX_FLOAT64;
    case at::kHalf: return PLX_FLOAT16;
    case at::kBFloat16: return PLX_BFLOAT16;
    case at::kChar: return PLX_INT8;
    case at::kByte: return PLX_UINT8;
    case at::kBool: return PLX_UINT8;
    case at::kInt: return PLX_INT32;
    case at::kLong: return PLX_INT64;
    default:
      fail(op_name, std::string("dtype ") + c10::toString(type) +
                        " is not supported (float32, float64, float16, bfloat16, int8, uint8, "
                        "int32, int64 and bool are)");
  }
}

plx_red_op_t reduce_op(const char* op_name, const c10d::ReduceOp& op, at::ScalarType type) {
  const bool is_bool = type == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return is_bool ? PLX_MAX : PLX_SUM;
    case c10d::ReduceOp::PRODUCT: return is_bool ? PLX_MIN : PLX_PROD;
    case c10d::ReduceOp::MIN: return PLX_MIN;
    case c10d::ReduceOp::MAX: return PLX_MAX;
    case c10d::ReduceOp::AVG:
      if (is_bool) fail(op_name, "ReduceOp.AVG is not defined on bool tensors");
      return PLX_AVG;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      fail(op_name, "bitwise reduce ops (BAND, BOR, BXOR) are not supported");
    default:
      fail(op_name, "reduce op " + std::to_string(static_cast<int>(op.op_)) + " is not supported");
  }
}

double premul_factor(const char* op_name, const c10d::ReduceOp& op) {
  const auto* supplement =
      dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (supplement == nullptr) fail(op_name, "PREMUL_SUM without its factor");
  if (supplement->tensor_factors.empty()) return supplement->double_factor;
  const at::Tensor& factor = supplement->tensor_factors.front();
  if (factor.numel() != 1 || !factor.device().is_cpu()) {
    fail(op_name, "PREMUL_SUM's factor must be a one-element CPU tensor");
  }
  return factor.item<double>();
}

void check_tensor(const char* op_name, const at::Tensor& tensor, const char* what) {
  if (!tensor.defined()) fail(op_name, std::string(what) + " is undefined");
  if (!tensor.device().is_cpu()) {
    fail(op_name, std::string(what) + " is on " + tensor.device().str() +
                      "; this build of plexus_torch takes CPU tensors only");
  }
  if (tensor.layout() != at::kStrided) {
    fail(op_name, std::string(what) + " is sparse; only dense tensors are supported");
  }
  if (!tensor.is_contiguous()) {
    fail(op_name, std::string(what) + " is not contiguous (call .contiguous() first)");
  }
  datatype_of(op_name, tensor.scalar_type());
}

at::Tensor& single_tensor(const char* op_name, std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 1) {
    fail(op_name, "takes exactly one tensor per rank (got " + std::to_string(tensors.size()) +
                      "); multi-device tensor lists are not supported");
  }
  check_tensor(op_name, tensors[0], "tensor");
  return tensors[0];
}

void check_like(const char* op_name, const at::Tensor& t, at::ScalarType type, int64_t numel,
                const std::string& name) {
  if (!t.defined()) fail(op_name, name + " is undefined");
  if (!t.device().is_cpu() || t.layout() != at::kStrided) {
    fail(op_name, name + " must be a dense CPU tensor");
  }
  if (t.scalar_type() != type) {
    fail(op_name, name + " has dtype " + c10::toString(t.scalar_type()) + ", expected " +
                      c10::toString(type));
  }
  if (t.numel() != numel) {
    fail(op_name, name + " has " + std::to_string(t.numel()) + " elements, expected " +
                      std::to_string(numel));
  }
}

void check_same(const char* op_name, const std::vector<at::Tensor>& tensors, at::ScalarType type,
                int64_t numel, const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_like(op_name, tensors[i], type, numel, std::string(what) + "[" + std::to_string(i) + "]");
  }
}

void check_rank(const char* op_name, int64_t rank, int size, const char* what) {
  if (rank < 0 || rank >= size) {
    fail(op_name, std::string(what) + " " + std::to_string(rank) + " not in 0.." +
                      std::to_string(size - 1));
  }
}

}  // namespace plexus::torch_backend
