// Projection kernel for int8 activations, WebAssembly SIMD128: q8_rows.h's rule, lane by lane
// (column c's lane does the scalar kernel's f32 operations, in its order, so every module gives
// the same bits). Each block's integer dot products come from i32x4.dot_i16x8_s on codes widened to
// int16: two input values × 4 columns per instruction, the input codes splat as an (x_k, x_k+1)
// pair. The relaxed modules' kernels (q8_relaxed_simd128.h) replace the codes' block_dot by
// i32x4.relaxed_dot_i8x16_i7x16_add_s, the same integers.
// i8q8_linear_simd128.cpp and q4q8_linear_simd128.cpp instantiate linear_panels with their Codes.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/q8_rows.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Up to kRows input rows share each load and widening of the weights (a prefill; a decode step
// has one row).
constexpr int kRows = 4;

// The (x_k, x_k+1) int16 pair splat to every i32 lane.
inline v128_t pair_at(const std::int16_t* x, int k) { return wasm_v128_load32_splat(x + k); }

// R input rows of the quantised block being multiplied: their int16 codes, their int8 codes (the
// relaxed kernels' operand) and Σ q_x per block.
template <int R>
struct InputRows {
  const std::int16_t* x[R];
  const std::int16_t* doubled[R];  // Q8Rows::doubled_row, for fewer than Q8Rows::kDoubledRows rows
  const std::int8_t* codes[R];
  const std::int32_t* sums[R];
};

