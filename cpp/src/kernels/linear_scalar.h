// Projection kernel, portable C++ (native builds and the no-SIMD WASM module), written once for
// every storage type: per row, per panel, an 8-wide accumulator the compiler can keep in
// registers or vectorise, over a panel whose elements a Panel type reads as f32 (widened or
// dequantised by storage_convert.h's rules). Each <type>_linear_scalar.cpp instantiates it.
#pragma once

#include <climits>
#include <cstdint>

#include "kernels/kernels.h"

namespace webattention::kernels::scalar_linear {
namespace {

// Rows are read in blocks of kBlock input values; start(k0) is called at the first of each, and
// block_sum(part, c) turns column c's sum over the block into its share of the result (int8: times
// the block's scale, once per block instead of once per weight).
template <class T>
struct PlainPanel {  // f32, f16, bf16: one element, one value
  static constexpr int kBlock = INT_MAX / 2;
  const T* p;
  PlainPanel(const PackedLinear& w, int panel) : p(w.elements<const T>().panel(panel)) {}
  void start(int) {}
  const T& at(int k, int c) const { return p[k * kPanelWidth + c]; }
  float block_sum(float part, int) const { return part; }
};

struct F32Panel : PlainPanel<float> {
  using PlainPanel::PlainPanel;
  float at(int k, int c) const { return PlainPanel::at(k, c); }
};
struct F16Panel : PlainPanel<std::uint16_t> {
  using PlainPanel::PlainPanel;
  float at(int k, int c) const { return storage::f16_to_f32(PlainPanel::at(k, c)); }
};
struct BF16Panel : PlainPanel<std::uint16_t> {
  using PlainPanel::PlainPanel;
  float at(int k, int c) const { return storage::bf16_to_f32(PlainPanel::at(k, c)); }
};
struct I8Panel {
  static constexpr int kBlock = storage::kQuantBlock;
  const std::int8_t* p;
  const float* scales;
  const float* block_scales = nullptr;
  I8Panel(const PackedLinear& w, int panel)
      : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  void start(int k0) { block_scales = scales + (k0 / kBlock) * kPanelWidth; }
  // q itself: the block's scale multiplies its sum once (block_sum), as the SIMD kernels do.
  float at(int k, int c) const { return static_cast<float>(p[k * kPanelWidth + c]); }
  float block_sum(float part, int c) const { return part * block_scales[c]; }
};

template <class Panel>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                   int target_count) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    for (int t = 0; t < target_count; ++t) {
      const PackedLinear& w = *targets[t].weights;
      float* yr = targets[t].y + r * targets[t].y_stride;
      for (int p = 0; p < w.panel_count(); ++p) {
        float acc[kPanelWidth] = {};
        Panel panel(w, p);
        for (int k0 = 0; k0 < w.in; k0 += Panel::kBlock) {
          panel.start(k0);
          const int k1 = w.in - k0 < Panel::kBlock ? w.in : k0 + Panel::kBlock;
          float part[kPanelWidth] = {};
          for (int k = k0; k < k1; ++k) {
            const float a = xr[k];
            for (int c = 0; c < kPanelWidth; ++c) part[c] += a * panel.at(k, c);
          }
          for (int c = 0; c < kPanelWidth; ++c) acc[c] += panel.block_sum(part[c], c);
        }
        const int n0 = p * kPanelWidth;
        for (int c = 0; c < kPanelWidth && n0 + c < w.out; ++c)
          yr[n0 + c] = acc[c] + (w.bias.empty() ? 0.0f : w.bias[n0 + c]);
      }
    }
  }
}

}  // namespace
}  // namespace webattention::kernels::scalar_linear
