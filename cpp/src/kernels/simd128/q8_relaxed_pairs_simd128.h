// The relaxed int4 kernel (q4q8_linear_relaxed.cpp) two panels at a time: q8_relaxed_simd128.h's
// Q4RelaxedCodes block sums, one input splat meeting both panels' groups, and the same bits as
// one panel at a time (q8_linear_simd128.h's rows_times_panel and one_row_whole_blocks, whose
// helpers these share). Which pairs, and why: q4_relaxed_panels below.
#pragma once

#include <wasm_simd128.h>

#include "kernels/simd128/q8_panel_pairs_simd128.h"
#include "kernels/simd128/q8_relaxed_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Two panels side by side for a prefill's rows: each row's input splats meet both panels' groups
// (per 64 weights and row 2 splats, 4 dot products and 4 adds, where a panel at a time takes 2
// splats per 32). Blocks whose zero points are all 8 in both panels (every block quantised at
// load) keep one int16 sum per row and panel, start_sums' wrap; any other block takes each
// panel's block_dot. The projection alone, 512 rows, one thread, against a panel at a time
// (bench/decode/projection/run.sh, ROWS=512): Chromium 1.09-1.22×, Firefox 1.04-1.16×; 3 rows
// a block ran 1.0-1.1×, 2 rows 0.8-1.0× (V8 has 15 vector registers for 8 sums, 4 nibble
// vectors, 2 splats and the mask); one input row (a decode step), even with the blocks
// straight-line, 0.94-1.01×.
template <int R>
void pair_block_dot(const Q4RelaxedCodes& a, const Q4RelaxedCodes& c, int b, int k0, int k1, const InputRows<R>& in,
                    v128_t lo[2][R], v128_t hi[2][R]) {
  if (a.zero_points[b] != Q4RelaxedCodes::kEightEverywhere || c.zero_points[b] != Q4RelaxedCodes::kEightEverywhere) {
    a.block_dot<R>(b, k0, k1, in, lo[0], hi[0]);
    c.block_dot<R>(b, k0, k1, in, lo[1], hi[1]);
    return;
  }
  v128_t sa[R], sc[R];
  for (int r = 0; r < R; ++r) sa[r] = sc[r] = wasm_v128_load32_splat(in.minus_8_sums[r] + b);
  const std::uint8_t *ga = a.codes + storage::q4_byte(k0, 0), *gc = c.codes + storage::q4_byte(k0, 0);
  const std::uint8_t* end = a.codes + storage::q4_byte(storage::q4_stored_rows(k1), 0);
  __asm__("" : "+r"(end));  // each_group's loop, two panels' groups a step
  for (int k = k0; ga != end; ga += storage::kQ4GroupBytes, gc += storage::kQ4GroupBytes, k += storage::kQ4GroupRows) {
    v128_t la, ha, lc, hc;
    Q4Codes::nibbles(wasm_v128_load(ga), la, ha);
    Q4Codes::nibbles(wasm_v128_load(gc), lc, hc);
    for (int r = 0; r < R; ++r) {
      const v128_t x01 = wasm_v128_load16_splat(in.codes[r] + k), x23 = wasm_v128_load16_splat(in.codes[r] + k + 2);
      sa[r] = wasm_i16x8_add(sa[r], wasm_i16x8_add(relaxed_dot_i16(x01, la), relaxed_dot_i16(x23, ha)));
      sc[r] = wasm_i16x8_add(sc[r], wasm_i16x8_add(relaxed_dot_i16(x01, lc), relaxed_dot_i16(x23, hc)));
    }
  }
  for (int r = 0; r < R; ++r) {
    lo[0][r] = wasm_i32x4_extend_low_i16x8(sa[r]);
    hi[0][r] = wasm_i32x4_extend_high_i16x8(sa[r]);
    lo[1][r] = wasm_i32x4_extend_low_i16x8(sc[r]);
    hi[1][r] = wasm_i32x4_extend_high_i16x8(sc[r]);
  }
}

// Rows [r0, r0 + R) of y times panels p and p + 1 (a, c): rows_times_panel's arithmetic for both.
template <int R>
void rows_times_panel_pair(const Q4RelaxedCodes& a, const Q4RelaxedCodes& c, const Q8Rows& q, int r0, const PackedLinear& w,
                           int p, float* y, std::ptrdiff_t y_stride) {
  InputRows<R> in;
  const float* dx[R];
  alignas(16) float acc[2][R][kPanelWidth] = {};
  input_rows<R>(q, r0, in, dx);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo[2][R], hi[2][R];
    pair_block_dot<R>(a, c, b, k0, k1, in, lo, hi);
    add_scaled_rows<R>(a.scales + b * kPanelWidth, dx, b, lo[0], hi[0], acc[0]);
    add_scaled_rows<R>(c.scales + b * kPanelWidth, dx, b, lo[1], hi[1], acc[1]);
  }
  store_rows<R>(acc[0], w, p, y, y_stride);
  store_rows<R>(acc[1], w, p + 1, y, y_stride);
}