// int8 weights, [in][8] codes per panel: rows k and k+1 sign-extended to int16 as they load, their
// lanes interleaved to (c, k), (c, k+1) pairs (one unpack each for columns 0-3 and 4-7) and dotted
// with each input's pair: columns 0-3 into lo, 4-7 into hi. Per 16 weights 2 unpacks, 2 dots and
// 2 adds after the loads, where a byte shuffle and two sign extensions (three instructions on x64)
// took 3-4.
struct I8Codes {
  static constexpr int kMaxRows = kRows;  // input rows per row block
  static constexpr bool kDoubled = false;  // reads Q8Rows::doubled
  const std::int8_t* p;
  const float* scales;
  I8Codes(const PackedLinear& w, int panel) : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  template <int R>
  static void madd(v128_t row0, v128_t row1, const InputRows<R>& in, int k, v128_t lo[R], v128_t hi[R]) {
    const v128_t w03 = wasm_i16x8_shuffle(row0, row1, 0, 8, 1, 9, 2, 10, 3, 11);
    const v128_t w47 = wasm_i16x8_shuffle(row0, row1, 4, 12, 5, 13, 6, 14, 7, 15);
    for (int r = 0; r < R; ++r) {
      const v128_t x = pair_at(in.x[r], k);
      lo[r] = wasm_i32x4_add(lo[r], wasm_i32x4_dot_i16x8(w03, x));
      hi[r] = wasm_i32x4_add(hi[r], wasm_i32x4_dot_i16x8(w47, x));
    }
  }
  // Block b's dot products Σ q_w·q_x over weight rows [k0, k1), per input row; the inputs read
  // zeros past their end, so an odd last row pairs with a zero row (never loaded).
  template <int R>
  void block_dot(int, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_i32x4_splat(0);
    // Row k + 1 through a pointer clang cannot see is 8 bytes on: it would merge the two widening
    // loads into one load, a byte shuffle and two sign extensions (the sequence this replaces).
    const std::int8_t* next = p + kPanelWidth;
    __asm__("" : "+r"(next));
    int k = k0;
    if (R == 1 && k1 - k0 == storage::kQuantBlock) {
      // A whole block for one input row: pointers stepped (V8 then addresses the loads without a
      // multiply-add each), unrolled by 2 only: fully unrolled, clang hoists every load and V8
      // spills them, so the end is hidden from clang too.
      const std::int8_t *a = p + k0 * kPanelWidth, *b = next + k0 * kPanelWidth, *end = a + storage::kQuantBlock * kPanelWidth;
      __asm__("" : "+r"(end));
      InputRows<R> at = in;
      at.x[0] += k0;
      _Pragma("clang loop unroll_count(2)") for (; a != end; a += 2 * kPanelWidth, b += 2 * kPanelWidth, at.x[0] += 2) {
        madd<R>(wasm_i16x8_load8x8(a), wasm_i16x8_load8x8(b), at, 0, lo, hi);
      }
      return;
    }
    for (; k + 2 <= k1; k += 2)
      madd<R>(wasm_i16x8_load8x8(p + k * kPanelWidth), wasm_i16x8_load8x8(next + k * kPanelWidth), in, k, lo, hi);
    if (k < k1) madd<R>(wasm_i16x8_load8x8(p + k * kPanelWidth), wasm_i16x8_splat(0), in, k, lo, hi);
  }
  // Block b's rows [k0, k1) as WideCodes lays them out (out: kWideBlock int16, zeros past k1).
  void widen_block(int, int k0, int k1, std::int16_t* out) const {
    int k = k0;
    for (; k < k1; k += 2, out += 2 * kPanelWidth) {
      const v128_t rows = k + 2 <= k1 ? wasm_v128_load(p + k * kPanelWidth) : wasm_v128_load64_zero(p + k * kPanelWidth);
      const v128_t pairs = wasm_i8x16_shuffle(rows, rows, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
      wasm_v128_store(out, wasm_i16x8_extend_low_i8x16(pairs));
      wasm_v128_store(out + 8, wasm_i16x8_extend_high_i8x16(pairs));
    }
    for (; k < k0 + storage::kQuantBlock; k += 2, out += 2 * kPanelWidth) {
      wasm_v128_store(out, wasm_i32x4_splat(0));
      wasm_v128_store(out + 8, wasm_i32x4_splat(0));
    }
  }
};

// int4 weights: a panel row's 8 codes in one word (storage_convert.h's q4_shift), so 4 rows are 16
// bytes; the low nibbles are columns (0, 4, 1, 5) of each row, the high ones (2, 6, 3, 7). Each
// nibble vector is interleaved into (column, rows k, k+1) pairs (bytes 0-7) and (column, rows
// k+2, k+3) pairs (bytes 8-15), widened and dotted with the input pairs. Σ (q − z)·q_x = Σ q·q_x −
// z·Σ q_x, the block's Σ q_x from Q8Rows.
struct Q4Codes {
  static constexpr int kMaxRows = kRows;
  static constexpr bool kDoubled = true;
  const std::uint32_t* words;
  const std::uint32_t* zero_points;
  const float* scales;
  Q4Codes(const PackedLinear& w, int panel)
      : words(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)), scales(w.panel_scales(panel)) {}
  static v128_t pairs(v128_t nibbles) {
    return wasm_i8x16_shuffle(nibbles, nibbles, 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  }
  // Weight rows k .. k+3 (the word vector v) into a (columns 0, 4, 1, 5) and c (2, 6, 3, 7).
  template <int R>
  static void four_rows(v128_t v, const InputRows<R>& in, int k, v128_t a[R], v128_t c[R]) {
    const v128_t mask = wasm_i8x16_splat(0x0F);
    const v128_t low = pairs(wasm_v128_and(v, mask)), high = pairs(wasm_v128_and(wasm_u16x8_shr(v, 4), mask));
    const v128_t low01 = wasm_u16x8_extend_low_u8x16(low), low23 = wasm_u16x8_extend_high_u8x16(low);
    const v128_t high01 = wasm_u16x8_extend_low_u8x16(high), high23 = wasm_u16x8_extend_high_u8x16(high);
    for (int r = 0; r < R; ++r) {
      const v128_t x01 = pair_at(in.x[r], k), x23 = pair_at(in.x[r], k + 2);
      a[r] = wasm_i32x4_add(a[r], wasm_i32x4_add(wasm_i32x4_dot_i16x8(low01, x01), wasm_i32x4_dot_i16x8(low23, x23)));
      c[r] = wasm_i32x4_add(c[r], wasm_i32x4_add(wasm_i32x4_dot_i16x8(high01, x01), wasm_i32x4_dot_i16x8(high23, x23)));
    }
  }
  // f(v, k) for each group of four weight rows k … k+3 in [k0, k1), v their words; the last block's
  // last rows with zero words past the end (they meet zero input codes). A whole block: no tail
  // (its copy to memory made V8 keep the accumulators on the stack around it), the words' pointer
  // stepped, the loop's end hidden from clang so that it unrolls by 2 only (fully unrolled, clang
  // hoisted every load and V8 spilled them).
  template <class F>
  void each_four_rows(int k0, int k1, F&& f) const {
    int k = k0;
    if (k1 - k0 == storage::kQuantBlock) {
      const std::uint32_t *w = words + k0, *end = w + storage::kQuantBlock;
      __asm__("" : "+r"(end));
      _Pragma("clang loop unroll_count(2)") for (; w != end; w += 4, k += 4) f(wasm_v128_load(w), k);
      return;
    }
    for (; k + 4 <= k1; k += 4) f(wasm_v128_load(words + k), k);
    if (k < k1) {
      std::uint32_t tail[4] = {};
      std::memcpy(tail, words + k, static_cast<std::size_t>(k1 - k) * sizeof tail[0]);
      f(wasm_v128_load(tail), k);
    }
  }
  template <int R>
  void block_dot(int b, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    if constexpr (R == 1) {
      one_row_block_dot(b, k0, k1, in, lo[0], hi[0]);
    } else {
      v128_t a[R], c[R];
      for (int r = 0; r < R; ++r) a[r] = c[r] = wasm_i32x4_splat(0);
      each_four_rows(k0, k1, [&](v128_t v, int k) { four_rows<R>(v, in, k, a, c); });
      finish(b, in, a, c, lo, hi);
    }
  }
  // One input row (a decode step): the four rows' words read as int16 lanes as they lie, lane 2j
  // (2j + 1) holding row k+j's even (odd) columns, column 2n (2n + 1) in nibble n. Each nibble
  // masked out (n = 3: shifted) is a code per lane, times the input's doubled codes (x_k, x_k, …,
  // x_k+3, x_k+3) in int16 (|q·x| ≤ 15·127) and summed per lane over the block's 8 groups of rows
  // (|Σ| ≤ 15240 < 2^15: exact). Per 32 weights 6 operations to unpack, 4 multiplies and 4 adds.
  // At the block's end the lanes of each column are summed (pair_columns) and z·Σ q_x subtracted.
  void one_row_block_dot(int b, int k0, int k1, const InputRows<1>& in, v128_t& lo, v128_t& hi) const {
    const v128_t mask = wasm_i16x8_splat(0x000F);
    const std::int16_t* x = in.doubled[0];
    v128_t a0 = wasm_i16x8_splat(0), a1 = a0, a2 = a0, a3 = a0;
    each_four_rows(k0, k1, [&](v128_t v, int k) {
      const v128_t xk = wasm_v128_load(x + 2 * k);
      a0 = wasm_i16x8_add(a0, wasm_i16x8_mul(wasm_v128_and(v, mask), xk));
      a1 = wasm_i16x8_add(a1, wasm_i16x8_mul(wasm_v128_and(wasm_u16x8_shr(v, 4), mask), xk));
      a2 = wasm_i16x8_add(a2, wasm_i16x8_mul(wasm_v128_and(wasm_u16x8_shr(v, 8), mask), xk));
      a3 = wasm_i16x8_add(a3, wasm_i16x8_mul(wasm_u16x8_shr(v, 12), xk));
    });
    lo = pair_columns(a0, a1);
    hi = pair_columns(a2, a3);
    const std::uint32_t zw = zero_points[b];
    const std::int32_t sum = in.sums[0][b];
    if (zw == (zw & 0xFu) * 0x11111111u) {  // one zero point for the block's 8 columns (always at load)
      const v128_t zs = wasm_i32x4_splat(static_cast<std::int32_t>(zw & 0xFu) * sum);
      lo = wasm_i32x4_sub(lo, zs);
      hi = wasm_i32x4_sub(hi, zs);
      return;
    }
    // The zero points' word read as the codes' are: (z0, z1) in every i32 lane's nibble 0, (z2, z3)
    // in nibble 1, ...
    const v128_t z = wasm_v128_load32_splat(zero_points + b), s = wasm_i32x4_splat(sum);
    const v128_t z01 = wasm_v128_and(z, mask), z23 = wasm_v128_and(wasm_u16x8_shr(z, 4), mask);
    const v128_t z45 = wasm_v128_and(wasm_u16x8_shr(z, 8), mask), z67 = wasm_u16x8_shr(z, 12);
    lo = wasm_i32x4_sub(lo, wasm_i32x4_mul(wasm_u32x4_extend_low_u16x8(wasm_i32x4_shuffle(z01, z23, 0, 4, 0, 4)), s));
    hi = wasm_i32x4_sub(hi, wasm_i32x4_mul(wasm_u32x4_extend_low_u16x8(wasm_i32x4_shuffle(z45, z67, 0, 4, 0, 4)), s));
  }
  // Columns (2n, 2n + 1) in a (int16 lane 2j + p: column 2n + p of rows k ≡ j mod 4) and (2n + 2,
  // 2n + 3) in c, summed over their rows into int32 lanes (columns 2n … 2n + 3): rows j, j + 2
  // added in int16 (|Σ| ≤ 30480, exact), the lanes regrouped by column and added pairwise.
  static v128_t pair_columns(v128_t a, v128_t c) {
    const v128_t rows02 = wasm_i16x8_add(wasm_i32x4_shuffle(a, c, 0, 1, 4, 5), wasm_i32x4_shuffle(a, c, 2, 3, 6, 7));
    const v128_t by_column = wasm_i16x8_shuffle(rows02, rows02, 0, 2, 1, 3, 4, 6, 5, 7);
    return wasm_i32x4_dot_i16x8(by_column, wasm_i16x8_splat(1));
  }
  // a (columns 0, 4, 1, 5) and c (2, 6, 3, 7), each Σ q·q_x, less z·Σ q_x, into lo (columns 0-3)
  // and hi (4-7).
  template <int R>
  void finish(int b, const InputRows<R>& in, const v128_t a[R], const v128_t c[R], v128_t lo[R], v128_t hi[R]) const {
    // The block's zero points, a word laid out as a row of codes: byte i of lane i of the word splat
    // holds, in its low nibble, column (0, 4, 1, 5)[i], in its high one (2, 6, 3, 7)[i].
    const v128_t z = wasm_v128_load32_splat(zero_points + b), mask = wasm_i8x16_splat(0x0F), none = wasm_i32x4_splat(0);
    const v128_t z_a = wasm_i8x16_shuffle(wasm_v128_and(z, mask), none, 0, 16, 16, 16, 5, 16, 16, 16, 10, 16, 16, 16, 15, 16, 16, 16);
    const v128_t z_c = wasm_i8x16_shuffle(wasm_v128_and(wasm_u16x8_shr(z, 4), mask), none, 0, 16, 16, 16, 5, 16, 16, 16, 10, 16, 16, 16, 15,
                                          16, 16, 16);
    for (int r = 0; r < R; ++r) {
      const v128_t sum = wasm_i32x4_splat(in.sums[r][b]);
      const v128_t ar = wasm_i32x4_sub(a[r], wasm_i32x4_mul(z_a, sum)), cr = wasm_i32x4_sub(c[r], wasm_i32x4_mul(z_c, sum));
      lo[r] = wasm_i32x4_shuffle(ar, cr, 0, 2, 4, 6);  // columns 0-3
      hi[r] = wasm_i32x4_shuffle(ar, cr, 1, 3, 5, 7);  // columns 4-7
    }
  }
  // Block b's rows [k0, k1) as WideCodes lays them out, each code less its zero point (so the
  // int32 dot is Σ (q − z)·q_x directly, the same integer as block_dot's Σ q·q_x − z·Σ q_x). Rows
  // past k1 hold 0 − z: they meet input codes that are zero.
  void widen_block(int b, int k0, int k1, std::int16_t* out) const {
    alignas(16) std::int16_t z[2 * kPanelWidth];
    for (int c = 0; c < kPanelWidth; ++c) z[2 * c] = z[2 * c + 1] = static_cast<std::int16_t>(storage::q4_code(zero_points[b], c));
    const v128_t z03 = wasm_v128_load(z), z47 = wasm_v128_load(z + 8), mask = wasm_i8x16_splat(0x0F);
    for (int k = k0; k < k0 + storage::kQuantBlock; k += 4, out += 4 * kPanelWidth) {
      std::uint32_t tail[4] = {};
      if (k < k1) std::memcpy(tail, words + k, static_cast<std::size_t>(std::min(4, k1 - k)) * sizeof tail[0]);
      const v128_t v = k + 4 <= k1 ? wasm_v128_load(words + k) : wasm_v128_load(tail);
      const v128_t low = pairs(wasm_v128_and(v, mask)), high = pairs(wasm_v128_and(wasm_u16x8_shr(v, 4), mask));
      // (columns 0, 4, 1, 5) and (2, 6, 3, 7) of rows k, k+1 (…01) and k+2, k+3 (…23), as i32 lanes.
      const v128_t low01 = wasm_u16x8_extend_low_u8x16(low), low23 = wasm_u16x8_extend_high_u8x16(low);
      const v128_t high01 = wasm_u16x8_extend_low_u8x16(high), high23 = wasm_u16x8_extend_high_u8x16(high);
      wasm_v128_store(out, wasm_i16x8_sub(wasm_i32x4_shuffle(low01, high01, 0, 2, 4, 6), z03));
      wasm_v128_store(out + 8, wasm_i16x8_sub(wasm_i32x4_shuffle(low01, high01, 1, 3, 5, 7), z47));
      wasm_v128_store(out + 16, wasm_i16x8_sub(wasm_i32x4_shuffle(low23, high23, 0, 2, 4, 6), z03));
      wasm_v128_store(out + 24, wasm_i16x8_sub(wasm_i32x4_shuffle(low23, high23, 1, 3, 5, 7), z47));
    }
  }
};

// A panel's codes widened once for all the rows of a call (panel_rows, from kWideRows rows): per
// block kWideBlock int16, per pair of weight rows (k, k+1) 16: columns 0-3 as (c, k), (c, k+1)
// pairs, then columns 4-7, zero point subtracted. The inner loop is then a load per 4 columns and,
// per input row, a splat and a dot and an add per 4 columns: no shuffle or widening per row block.
constexpr int kWideBlock = storage::kQuantBlock * kPanelWidth;
struct WideCodes {
  static constexpr int kMaxRows = kRows;
  static constexpr bool kDoubled = false;
  const std::int16_t* codes;
  const float* scales;
  template <int R>
  void block_dot(int b, int, int, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_i32x4_splat(0);
    const std::int16_t* at = codes + b * kWideBlock;
    const int k0 = b * storage::kQuantBlock;
    for (int i = 0; i < storage::kQuantBlock / 2; ++i) {
      const v128_t w03 = wasm_v128_load(at + 16 * i), w47 = wasm_v128_load(at + 16 * i + 8);
      for (int r = 0; r < R; ++r) {
        const v128_t x = pair_at(in.x[r], k0 + 2 * i);
        lo[r] = wasm_i32x4_add(lo[r], wasm_i32x4_dot_i16x8(w03, x));
        hi[r] = wasm_i32x4_add(hi[r], wasm_i32x4_dot_i16x8(w47, x));
      }
    }
  }
};

// The widened panel of this thread's current call: reused between panels and calls.
inline std::int16_t* wide_scratch(int blocks) {
  thread_local std::vector<std::int16_t> wide;
  wide.resize(static_cast<std::size_t>(blocks) * kWideBlock);
  return wide.data();
}

inline v128_t bias_or_zero(const PackedLinear& w, int at) {
  return w.bias.empty() ? wasm_f32x4_splat(0.0f) : wasm_v128_load(w.bias.data() + at);
}

// Rows [r0, r0 + R) of y, columns [8p, 8p + 8) (those below w.out) = those quantised rows of q times
// panel p (+ bias); y points at row r0.
// The f32 accumulators stay in memory (read and written once per block): with them in registers
// too, 4 rows' integer and f32 accumulators, the weights and the input pair would not fit V8's 16
// vector registers, and the block loop spilled (linear_simd128.h's block_4x8_scaled, the same).
template <class Codes, int R>
void rows_times_panel(const Codes& codes, const Q8Rows& q, int r0, const PackedLinear& w, int p, float* y,
                      std::ptrdiff_t y_stride) {
  InputRows<R> in;
  const float* dx[R];
  alignas(16) float acc[R][kPanelWidth] = {};
  for (int r = 0; r < R; ++r) {
    in.x[r] = q.wide_row(r0 + r);
    in.doubled[r] = q.doubled.empty() ? nullptr : q.doubled_row(r0 + r);
    in.codes[r] = q.row(r0 + r);
    in.sums[r] = q.row_sums(r0 + r);
    dx[r] = q.row_scales(r0 + r);
  }
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo[R], hi[R];
    codes.template block_dot<R>(b, k0, k1, in, lo, hi);
    const float* s = codes.scales + b * kPanelWidth;
    const v128_t s_lo = wasm_v128_load(s), s_hi = wasm_v128_load(s + 4);
    for (int r = 0; r < R; ++r) {
      const v128_t d = wasm_f32x4_splat(dx[r][b]);
      const v128_t sum_lo = wasm_f32x4_mul(wasm_f32x4_mul(s_lo, d), wasm_f32x4_convert_i32x4(lo[r]));
      const v128_t sum_hi = wasm_f32x4_mul(wasm_f32x4_mul(s_hi, d), wasm_f32x4_convert_i32x4(hi[r]));
      wasm_v128_store(acc[r], wasm_f32x4_add(wasm_v128_load(acc[r]), sum_lo));
      wasm_v128_store(acc[r] + 4, wasm_f32x4_add(wasm_v128_load(acc[r] + 4), sum_hi));
    }
  }
  const int n0 = p * kPanelWidth;
  for (int r = 0; r < R; ++r) {
    wasm_v128_store(acc[r], wasm_f32x4_add(wasm_v128_load(acc[r]), bias_or_zero(w, n0)));
    wasm_v128_store(acc[r] + 4, wasm_f32x4_add(wasm_v128_load(acc[r] + 4), bias_or_zero(w, n0 + 4)));
  }
  for (int r = 0; r < R; ++r) std::copy_n(acc[r], w.panel_columns(p), y + r * y_stride + n0);
}

