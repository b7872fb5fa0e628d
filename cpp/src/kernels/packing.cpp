// Weight packing shared by every projection kernel.
#include "kernels/kernels.h"

namespace webattention::kernels {

PackedLinear pack_linear(const float* weight, int out, int in) {
  PackedLinear w;
  w.in = in;
  w.out = out;
  w.panels.assign(static_cast<std::size_t>(w.panel_count()) * in * kPanelWidth, 0.0f);
  for (int n = 0; n < out; ++n) {
    float* panel = w.panels.data() + static_cast<std::size_t>(n / kPanelWidth) * in * kPanelWidth;
    for (int k = 0; k < in; ++k)
      panel[static_cast<std::size_t>(k) * kPanelWidth + n % kPanelWidth] = weight[static_cast<std::size_t>(n) * in + k];
  }
  return w;
}

}  // namespace webattention::kernels