// Every row of q times panels p and p + 1, kRows at a time, then one by one. Never inlined, as
// panel_rows.
__attribute__((noinline)) inline void panel_pair_rows(const Q8Rows& q, const PackedLinear& w, int p, float* y,
                                                      std::ptrdiff_t y_stride) {
  const Q4RelaxedCodes a(w, p), c(w, p + 1);
  int r = 0;
  for (; r + kRows <= q.rows; r += kRows) rows_times_panel_pair<kRows>(a, c, q, r, w, p, y + r * y_stride, y_stride);
  for (; r < q.rows; ++r) rows_times_panel_pair<1>(a, c, q, r, w, p, y + r * y_stride, y_stride);
}


// Block b of panels a and c for one input row, the block whole: whole_block_one_row for both at
// once, each splat of the input meeting both panels' groups.
inline void pair_whole_block_one_row(const Q4RelaxedCodes& a, const Q4RelaxedCodes& c, int b, const InputRows<1>& in,
                                     v128_t lo[2][1], v128_t hi[2][1]) {
  if (a.zero_points[b] != Q4RelaxedCodes::kEightEverywhere || c.zero_points[b] != Q4RelaxedCodes::kEightEverywhere) {
    a.whole_block_one_row(b, in, lo[0], hi[0]);
    c.whole_block_one_row(b, in, lo[1], hi[1]);
    return;
  }
  v128_t sa = wasm_v128_load32_splat(in.minus_8_sums[0] + b), sc = sa;
  const std::size_t first = storage::q4_byte(b * storage::kQuantBlock, 0);
  const std::uint8_t *ga = a.codes + first, *gc = c.codes + first;
  const std::int8_t* x = in.codes[0] + b * storage::kQuantBlock;
  _Pragma("clang loop unroll(full)") for (int i = 0; i < storage::kQuantBlock / storage::kQ4GroupRows; ++i) {
    v128_t la, ha, lc, hc;
    Q4Codes::nibbles(wasm_v128_load(ga + storage::kQ4GroupBytes * i), la, ha);
    Q4Codes::nibbles(wasm_v128_load(gc + storage::kQ4GroupBytes * i), lc, hc);
    const std::int8_t* at = x + storage::kQ4GroupRows * i;
    const v128_t x01 = wasm_v128_load16_splat(at), x23 = wasm_v128_load16_splat(at + 2);
    sa = wasm_i16x8_add(sa, wasm_i16x8_add(relaxed_dot_i16(x01, la), relaxed_dot_i16(x23, ha)));
    sc = wasm_i16x8_add(sc, wasm_i16x8_add(relaxed_dot_i16(x01, lc), relaxed_dot_i16(x23, hc)));
  }
  lo[0][0] = wasm_i32x4_extend_low_i16x8(sa);
  hi[0][0] = wasm_i32x4_extend_high_i16x8(sa);
  lo[1][0] = wasm_i32x4_extend_low_i16x8(sc);
  hi[1][0] = wasm_i32x4_extend_high_i16x8(sc);
}

// One input row (a decode step's) times panels p and p2, every block whole: one_row_whole_blocks
// for both, the accumulators in registers. Never inlined, as panel_rows.
__attribute__((noinline)) inline void whole_blocks_pair_one_row(const Q8Rows& q, const PackedLinear& w, int p, int p2, float* y) {
  const Q4RelaxedCodes a(w, p), c(w, p2);
  InputRows<1> in;
  const float* dx[1];
  input_rows<1>(q, 0, in, dx);
  v128_t a_lo = wasm_f32x4_splat(0.0f), a_hi = a_lo, c_lo = a_lo, c_hi = a_lo;
  for (int b = 0; b < q.blocks; ++b) {
    v128_t lo[2][1], hi[2][1];
    pair_whole_block_one_row(a, c, b, in, lo, hi);
    const float* s = a.scales + b * kPanelWidth;
    add_scaled_block(wasm_v128_load(s), wasm_v128_load(s + 4), dx[0][b], lo[0][0], hi[0][0], a_lo, a_hi);
    s = c.scales + b * kPanelWidth;
    add_scaled_block(wasm_v128_load(s), wasm_v128_load(s + 4), dx[0][b], lo[1][0], hi[1][0], c_lo, c_hi);
  }
  alignas(16) float acc[2][1][kPanelWidth];
  wasm_v128_store(acc[0][0], a_lo);
  wasm_v128_store(acc[0][0] + 4, a_hi);
  wasm_v128_store(acc[1][0], c_lo);
  wasm_v128_store(acc[1][0] + 4, c_hi);
  store_rows<1>(acc[0], w, p, y, 0);
  store_rows<1>(acc[1], w, p2, y, 0);
}

// The relaxed int4 kernel's panels (panels_in_pairs): a prefill's rows in adjacent pairs, a decode
// step's half the range apart, each by the pair steps above; one row with a partial last block
// (rare: an input width not a multiple of 32) one panel at a time.
inline void q4_relaxed_panels(const Q8Rows& q, const LinearTarget* targets, int target_count) {
  const auto one_row = [](const Q8Rows& rows, const PackedLinear& w, int p, int p2, float* y) {
    if (w.in % storage::kQuantBlock == 0) return whole_blocks_pair_one_row(rows, w, p, p2, y);
    panel_rows<Q4RelaxedCodes>(rows, w, p, y, 0);
    panel_rows<Q4RelaxedCodes>(rows, w, p2, y, 0);
  };
  panels_in_pairs(q, targets, target_count, one_row, panel_pair_rows, panel_rows<Q4RelaxedCodes>);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
