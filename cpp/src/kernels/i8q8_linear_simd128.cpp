// i8 (int8) weights times int8 activations, WebAssembly SIMD128: simd128/q8_linear_simd128.h over
// I8Codes, a decode step's panels in far groups (simd128/q8_panel_groups_simd128.h); and this
// ISA's quantise_activations (kernels.h), whose rows every int8-activation kernel of the ISA reads
// (the relaxed int4 one too).
#include "kernels/simd128/q8_panel_groups_simd128.h"

namespace webattention::kernels {

void i8q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  simd128_q8::linear_in_groups<simd128_q8::I8Codes>(x, rows, x_stride, targets, target_count);
}

void i8q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  simd128_q8::rows_in_groups<simd128_q8::I8Codes>(q, targets, target_count);
}

void quantise_activations(const float* x, int rows, std::ptrdiff_t x_stride, int in, Q8Rows& q) noexcept {
  simd128_q8::quantise_rows(x, rows, x_stride, in, q);
}

}  // namespace webattention::kernels
