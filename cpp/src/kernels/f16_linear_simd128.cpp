// f16 projection kernel, WebAssembly SIMD128: linear_simd128.h over F16Panel (panels_simd128.h),
// or F16WeightPanel when no weight is Inf or NaN (PackedLinear::finite), almost always; a decode
// step's single row over finite weights reads them in pairs (F16PairPanel), x scaled by 2^112
// (2^102 for weights stored rebiased, PackedLinear::f16_rebias).
#include "kernels/simd128/linear_simd128.h"

namespace webattention::kernels {

void f16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  bool finite = true;
  for (int t = 0; t < target_count; ++t) finite = finite && targets[t].weights->finite;
  if (finite) {
    if (rows == 1 && simd128_linear::one_row_pairs<F16PairPanel>(x, targets, target_count)) return;
    simd128_linear::linear_panels<F16WeightPanel>(x, rows, x_stride, targets, target_count);
  } else {
    simd128_linear::linear_panels<F16Panel>(x, rows, x_stride, targets, target_count);
  }
}

}  // namespace webattention::kernels
