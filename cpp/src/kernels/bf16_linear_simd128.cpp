// bf16 projection kernel, WebAssembly SIMD128: linear_simd128.h over BF16Panel (panels_simd128.h);
// a decode step's single row reads the weights in pairs (BF16PairPanel).
#include "kernels/simd128/linear_simd128.h"

namespace webattention::kernels {

void bf16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  if (rows == 1 && simd128_linear::one_row_pairs<BF16PairPanel>(x, targets, target_count)) return;
  simd128_linear::linear_panels<BF16Panel>(x, rows, x_stride, targets, target_count);
}

}  // namespace webattention::kernels
