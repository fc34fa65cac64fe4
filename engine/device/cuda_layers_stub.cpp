// cuda_layers_stub.cpp - cuda_layers.h in a build without CUDA: compute.h never
// selects cuda there, so reaching any of these is a bug, reported as
// std::logic_error.
#include <stdexcept>
#include <string>

#include "engine/device/cuda_layers.h"

namespace plexus::engine::cuda {
namespace {

[[noreturn]] void no_cuda(const char* function) {
  throw std::logic_error(std::string("plexus::engine::cuda::") + function +
                         ": this build has no CUDA (compute.h cannot select it)");
}

}  // namespace

void encoder_forward(float*, const int32_t*, const float*, const float*, int, int, int) {
  no_cuda("encoder_forward");
}
void encoder_backward(float*, float*, const float*, const int32_t*, int, int, int) {
  no_cuda("encoder_backward");
}
void layernorm_forward(float*, float*, float*, const float*, const float*, const float*, int, int,
                       int) {
  no_cuda("layernorm_forward");
}
void layernorm_backward(float*, float*, float*, const float*, const float*, const float*,
                        const float*, const float*, int, int, int) {
  no_cuda("layernorm_backward");
}
void matmul_forward(float*, const float*, const float*, const float*, int, int, int, int) {
  no_cuda("matmul_forward");
}
void matmul_backward(float*, float*, float*, const float*, const float*, const float*, int, int,
                     int, int) {
  no_cuda("matmul_backward");
}
void attention_forward(float*, float*, const float*, int, int, int, int) {
  no_cuda("attention_forward");
}
void attention_backward(float*, float*, const float*, const float*, const float*, int, int, int,
                        int) {
  no_cuda("attention_backward");
}
void gelu_forward(float*, const float*, size_t) { no_cuda("gelu_forward"); }
void gelu_backward(float*, const float*, const float*, size_t) { no_cuda("gelu_backward"); }
void residual_forward(float*, const float*, const float*, size_t) { no_cuda("residual_forward"); }
void residual_backward(float*, float*, const float*, size_t) { no_cuda("residual_backward"); }
size_t softmax_crossentropy_forward(float*, float*, const float*, const int32_t*, int, int, int) {
  no_cuda("softmax_crossentropy_forward");
}
void softmax_crossentropy_backward(float*, const float*, const int32_t*, float, int, int, int) {
  no_cuda("softmax_crossentropy_backward");
}
void adamw_step(float*, const float*, float*, float*, size_t, int64_t, float, float, float, float,
                float, const uint8_t*) {
  no_cuda("adamw_step");
}
double sum_squares(const float*, size_t) { no_cuda("sum_squares"); }
void scale(float*, size_t, float) { no_cuda("scale"); }
void fill(float*, size_t, float) { no_cuda("fill"); }
std::string use_device(int, bool) { return "this build has no CUDA"; }
void* alloc_managed(size_t) { no_cuda("alloc_managed"); }
void free_managed(void*) {}  // nothing was ever allocated
void synchronize() {}        // no stream

}  // namespace plexus::engine::cuda