// Every row of q times panel p by `codes`: Codes::kMaxRows at a time, then the rest.
template <class Codes>
void rows_times_codes(const Codes& codes, const Q8Rows& q, const PackedLinear& w, int p, float* y, std::ptrdiff_t y_stride) {
  constexpr int kBlock = Codes::kMaxRows;
  int r = 0;
  for (; r + kBlock <= q.rows; r += kBlock) rows_times_panel<Codes, kBlock>(codes, q, r, w, p, y + r * y_stride, y_stride);
  switch (q.rows - r) {
    case 3: rows_times_panel<Codes, 3>(codes, q, r, w, p, y + r * y_stride, y_stride); break;
    case 2: rows_times_panel<Codes, 2>(codes, q, r, w, p, y + r * y_stride, y_stride); break;
    case 1: rows_times_panel<Codes, 1>(codes, q, r, w, p, y + r * y_stride, y_stride); break;
    default: break;
  }
}

// From kWideRows input rows (a prefill's) the panel is widened once (WideCodes) and read by every
// row block; fewer rows (a decode step) read the packed codes, widening them per row block.
constexpr int kWideRows = Q8Rows::kDoubledRows;
static_assert(kWideRows == 2 * kRows, "the doubled codes serve every row count below the widened panel's");

// Every row of q times panel p. Never inlined, so that V8 swaps in optimised code between panels
// of a first call (linear_simd128.h's panel_rows).
template <class Codes>
__attribute__((noinline)) void panel_rows(const Q8Rows& q, const PackedLinear& w, int p, float* y, std::ptrdiff_t y_stride) {
  const Codes codes(w, p);
  if (q.rows < kWideRows) {
    rows_times_codes(codes, q, w, p, y, y_stride);
    return;
  }
  std::int16_t* wide = wide_scratch(q.blocks);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock;
    codes.widen_block(b, k0, std::min(w.in, k0 + storage::kQuantBlock), wide + b * kWideBlock);
  }
  rows_times_codes(WideCodes{wide, codes.scales}, q, w, p, y, y_stride);
}

