// Projection kernel, portable C++. The loop order (row, k, out) makes the inner loop an axpy over
// contiguous memory that compilers vectorise without reassociating sums.
#include <algorithm>

#include "kernels/kernels.h"

namespace webattention::kernels {

void linear(const float* x, int rows, int in, std::ptrdiff_t x_stride, const float* w_t,
            const float* bias, int out, float* y) noexcept {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + static_cast<std::ptrdiff_t>(r) * out;
    if (bias) {
      std::copy(bias, bias + out, yr);
    } else {
      std::fill(yr, yr + out, 0.0f);
    }
    for (int k = 0; k < in; ++k) {
      const float a = xr[k];
      const float* w = w_t + static_cast<std::ptrdiff_t>(k) * out;
      for (int n = 0; n < out; ++n) yr[n] += a * w[n];
    }
  }
}

}  // namespace webattention::kernels
