// f32 weight packing, shared by every f32 projection kernel: PyTorch's W [out, in] into the
// panel layout (kv_layout.h).
#include <algorithm>

#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

// Panel p: W rows [8p, 8p + 8) (output columns), written [in][8] with zero padding past `out`.
// One call per panel, never inlined: V8 swaps in optimised code between calls, never during one,
// so packing a large layer at load time leaves its slow first-tier code after a few panels.
__attribute__((noinline)) void pack_panel(const float* weight, int out, int in, int p,
                                          const PanelMatrix<float>& packed) {
  const int n0 = p * kPanelWidth;
  const int cols = std::min(kPanelWidth, out - n0);
  const float* rows[kPanelWidth];
  for (int c = 0; c < kPanelWidth; ++c)
    rows[c] = weight + static_cast<std::size_t>(n0 + std::min(c, cols - 1)) * in;
  for (int k = 0; k < in; ++k) {
    float* dst = &packed.at(n0, k);
    for (int c = 0; c < kPanelWidth; ++c) dst[c] = rows[c][k];
  }
  if (cols < kPanelWidth) {
    for (int k = 0; k < in; ++k)
      std::fill(&packed.at(out, k), &packed.at(n0, k) + kPanelWidth, 0.0f);
  }
}

}  // namespace

PackedLinear pack_linear(const float* weight, int out, int in) {
  PackedLinear w;
  w.in = in;
  w.out = out;
  w.panels.reset(new float[static_cast<std::size_t>(whole_panels(out)) * in]);
  for (int p = 0; p < w.panel_count(); ++p) pack_panel(weight, out, in, p, w.matrix());
  return w;
}

}  // namespace webattention::kernels
