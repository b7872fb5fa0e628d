// The projection entry point: each run of targets of one storage type goes to that type's kernel
// (<type>_linear_<ISA>.cpp; a module's weights are all of one type, so one run).
#include "kernels/kernels.h"

namespace webattention::kernels {

void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept {
  for (int t = 0; t < target_count;) {
    const StorageType type = targets[t].weights->type;
    int end = t + 1;
    while (end < target_count && targets[end].weights->type == type) ++end;
    switch (type) {
      case StorageType::f32: f32_linear(x, rows, x_stride, targets + t, end - t); break;
      case StorageType::f16: f16_linear(x, rows, x_stride, targets + t, end - t); break;
      case StorageType::bf16: bf16_linear(x, rows, x_stride, targets + t, end - t); break;
      case StorageType::i8: i8_linear(x, rows, x_stride, targets + t, end - t); break;
      case StorageType::q4: q4_linear(x, rows, x_stride, targets + t, end - t); break;
    }
    t = end;
  }
}

}  // namespace webattention::kernels
