// The relaxed-SIMD modules' block dot products of int4 weights times int8 activations, with
// i16x8.relaxed_dot_i8x16_i7x16_s (relaxed_dot_simd128.h): a pair of input codes (the signed
// operand) times a column's two weight codes (0…15, in the 0…127 that keeps the sum exact in every
// engine), eight int16 lanes per instruction, each summed over the block in int16 (|Σ| ≤
// 16 · 127 · 15 = 30480 < 2^15: exact) and widened once per block. The same integers as
// q8_linear_simd128.h's Q4Codes, so the same bits after them; its widen_block serves the prefill
// path unchanged (from kWideRows input rows the panel is widened once to int16 and read with
// i32x4.dot_i16x8_s), and one row (a decode step) its one-row loop, which needs no shuffle.
#pragma once

#include <wasm_simd128.h>

#include "kernels/simd128/q8_linear_simd128.h"
#include "kernels/simd128/relaxed_dot_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Four rows' words (16 bytes: byte i of word j holds row k+j's columns (0, 4, 1, 5)[i] in its low
// nibble, (2, 6, 3, 7)[i] in its high one) masked into nibbles, each transposed so that int16 lane
// 2i holds column i's rows k, k+1 and lane 2i+1 its rows k+2, k+3: the input's four codes, one
// 32-bit splat, meet them as they are. Each lane pair sums to a column's four rows; widened
// pairwise once per block, the low nibbles give Q4Codes's a (columns 0, 4, 1, 5), the high ones
// its c (2, 6, 3, 7). Single-input shuffles only (V8 lowers a two-input one to two byte shuffles
// and an or).
struct Q4RelaxedCodes : Q4Codes {
  using Q4Codes::Q4Codes;
  template <int R>
  static void four_rows(v128_t v, const InputRows<R>& in, int k, v128_t s_low[R], v128_t s_high[R]) {
    const v128_t mask = wasm_i8x16_splat(0x0F);
    const v128_t low = wasm_v128_and(v, mask), high = wasm_v128_and(wasm_u16x8_shr(v, 4), mask);
    const v128_t low_t = wasm_i8x16_shuffle(low, low, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    const v128_t high_t = wasm_i8x16_shuffle(high, high, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int r = 0; r < R; ++r) {
      const v128_t x = wasm_v128_load32_splat(in.codes[r] + k);
      s_low[r] = wasm_i16x8_add(s_low[r], relaxed_dot_i16(x, low_t));
      s_high[r] = wasm_i16x8_add(s_high[r], relaxed_dot_i16(x, high_t));
    }
  }
  template <int R>
  void block_dot(int b, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    if constexpr (R == 1) {
      // One row: the SIMD128 kernel's loop (Q4Codes::one_row_block_dot), faster than the
      // transposes (their shuffle masks are built anew in every iteration by V8).
      one_row_block_dot(b, k0, k1, in, lo[0], hi[0]);
      return;
    }
    v128_t s_low[R], s_high[R];
    for (int r = 0; r < R; ++r) s_low[r] = s_high[r] = wasm_i32x4_splat(0);
    each_four_rows(k0, k1, [&](v128_t v, int k) { four_rows<R>(v, in, k, s_low, s_high); });
    v128_t a[R], c[R];
    for (int r = 0; r < R; ++r) {
      a[r] = wasm_i32x4_extadd_pairwise_i16x8(s_low[r]);
      c[r] = wasm_i32x4_extadd_pairwise_i16x8(s_high[r]);
    }
    finish(b, in, a, c, lo, hi);
  }
};

}  // namespace
}  // namespace webattention::kernels::simd128_q8
