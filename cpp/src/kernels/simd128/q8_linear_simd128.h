// Projection kernel for int8 activations, WebAssembly SIMD128: q8_rows.h's rule, lane by lane
// (column c's lane does the scalar kernel's f32 operations, in its order, so every module gives
// the same bits). Each block's integer dot products come from i32x4.dot_i16x8_s on codes widened to
// int16: two input values × 4 columns per instruction, the input codes splat as an (x_k, x_k+1)
// pair. The relaxed modules run it too (why not i32x4.relaxed_dot_i8x16_i7x16_add_s:
// docs/attention-math.md §11).
// i8q8_linear_simd128.cpp and q4q8_linear_simd128.cpp instantiate linear_panels with their Codes.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/q8_rows.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// The (x_k, x_k+1) int16 pair splat to every i32 lane.
inline v128_t pair_at(const std::int16_t* x, int k) { return wasm_v128_load32_splat(x + k); }

// int8 weights, [in][8] codes per panel: rows k and k+1 (16 bytes) interleaved to (c, k), (c, k+1)
// byte pairs, widened, and dotted with the input pair: columns 0-3 into lo, 4-7 into hi.
struct I8Codes {
  const std::int8_t* p;
  const float* scales;
  I8Codes(const PackedLinear& w, int panel) : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  static v128_t interleave(v128_t rows) {
    return wasm_i8x16_shuffle(rows, rows, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  }
  static void madd(v128_t rows, v128_t x, v128_t& lo, v128_t& hi) {
    const v128_t pairs = interleave(rows);
    lo = wasm_i32x4_add(lo, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(pairs), x));
    hi = wasm_i32x4_add(hi, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(pairs), x));
  }
  // Block b's dot products Σ q_w·q_x over rows [k0, k1) for columns 0-3 (lo) and 4-7 (hi); x reads
  // zeros past the row's end, so an odd last row pairs with a zero row (never loaded).
  void block_dot(int b, int k0, int k1, const std::int16_t* x, const Q8Rows&, int, v128_t& lo, v128_t& hi) const {
    (void)b;
    lo = hi = wasm_i32x4_splat(0);
    int k = k0;
    for (; k + 2 <= k1; k += 2) madd(wasm_v128_load(p + k * kPanelWidth), pair_at(x, k), lo, hi);
    if (k < k1) madd(wasm_v128_load64_zero(p + k * kPanelWidth), pair_at(x, k), lo, hi);
  }
};

