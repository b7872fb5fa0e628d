// i8 (int8) weights times int8 activations, portable C++: scalar/q8_linear_scalar.h over I8Codes;
// and this ISA's quantise_activations (kernels.h), whose rows every int8-activation kernel of the
// ISA reads.
#include "kernels/scalar/q8_linear_scalar.h"

namespace webattention::kernels {

void i8q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  scalar_q8::linear_panels<scalar_q8::I8Codes>(x, rows, x_stride, targets, target_count);
}

void i8q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  q8_panels(q, targets, target_count, scalar_q8::panel_rows<scalar_q8::I8Codes>);
}

void quantise_activations(const float* x, int rows, std::ptrdiff_t x_stride, int in, Q8Rows& q) noexcept {
  scalar_q8::quantise_rows(x, rows, x_stride, in, q);
}

}  // namespace webattention::kernels
