// Projection inputs under activations 'int8' (docs/attention-math/storage.md §11), for every ISA's
// integer kernels (<type>q8_linear_<ISA>.cpp): each input row quantised once per call, block by
// block (storage_convert.h's quantise_activations_q8), and then read by every target and panel.
// One rule of arithmetic for all of them, so that every module gives the same bits: column c's
// result is
//   acc = 0; for each block b in order: acc += (s_w[b][c] · d_x[b]) · dot[b][c]; y = acc + bias[c]
// in f32, dot the block's Σ (q_w − z)·q_x in int32 (exact: |dot| ≤ 32 · 255 · 127 < 2^24, so its f32
// is exact too), each product and sum a separate statement (never fused into an FMA).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace webattention::kernels {

// What Q8Rows::quantise makes besides the int8 codes: nothing (the scalar kernels) or the codes as
// int16 (SIMD128).
enum class Widening { none, int16 };

struct Q8Rows {
  int rows = 0, in = 0, blocks = 0;
  // [rows][blocks · 32]: the codes, zero past `in` (a partial last block reads zeros there).
  std::vector<std::int8_t> codes;
  std::vector<float> scales;        // [rows][blocks]: d_x of each block
  std::vector<std::int32_t> sums;   // [rows][blocks]: Σ q_x over the block (an int4 zero point's share)
  std::vector<std::int16_t> wide;   // [rows][blocks · 32]: the codes as int16 (the SIMD128 kernels' operand)
  // [blocks · 32], made with `wide` for one row only (a decode step's; empty for more): each group
  // of 4 codes (x_k, x_k+1, x_k+2 − 16·x_k, x_k+3 − 16·x_k+1), the SIMD128 int4 kernel's one-row
  // operand (q4_codes_simd128.h's Q4Codes::group_one_row says why; |each| ≤ 17 · 128 < 2^15).
  std::vector<std::int16_t> q4_one_row;
  // [rows][blocks]: −8 · Σ q_x as an int16, twice (low and high half): where a block's zero points
  // are all 8, the relaxed int4 kernel's start of its int16 sum (q8_relaxed_simd128.h), splat by
  // one 32-bit load (a scalar's splat cost V8 more than the operations it saves).
  std::vector<std::uint32_t> minus_8_sums;

  std::size_t stride() const { return static_cast<std::size_t>(blocks) * storage::kQuantBlock; }
  const std::int8_t* row(int r) const { return codes.data() + r * stride(); }
  const std::int16_t* wide_row(int r) const { return wide.data() + r * stride(); }
  const float* row_scales(int r) const { return scales.data() + static_cast<std::size_t>(r) * blocks; }
  const std::int32_t* row_sums(int r) const { return sums.data() + static_cast<std::size_t>(r) * blocks; }
  const std::uint32_t* row_minus_8_sums(int r) const { return minus_8_sums.data() + static_cast<std::size_t>(r) * blocks; }

  // One block: storage_convert.h's quantise_activations_q8 into q, Σ q into *sum; returns d.
  using BlockQuantiser = float (*)(const float* x, int n, std::int8_t* q, std::int32_t* sum);
  static float quantise_block(const float* x, int n, std::int8_t* q, std::int32_t* sum) {
    const float d = storage::quantise_activations_q8(x, n, q);
    *sum = 0;
    for (int i = 0; i < n; ++i) *sum += q[i];
    return d;
  }

  // x [rows, in] with row stride x_stride, quantised (and widened as `widen` says), block by block
  // by `block` (an ISA's own, giving quantise_block's codes).
  void quantise(const float* x, int row_count, std::ptrdiff_t x_stride, int width, Widening widen,
                BlockQuantiser block = quantise_block) {
    rows = row_count;
    in = width;
    blocks = storage::quant_blocks(in);
    codes.assign(static_cast<std::size_t>(rows) * stride(), 0);
    scales.resize(static_cast<std::size_t>(rows) * blocks);
    sums.resize(static_cast<std::size_t>(rows) * blocks);
    for (int r = 0; r < rows; ++r) {
      for (int b = 0; b < blocks; ++b) {
        const int k0 = b * storage::kQuantBlock, n = std::min(storage::kQuantBlock, in - k0);
        const std::size_t at = static_cast<std::size_t>(r) * blocks + b;
        scales[at] = block(x + r * x_stride + k0, n, codes.data() + r * stride() + k0, &sums[at]);
      }
    }
    if (widen != Widening::none) widen_codes();
    minus_8_sums.resize(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) {
      const std::uint32_t half = static_cast<std::uint16_t>(-8 * sums[i]);  // |8 Σ q_x| ≤ 8 · 32 · 127 < 2^15
      minus_8_sums[i] = half | half << 16;
    }
  }

 private:
  void widen_codes() {
    wide.assign(codes.begin(), codes.end());
    q4_one_row.clear();
    if (rows != 1) return;
    q4_one_row.assign(codes.begin(), codes.end());
    for (std::size_t k = 0; k < q4_one_row.size(); k += 4) {
      q4_one_row[k + 2] = static_cast<std::int16_t>(q4_one_row[k + 2] - 16 * q4_one_row[k]);
      q4_one_row[k + 3] = static_cast<std::int16_t>(q4_one_row[k + 3] - 16 * q4_one_row[k + 1]);
    }
  }
};

// The quantised rows of this thread's current call: reused between calls (a decode step's
// projections quantise a row each, and allocate nothing once warm).
inline Q8Rows& q8_rows_scratch() {
  thread_local Q8Rows rows;
  return rows;
}

// The driver every ISA's kernel shares: panel_rows(q, w, p, y, y_stride) for every target and
// panel, over all the quantised rows q.
template <class PanelRows>
void q8_panels(const Q8Rows& q, const LinearTarget* targets, int target_count, PanelRows&& panel_rows) {
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    for (int p = targets[t].panel_begin; p < targets[t].panels_end(); ++p) panel_rows(q, w, p, targets[t].y, targets[t].y_stride);
  }
}

// From x: quantised first (quantise(x, rows, x_stride, in, q), the ISA's rule) into this thread's
// scratch, then rows_of_panels(q, targets, target_count), a driver over every target's panels.
template <class Quantise, class RowsOfPanels>
void q8_linear_rows(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count,
                    Quantise&& quantise, RowsOfPanels&& rows_of_panels) {
  if (target_count == 0) return;
  Q8Rows& q = q8_rows_scratch();
  quantise(x, rows, x_stride, targets[0].weights->in, q);
  rows_of_panels(q, targets, target_count);
}

// The same with q8_panels' driver: panel_rows for each panel in turn.
template <class Quantise, class PanelRows>
void q8_linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count,
                      Quantise&& quantise, PanelRows&& panel_rows) {
  q8_linear_rows(x, rows, x_stride, targets, target_count, quantise,
                 [&](const Q8Rows& q, const LinearTarget* t, int n) { q8_panels(q, t, n, panel_rows); });
}

}  // namespace webattention::kernels
