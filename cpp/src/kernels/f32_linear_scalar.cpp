// Projection kernel, portable C++, over the packed panels: per row, per panel, an 8-wide
// accumulator the compiler can keep in registers or vectorise.
#include "kernels/kernels.h"

namespace webattention::kernels {

void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    for (int t = 0; t < target_count; ++t) {
      const PackedLinear& w = *targets[t].weights;
      float* yr = targets[t].y + r * targets[t].y_stride;
      for (int p = 0; p < w.panel_count(); ++p) {
        float acc[kPanelWidth] = {};
        const float* panel = w.panel(p);
        for (int k = 0; k < w.in; ++k) {
          const float a = xr[k];
          for (int c = 0; c < kPanelWidth; ++c) acc[c] += a * panel[k * kPanelWidth + c];
        }
        const int n0 = p * kPanelWidth;
        for (int c = 0; c < kPanelWidth && n0 + c < w.out; ++c)
          yr[n0 + c] = acc[c] + (w.bias.empty() ? 0.0f : w.bias[n0 + c]);
      }
    }
  }
}

}  // namespace webattention::kernels
