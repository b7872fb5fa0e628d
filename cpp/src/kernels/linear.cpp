// The projection entry point: each run of targets of one storage type goes to that type's kernel
// (<type>_linear_<ISA>.cpp; with int8 activations <type>q8_linear_<ISA>.cpp; a module's weights
// are all of one type, so one run). linear_quantised: the int8-activation kernels over rows
// quantised already.
#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

using Kernel = void (*)(const float*, int, std::ptrdiff_t, const LinearTarget*, int) noexcept;
using RowsKernel = void (*)(const Q8Rows&, const LinearTarget*, int) noexcept;

// An int8-activation layer's kernel, from x (Kernel) or from rows quantised already (RowsKernel).
template <class K>
K act8_kernel(const PackedLinear& w, K int8, K int4) {
  return w.type == StorageType::q4 ? int4 : int8;
}

Kernel kernel_for(const PackedLinear& w) {
  if (w.quantises_input()) return act8_kernel<Kernel>(w, i8q8_linear, q4q8_linear);
  switch (w.type) {
    case StorageType::f32: return f32_linear;
    case StorageType::f16: return f16_linear;
    case StorageType::bf16: return bf16_linear;
    case StorageType::i8: return i8_linear;
    case StorageType::q4: return q4_linear;
  }
  return f32_linear;
}

RowsKernel rows_kernel_for(const PackedLinear& w) { return act8_kernel<RowsKernel>(w, i8q8_linear_rows, q4q8_linear_rows); }

// run(kernel, first, count) for each run of consecutive targets that kernel_of gives one kernel.
template <class KernelOf, class Run>
void each_run(const LinearTarget* targets, int target_count, KernelOf&& kernel_of, Run&& run) {
  for (int t = 0; t < target_count;) {
    const auto kernel = kernel_of(*targets[t].weights);
    int end = t + 1;
    while (end < target_count && kernel_of(*targets[end].weights) == kernel) ++end;
    run(kernel, targets + t, end - t);
    t = end;
  }
}

}  // namespace

void linear_quantised(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  each_run(targets, target_count, rows_kernel_for,
           [&](RowsKernel kernel, const LinearTarget* run, int count) { kernel(q, run, count); });
}

void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept {
  each_run(targets, target_count, kernel_for,
           [&](Kernel kernel, const LinearTarget* run, int count) { kernel(x, rows, x_stride, run, count); });
}

}  // namespace webattention::kernels
