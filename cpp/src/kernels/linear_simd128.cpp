// Projection kernel, WebAssembly SIMD128: one Block4x8 of accumulators per 4 input rows ×
// 8 output columns, streaming one packed panel.
#include <wasm_simd128.h>

#include <algorithm>

#include "kernels/block_simd128.h"
#include "kernels/kernels.h"

namespace webattention::kernels {
namespace {

constexpr int kRows = 4;

// y[0..rows)[n0..n0+8) = x rows · panel (+ bias), rows <= 4; x_rows[r] point at the input rows.
inline void block_4x8(const float* const x_rows[kRows], int rows, int in, const float* panel,
                      const float* bias, int n0, int out, float* y, std::ptrdiff_t y_stride) {
  v128_t b0 = wasm_f32x4_splat(0.0f), b1 = b0;
  if (bias) {
    alignas(16) float padded[kPanelWidth] = {};
    for (int c = 0; c < kPanelWidth && n0 + c < out; ++c) padded[c] = bias[n0 + c];
    b0 = wasm_v128_load(padded);
    b1 = wasm_v128_load(padded + 4);
  }
  Block4x8 acc = Block4x8::filled(b0, b1);
  const float* x0 = x_rows[0];
  const float* x1 = x_rows[1];
  const float* x2 = x_rows[2];
  const float* x3 = x_rows[3];
  for (int k = 0; k < in; ++k) {
    acc.madd(x0[k], x1[k], x2[k], x3[k], wasm_v128_load(panel + k * kPanelWidth),
             wasm_v128_load(panel + k * kPanelWidth + 4));
  }
  const int cols = std::min(kPanelWidth, out - n0);
  for (int r = 0; r < rows; ++r) {
    float* yr = y + r * y_stride + n0;
    if (cols == kPanelWidth) {
      acc.store_row(r, yr);
    } else {
      alignas(16) float tmp[kPanelWidth];
      acc.store_row(r, tmp);
      std::copy(tmp, tmp + cols, yr);
    }
  }
}

}  // namespace

void linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
            int target_count) noexcept {
  // Cache blocking: a block of input rows (<= ~192 KiB) stays in L2 while every weight panel
  // streams past it once; each panel (in × 8 floats) stays in L1 across the block's rows.
  const int in = target_count ? targets[0].weights->in : 0;
  const int row_block = std::max(kRows, std::min(256, (48 * 1024 / std::max(in, 1)) / kRows * kRows));
  for (int rb = 0; rb < rows; rb += row_block) {
    const int rb_rows = std::min(row_block, rows - rb);
    for (int t = 0; t < target_count; ++t) {
      const PackedLinear& w = *targets[t].weights;
      const float* bias = w.bias.empty() ? nullptr : w.bias.data();
      for (int p = 0; p < w.panel_count(); ++p) {
        for (int r0 = rb; r0 < rb + rb_rows; r0 += kRows) {
          const int block_rows = std::min(kRows, rb + rb_rows - r0);
          const float* x_rows[kRows];
          // A short last block repeats its last row; only block_rows rows are stored.
          for (int r = 0; r < kRows; ++r) x_rows[r] = x + (r0 + std::min(r, block_rows - 1)) * x_stride;
          block_4x8(x_rows, block_rows, w.in, w.panel(p), bias, p * kPanelWidth, w.out,
                    targets[t].y + r0 * targets[t].y_stride, targets[t].y_stride);
        }
      }
    }
  }
}

}  // namespace webattention::kernels
