// Projection kernel, portable C++ (native builds and the no-SIMD WASM module), written once for
// every storage type: per panel, per row, an 8-wide accumulator the compiler can keep in
// registers or vectorise, over a panel whose elements a Panel type reads as f32 (f16 and bf16
// widened by storage_convert.h's rules, int8 as q and int4 as q - z with each block's sum times its scale; for more
// than one row, once per panel into an f32 copy). Each <type>_linear_scalar.cpp instantiates it.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/large_rows.h"

namespace webattention::kernels::scalar_linear {
namespace {

// Rows are read in blocks of kBlock input values; start(k0) is called at the first of each, and
// block_sum(part, c) turns column c's sum over the block into its share of the result (int8, int4: times
// the block's scale, once per block instead of once per weight).
template <class T>
struct PlainPanel {  // f32, f16, bf16: one element, one value
  static constexpr int kBlock = INT_MAX / 2;
  const T* p;
  PlainPanel(const PackedLinear& w, int panel) : p(w.elements<const T>().panel(panel)) {}
  explicit PlainPanel(const T* panel) : p(panel) {}
  void start(int) {}
  const T& at(int k, int c) const { return p[k * kPanelWidth + c]; }
  float block_sum(float part, int) const { return part; }
};

struct F32Panel : PlainPanel<float> {
  using PlainPanel::PlainPanel;
  float at(int k, int c) const { return PlainPanel::at(k, c); }
};
struct F16Panel : PlainPanel<std::uint16_t> {
  int rebias;  // PackedLinear::f16_rebias
  F16Panel(const PackedLinear& w, int panel) : PlainPanel(w, panel), rebias(w.f16_rebias) {}
  float at(int k, int c) const { return storage::rebiased_f16_to_f32(PlainPanel::at(k, c), rebias); }
};
struct BF16Panel : PlainPanel<std::uint16_t> {
  using PlainPanel::PlainPanel;
  float at(int k, int c) const { return storage::bf16_to_f32(PlainPanel::at(k, c)); }
};
// The quantised types' blocks: each block's sum times its column's scale, once per block instead
// of once per weight, as the SIMD kernels do.
struct BlockScaled {
  static constexpr int kBlock = storage::kQuantBlock;
  const float* scales;  // block 0's
  int scale_stride;     // floats from a block's scales to the next's
  const float* block_scales = nullptr;
  BlockScaled(const PackedLinear& w, int panel) : scales(w.block_scales(panel, 0)), scale_stride(w.scale_stride()) {}
  void start(int k0) { block_scales = scales + (k0 / kBlock) * scale_stride; }
  float block_sum(float part, int c) const { return part * block_scales[c]; }
};
struct I8Panel : BlockScaled {
  const std::int8_t* p;
  I8Panel(const PackedLinear& w, int panel)
      : BlockScaled(w, panel), p(w.elements<const std::int8_t>().panel(panel)) {}
  float at(int k, int c) const { return static_cast<float>(p[k * kPanelWidth + c]); }  // q itself
};
// int4: q - z, exact in f32, with the zero points of the block start() begins.
struct Q4Panel : BlockScaled {
  const std::uint8_t* codes;
  const std::uint32_t* zero_points;
  std::uint32_t block_zeros = 0;
  Q4Panel(const PackedLinear& w, int panel)
      : BlockScaled(w, panel), codes(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)) {}
  void start(int k0) {
    BlockScaled::start(k0);
    block_zeros = zero_points[k0 / kBlock];
  }
  float at(int k, int c) const {
    return static_cast<float>(storage::q4_code_at(codes, k, c) - storage::q4_code(block_zeros, c));
  }
};

// Panel p's elements as Panel reads them (f16 / bf16 widened, int8 q, int4 q - z as an f32) into out (w.in ×
// 8), to be read back through Widened<Panel>, which keeps Panel's block sums: a row gives the same
// bits alone (a decode step) or among others, so a narrow cache stores the same rows whatever the
// chunks a sequence comes in.
template <class Panel>
void widen_panel(const PackedLinear& w, int p, float* out) {
  Panel panel(w, p);
  for (int k = 0; k < w.in; ++k) {
    if (k % Panel::kBlock == 0) panel.start(k);
    for (int c = 0; c < kPanelWidth; ++c) out[k * kPanelWidth + c] = panel.at(k, c);
  }
}
template <class Panel>
struct Widened : Panel {
  const float* values;
  Widened(const PackedLinear& w, int panel, const float* widened) : Panel(w, panel), values(widened) {}
  float at(int k, int c) const { return values[k * kPanelWidth + c]; }
};

// yr[8p, 8p + 8) (those below w.out) = the row xr times panel p, times `up` (1, or kLargeUp for
// a large row scaled down: large_rows.h), plus the bias; by blocks of rows.
template <class Panel>
void row_times_panel(const float* xr, const PackedLinear& w, int p, Panel panel, float* yr, float up = 1.0f) {
  float acc[kPanelWidth] = {};
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
    yr[n0 + c] = acc[c] * up + (w.bias.empty() ? 0.0f : w.bias[n0 + c]);
}

// A large row (large_rows.h) times int8 or int4 weights: x · kLargeDown through row_times_panel,
// its sums times kLargeUp. A prefill and a decode step both send such a row here.
template <class Panel>
void large_row(const float* x, const LinearTarget* targets, int target_count) {
  int in = 0;
  for (int t = 0; t < target_count; ++t) in = std::max(in, targets[t].weights->in);
  std::vector<float> scaled(static_cast<std::size_t>(in));
  scale_down_row(x, in, scaled.data());
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    for (int p = targets[t].panel_begin; p < targets[t].panels_end(); ++p)
      row_times_panel(scaled.data(), w, p, Panel(w, p), targets[t].y, kLargeUp);
  }
}

// One row (a decode step) reads each panel as it is stored (int8: each block's sum times its
// scale); more rows widen each narrow panel once for all of them, as the SIMD128 kernel does
// (linear_simd128.h's panel_rows), with the same arithmetic.
template <class Panel>
void plain_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                  int target_count) {
  constexpr bool kWiden = !std::is_same_v<Panel, F32Panel>;
  std::vector<float> widened;
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    for (int p = targets[t].panel_begin; p < targets[t].panels_end(); ++p) {
      if (kWiden && rows > 1) {
        widened.resize(static_cast<std::size_t>(w.in) * kPanelWidth);
        widen_panel<Panel>(w, p, widened.data());
      }
      for (int r = 0; r < rows; ++r) {
        float* yr = targets[t].y + r * targets[t].y_stride;
        if (kWiden && rows > 1) {
          row_times_panel(x + r * x_stride, w, p, Widened<Panel>(w, p, widened.data()), yr);
        } else {
          row_times_panel(x + r * x_stride, w, p, Panel(w, p), yr);
        }
      }
    }
  }
}

// A type's whole kernel: plain_panels, but for int8 and int4, which multiply x by their codes
// (q, q - z) and scale each block's sum after it, a row holding a value past kLargeInput takes
// large_row (large_rows.h: the plain loop's sums would overflow where the float32 module's stay
// finite).
template <class Panel>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                   int target_count) {
  if constexpr (std::is_base_of_v<BlockScaled, Panel>) {
    linear_by_large_rows(x, rows, x_stride, targets, target_count, plain_panels<Panel>, large_row<Panel>);
  } else {
    plain_panels<Panel>(x, rows, x_stride, targets, target_count);
  }
}

}  // namespace
}  // namespace webattention::kernels::scalar_linear
