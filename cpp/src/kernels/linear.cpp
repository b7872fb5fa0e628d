// The projection entry point: each run of targets of one storage type goes to that type's kernel
// (<type>_linear_<ISA>.cpp; with int8 activations <type>q8_linear_<ISA>.cpp; a module's weights
// are all of one type, so one run). linear_quantised: the int8-activation kernels over rows
// quantised already.
#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

using Kernel = void (*)(const float*, int, std::ptrdiff_t, const LinearTarget*, int) noexcept;

Kernel kernel_for(const PackedLinear& w) {
  if (w.quantises_input()) return w.type == StorageType::i8 ? i8q8_linear : q4q8_linear;
  switch (w.type) {
    case StorageType::f32: return f32_linear;
    case StorageType::f16: return f16_linear;
    case StorageType::bf16: return bf16_linear;
    case StorageType::i8: return i8_linear;
    case StorageType::q4: return q4_linear;
  }
  return f32_linear;
}

}  // namespace

void linear_quantised(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  for (int t = 0; t < target_count;) {
    const bool int4 = targets[t].weights->type == StorageType::q4;
    int end = t + 1;
    while (end < target_count && (targets[end].weights->type == StorageType::q4) == int4) ++end;
    (int4 ? q4q8_linear_rows : i8q8_linear_rows)(q, targets + t, end - t);
    t = end;
  }
}

void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept {
  for (int t = 0; t < target_count;) {
    const Kernel kernel = kernel_for(*targets[t].weights);
    int end = t + 1;
    while (end < target_count && kernel_for(*targets[end].weights) == kernel) ++end;
    kernel(x, rows, x_stride, targets + t, end - t);
    t = end;
  }
}

}  // namespace webattention::kernels