// Q8Rows::quantise_block, 4 values at a time where it is a whole block with a finite d > 0 (any
// other block: the scalar rule). The same codes: x / d is the same f32 division; std::round's
// half away from zero is t = trunc(v), plus sign(v) where |v − t| ≥ 0.5 (v − t is exact: |v| ≤
// 127 · (1 + 2⁻²³), far below 2²³); the clamp to ±127 is the scalar's.
inline float quantise_block(const float* x, int n, std::int8_t* q, std::int32_t* sum) {
  const float d = n == storage::kQuantBlock ? storage::q8_scale(x, n) : 0.0f;
  if (!(d > 0.0f && std::isfinite(d))) return Q8Rows::quantise_block(x, n, q, sum);
  const v128_t dv = wasm_f32x4_splat(d), half = wasm_f32x4_splat(0.5f), one = wasm_f32x4_splat(1.0f);
  const v128_t sign = wasm_f32x4_splat(-0.0f), lo = wasm_f32x4_splat(-127.0f), hi = wasm_f32x4_splat(127.0f);
  v128_t codes[storage::kQuantBlock / 4];
  for (int i = 0; i < storage::kQuantBlock / 4; ++i) {
    const v128_t v = wasm_f32x4_div(wasm_v128_load(x + 4 * i), dv);
    const v128_t t = wasm_f32x4_trunc(v);
    const v128_t away = wasm_f32x4_ge(wasm_f32x4_abs(wasm_f32x4_sub(v, t)), half);
    const v128_t step = wasm_v128_and(away, wasm_v128_or(one, wasm_v128_and(v, sign)));
    codes[i] = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_min(wasm_f32x4_max(wasm_f32x4_add(t, step), lo), hi));
  }
  v128_t total = wasm_i32x4_splat(0);
  for (int i = 0; i < storage::kQuantBlock / 4; ++i) total = wasm_i32x4_add(total, codes[i]);
  for (int i = 0; i < storage::kQuantBlock / 16; ++i) {
    const v128_t c0 = wasm_i16x8_narrow_i32x4(codes[4 * i], codes[4 * i + 1]);
    const v128_t c1 = wasm_i16x8_narrow_i32x4(codes[4 * i + 2], codes[4 * i + 3]);
    wasm_v128_store(q + 16 * i, wasm_i8x16_narrow_i16x8(c0, c1));
  }
  *sum = wasm_i32x4_extract_lane(total, 0) + wasm_i32x4_extract_lane(total, 1) + wasm_i32x4_extract_lane(total, 2) +
         wasm_i32x4_extract_lane(total, 3);
  return d;
}

template <class Codes>
void linear_panels(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) {
  q8_linear_panels(x, rows, x_stride, targets, target_count, Codes::kDoubled ? Widening::int16_doubled : Widening::int16,
                   panel_rows<Codes>, quantise_block);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
