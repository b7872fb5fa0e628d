// Projection kernel for int8 activations, portable C++ (native builds and the no-SIMD WASM module):
// q8_rows.h's rule, per panel, per row, per block an int32 dot product for each of the panel's 8
// columns. A Codes type reads the weights: code(k, c), its block's zero(c) (int8: 0) and scale(c).
// i8q8_linear_scalar.cpp and q4q8_linear_scalar.cpp instantiate it.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/q8_rows.h"

namespace webattention::kernels::scalar_q8 {
namespace {

struct I8Codes {
  const std::int8_t* p;
  const float* scales;  // block 0's
  int scale_stride;     // PackedLinear::scale_stride
  const float* block_scales = nullptr;
  I8Codes(const PackedLinear& w, int panel) : p(w.i8_pair_panel(panel)), scales(w.block_scales(panel, 0)), scale_stride(w.scale_stride()) {}
  void start(int b) { block_scales = scales + b * scale_stride; }
  int code(int k, int c) const { return p[storage::i8_pair_byte(k, c)]; }  // row pairs (i8_row_pairs)
  int zero(int) const { return 0; }
  float scale(int c) const { return block_scales[c]; }
};

struct Q4Codes {
  const std::uint8_t* codes;
  const std::uint32_t* zero_points;
  const float* scales;  // block 0's
  int scale_stride;     // PackedLinear::scale_stride
  std::uint32_t block_zeros = 0;
  const float* block_scales = nullptr;
  Q4Codes(const PackedLinear& w, int panel)
      : codes(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)), scales(w.block_scales(panel, 0)), scale_stride(w.scale_stride()) {}
  void start(int b) {
    block_zeros = zero_points[b];
    block_scales = scales + b * scale_stride;
  }
  int code(int k, int c) const { return storage::q4_code_at(codes, k, c); }
  int zero(int c) const { return storage::q4_code(block_zeros, c); }
  float scale(int c) const { return block_scales[c]; }
};

// yr[8p, 8p + 8) (those below w.out) = quantised row r of q times panel p (+ bias).
template <class Codes>
void row_times_panel(const Q8Rows& q, int r, const PackedLinear& w, int p, float* yr) {
  Codes codes(w, p);
  const std::int8_t* xq = q.row(r);
  const float* dx = q.row_scales(r);
  float acc[kPanelWidth] = {};
  for (int b = 0; b < q.blocks; ++b) {
    codes.start(b);
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    std::int32_t dot[kPanelWidth] = {};
    for (int k = k0; k < k1; ++k) {
      for (int c = 0; c < kPanelWidth; ++c) dot[c] += (codes.code(k, c) - codes.zero(c)) * xq[k];
    }
    for (int c = 0; c < kPanelWidth; ++c) {
      const float scale = codes.scale(c) * dx[b];
      const float term = scale * static_cast<float>(dot[c]);
      acc[c] += term;
    }
  }
  const int n0 = p * kPanelWidth;
  for (int c = 0; c < kPanelWidth && n0 + c < w.out; ++c) {
    yr[n0 + c] = acc[c] + (w.bias.empty() ? 0.0f : w.bias[n0 + c]);
  }
}

// Every row of q times panel p.
template <class Codes>
void panel_rows(const Q8Rows& q, const PackedLinear& w, int p, float* y, std::ptrdiff_t y_stride) {
  for (int r = 0; r < q.rows; ++r) row_times_panel<Codes>(q, r, w, p, y + r * y_stride);
}

// This ISA's quantised rows: the codes alone.
inline void quantise_rows(const float* x, int rows, std::ptrdiff_t x_stride, int in, Q8Rows& q) {
  q.quantise(x, rows, x_stride, in, Widening::none);
}

template <class Codes>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) {
  q8_linear_panels(x, rows, x_stride, targets, target_count, quantise_rows, panel_rows<Codes>);
}

}  // namespace
}  // namespace webattention::kernels::scalar_q8
