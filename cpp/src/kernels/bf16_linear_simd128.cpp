// bf16 projection kernel, WebAssembly SIMD128: linear_simd128.h over BF16Panel (panels_simd128.h);
// a decode step's single row reads the weights in pairs (BF16PairPanel).
#include "kernels/simd128/linear_simd128.h"

void webattention::kernels::bf16_linear(const float* x, int rows, std::ptrdiff_t x_stride,
                                        const LinearTarget* targets, int target_count) noexcept {
  simd128_linear::pairs_or_panels<BF16Panel, BF16PairPanel>(x, rows, x_stride, targets, target_count);
}
