// q4 (int4) weights times int8 activations, relaxed SIMD: simd128/q8_relaxed_pairs_simd128.h's
// panel groups over simd128/q8_relaxed_simd128.h's Q4RelaxedCodes (i16x8.relaxed_dot_i8x16_i7x16_s);
// the SIMD128 kernel's bits.
#include "kernels/simd128/q8_relaxed_pairs_simd128.h"

namespace webattention::kernels {

void q4q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  q8_linear_rows(x, rows, x_stride, targets, target_count, simd128_q8::quantise_rows, simd128_q8::q4_relaxed_panels);
}

void q4q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  simd128_q8::q4_relaxed_panels(q, targets, target_count);
}

}  // namespace webattention::kernels
