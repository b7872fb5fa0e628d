// q4 (int4) weights times int8 activations, WebAssembly SIMD128: simd128/q4_codes_simd128.h's Q4Codes,
// a decode step's panels in far groups, their groups interleaved (simd128/q8_panel_groups_simd128.h).
#include "kernels/simd128/q8_panel_groups_simd128.h"

namespace webattention::kernels {

void q4q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  simd128_q8::linear_in_groups<simd128_q8::Q4Codes, simd128_q8::Q4GroupsInTurn>(x, rows, x_stride, targets, target_count);
}

void q4q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  simd128_q8::rows_in_groups<simd128_q8::Q4Codes, simd128_q8::Q4GroupsInTurn>(q, targets, target_count);
}

}  // namespace webattention::kernels
