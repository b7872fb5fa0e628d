// bf16 projection kernel, WebAssembly SIMD128: linear_simd128.h over BF16Panel (panels_simd128.h).
#include "kernels/linear_simd128.h"

namespace webattention::kernels {

void bf16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  simd128_linear::linear_panels<BF16Panel>(x, rows, x_stride, targets, target_count);
}

}  // namespace webattention::kernels
