// i8 projection kernel, WebAssembly SIMD128: linear_simd128.h over I8Panel (panels_simd128.h); a
// decode step's single row reads the weights in pairs and scales each block's sum once
// (I8PairPanel).
#include "kernels/simd128/linear_simd128.h"

void webattention::kernels::i8_linear(const float* x, int rows, std::ptrdiff_t x_stride,
                                      const LinearTarget* targets, int target_count) noexcept {
  simd128_linear::pairs_or_panels<I8Panel, I8PairPanel>(x, rows, x_stride, targets, target_count);
}