// int4 weights: a panel row's 8 codes in one word (storage_convert.h's q4_shift), so 4 rows are 16
// bytes; the low nibbles are columns (0, 4, 1, 5) of each row, the high ones (2, 6, 3, 7). Each
// nibble vector is interleaved into (column, rows k, k+1) pairs (bytes 0-7) and (column, rows
// k+2, k+3) pairs (bytes 8-15), widened and dotted with the input pairs. Σ (q − z)·q_x = Σ q·q_x −
// z·Σ q_x, the block's Σ q_x from Q8Rows.
struct Q4Codes {
  const std::uint32_t* words;
  const std::uint32_t* zero_points;
  const float* scales;
  Q4Codes(const PackedLinear& w, int panel)
      : words(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)), scales(w.panel_scales(panel)) {}
  static void madd(v128_t nibbles, v128_t x01, v128_t x23, v128_t& acc) {
    const v128_t pairs = wasm_i8x16_shuffle(nibbles, nibbles, 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
    acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_u16x8_extend_low_u8x16(pairs), x01));
    acc = wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_u16x8_extend_high_u8x16(pairs), x23));
  }
  static void four_rows(v128_t v, const std::int16_t* x, int k, v128_t& a, v128_t& b) {
    const v128_t mask = wasm_i8x16_splat(0x0F);
    madd(wasm_v128_and(v, mask), pair_at(x, k), pair_at(x, k + 2), a);
    madd(wasm_v128_and(wasm_u8x16_shr(v, 4), mask), pair_at(x, k), pair_at(x, k + 2), b);
  }
  void block_dot(int b, int k0, int k1, const std::int16_t* x, const Q8Rows& q, int r, v128_t& lo, v128_t& hi) const {
    v128_t a = wasm_i32x4_splat(0), c = wasm_i32x4_splat(0);  // columns (0, 4, 1, 5) and (2, 6, 3, 7)
    int k = k0;
    for (; k + 4 <= k1; k += 4) four_rows(wasm_v128_load(words + k), x, k, a, c);
    if (k < k1) {  // the last block's last rows: zero words past the end meet zero input codes
      std::uint32_t tail[4] = {};
      std::memcpy(tail, words + k, static_cast<std::size_t>(k1 - k) * sizeof tail[0]);
      four_rows(wasm_v128_load(tail), x, k, a, c);
    }
    // The block's zero points, a word laid out as a row of codes: byte i of lane i of the word splat
    // holds, in its low nibble, column (0, 4, 1, 5)[i], in its high one (2, 6, 3, 7)[i].
    const v128_t z = wasm_v128_load32_splat(zero_points + b), mask = wasm_i8x16_splat(0x0F), none = wasm_i32x4_splat(0);
    const v128_t z_a = wasm_i8x16_shuffle(wasm_v128_and(z, mask), none, 0, 16, 16, 16, 5, 16, 16, 16, 10, 16, 16, 16, 15, 16, 16, 16);
    const v128_t z_c = wasm_i8x16_shuffle(wasm_v128_and(wasm_u8x16_shr(z, 4), mask), none, 0, 16, 16, 16, 5, 16, 16, 16, 10, 16, 16, 16, 15,
                                          16, 16, 16);
    const v128_t sum = wasm_i32x4_splat(q.row_sums(r)[b]);
    a = wasm_i32x4_sub(a, wasm_i32x4_mul(z_a, sum));
    c = wasm_i32x4_sub(c, wasm_i32x4_mul(z_c, sum));
    lo = wasm_i32x4_shuffle(a, c, 0, 2, 4, 6);  // columns 0-3
    hi = wasm_i32x4_shuffle(a, c, 1, 3, 5, 7);  // columns 4-7
  }
};

inline v128_t bias_or_zero(const PackedLinear& w, int at) {
  return w.bias.empty() ? wasm_f32x4_splat(0.0f) : wasm_v128_load(w.bias.data() + at);
}

// yr[8p, 8p + 8) (those below w.out) = quantised row r of q times panel p (+ bias).
template <class Codes>
void row_times_panel(const Q8Rows& q, int r, const PackedLinear& w, int p, float* yr) {
  const Codes codes(w, p);
  const std::int16_t* x = q.wide_row(r);
  const float* dx = q.row_scales(r);
  v128_t acc_lo = wasm_f32x4_splat(0.0f), acc_hi = wasm_f32x4_splat(0.0f);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo, hi;
    codes.block_dot(b, k0, k1, x, q, r, lo, hi);
    const v128_t d = wasm_f32x4_splat(dx[b]);
    const float* s = codes.scales + b * kPanelWidth;
    const v128_t scale_lo = wasm_f32x4_mul(wasm_v128_load(s), d), scale_hi = wasm_f32x4_mul(wasm_v128_load(s + 4), d);
    acc_lo = wasm_f32x4_add(acc_lo, wasm_f32x4_mul(scale_lo, wasm_f32x4_convert_i32x4(lo)));
    acc_hi = wasm_f32x4_add(acc_hi, wasm_f32x4_mul(scale_hi, wasm_f32x4_convert_i32x4(hi)));
  }
  const int n0 = p * kPanelWidth;
  alignas(16) float out[kPanelWidth];
  wasm_v128_store(out, wasm_f32x4_add(acc_lo, bias_or_zero(w, n0)));
  wasm_v128_store(out + 4, wasm_f32x4_add(acc_hi, bias_or_zero(w, n0 + 4)));
  std::copy_n(out, w.panel_columns(p), yr + n0);
}

template <class Codes>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) {
  q8_linear_panels(x, rows, x_stride, targets, target_count, true, row_times_panel<Codes>);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
