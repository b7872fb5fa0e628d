// q4 (int4) projection kernel, WebAssembly SIMD128: linear_simd128.h over Q4Panel
// (pair_panels_simd128.h), a decode step's single row over Q4PairPanel, the same reader in even /
// odd column order, each block's sums scaled once.
#include "kernels/simd128/linear_simd128.h"

void webattention::kernels::q4_linear(const float* x, int rows, std::ptrdiff_t x_stride,
                                      const LinearTarget* targets, int target_count) noexcept {
  simd128_linear::pairs_or_panels<Q4Panel, Q4PairPanel>(x, rows, x_stride, targets, target_count);
}
