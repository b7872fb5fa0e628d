// The relaxed-SIMD modules' block dot products of int4 weights times int8 activations, with
// i16x8.relaxed_dot_i8x16_i7x16_s (relaxed_dot_simd128.h): a pair of input codes (the signed
// operand) times a column's two weight codes (0…15, in the 0…127 that keeps the sum exact in every
// engine), eight int16 lanes per instruction, each summed over the block in int16 (|Σ| ≤
// 16 · 127 · 15 = 30480 < 2^15: exact) and widened once per block. The same integers as
// q4_codes_simd128.h's Q4Codes, so the same bits after them. A prefill's rows run through it too,
// 4 rows a block sharing each group's unpacking, instead of the panel widened to int16 pairs
// (WideCodes): per 32 weights and 4 rows 3 unpacking and 16 vector operations where WideCodes
// takes 44 for half as many products per dot product; the kernel's driver takes two panels at a
// time (q8_relaxed_pairs_simd128.h).
#pragma once

#include <wasm_simd128.h>

#include "kernels/simd128/q4_codes_simd128.h"
#include "kernels/simd128/relaxed_dot_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// A group's low nibbles are (column, rows k, k+1) byte pairs and its high ones (column, rows k+2,
// k+3) (storage_convert.h's q4_byte): each meets the input's byte pair, one 16-bit splat, as it
// lies, in one relaxed dot product per 16 weights, and the eight int16 lanes are the panel's eight
// columns. Per 32 weights 3 operations to unpack, 2 dot products and 2 adds (the SIMD128 kernel:
// 15). The low and the high nibbles' sums are kept apart over the block (each ≤ 8 · 3810 < 2^15),
// widened and added at its end.
struct Q4RelaxedCodes : Q4Codes {
  using Q4Codes::Q4Codes;
  // Many rows (a prefill's) too: 1.24-1.35× the widened panel's rate in Chromium, 1.33-1.78× in
  // Firefox (bench/decode/projection/run.sh, ROWS=256); Node 20 (relaxed behind its flag) 0.78-0.92×.
  static constexpr bool kWidenForManyRows = false;
  // s_low, s_high += the group v's low and high nibbles times the R input rows' codes x[r] at its
  // first row (the device probe, cpp/probe/, times this step against Q4Codes::group).
  template <int R>
  static void group(v128_t v, const std::int8_t* const x[R], v128_t s_low[R], v128_t s_high[R]) {
    v128_t low, high;
    nibbles(v, low, high);
    for (int r = 0; r < R; ++r) {
      s_low[r] = wasm_i16x8_add(s_low[r], relaxed_dot_i16(wasm_v128_load16_splat(x[r]), low));
      s_high[r] = wasm_i16x8_add(s_high[r], relaxed_dot_i16(wasm_v128_load16_splat(x[r] + 2), high));
    }
  }
  template <int R>
  void block_dot(int b, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    const bool z8 = zero_points[b] == storage::kQ4EightEverywhere;
    v128_t s_low[R], s_high[R];
    start_sums<R>(z8, b, in, s_low, s_high);
    each_group_rows<R>(k0, k1, in.codes, [&](v128_t v, const std::int8_t* const x[R]) { group<R>(v, x, s_low, s_high); });
    finish_sums<R>(z8, b, in, s_low, s_high, lo, hi);
  }
  // Block b's sums for one input row (a decode step's), the block whole: one_row_whole_blocks'
  // step. Its 8 groups are straight-line code, read at constant offsets: with the generic loop (a
  // few groups per iteration, their count and the odd one worked out per block) V8 spent about as
  // many scalar instructions per block on the loop as the block has vector ones. Decode
  // projection, one thread, against that loop (bench/decode/projection/run.sh): Chromium
  // 1.19-1.23×, Firefox 1.04-1.05×, Node 20 (relaxed behind a flag) 0.91-0.94×: its older V8
  // hoists the 16 loads and spills them. An empty asm between groups, or 4 groups a loop step, did
  // no better in the browsers.
  void whole_block_one_row(int b, const InputRows<1>& in, v128_t lo[1], v128_t hi[1]) const {
    const bool z8 = zero_points[b] == storage::kQ4EightEverywhere;
    v128_t s_low[1], s_high[1];
    start_sums<1>(z8, b, in, s_low, s_high);
    const std::uint8_t* g = codes + storage::q4_byte(b * storage::kQuantBlock, 0);
    const std::int8_t* x = in.codes[0] + b * storage::kQuantBlock;
    _Pragma("clang loop unroll(full)") for (int i = 0; i < storage::kQuantBlock / storage::kQ4GroupRows; ++i) {
      const std::int8_t* const at[1] = {x + storage::kQ4GroupRows * i};
      group<1>(wasm_v128_load(g + storage::kQ4GroupBytes * i), at, s_low, s_high);
    }
    finish_sums<1>(z8, b, in, s_low, s_high, lo, hi);
  }

 private:
  // A block's low and high nibbles' int16 sums, before its groups. Where z = 8 (z8) the block's
  // Σ (q − 8)·q_x lies in [−32·8·127, 32·8·127] = [−32512, 32512], so it is kept in int16 from the
  // start: the low sum starts at −8·Σ q_x, both sums wrap freely (i16x8.add is modular) and their
  // sum, the exact result modulo 2^16, is the result (finish_sums). Per block an add and two
  // widenings, where the general case widens both sums (four), adds them (two) and subtracts
  // z·Σ q_x (two more, a multiply and a splat): 3-5 % of a decode step's projection
  // (bench/decode/projection/run.sh).
  template <int R>
  static void start_sums(bool z8, int b, const InputRows<R>& in, v128_t s_low[R], v128_t s_high[R]) {
    for (int r = 0; r < R; ++r) {
      s_low[r] = z8 ? wasm_v128_load32_splat(in.minus_8_sums[r] + b) : wasm_i16x8_splat(0);
      s_high[r] = wasm_i16x8_splat(0);
    }
  }
  // lo, hi (columns 0-3, 4-7) = the block's Σ (q − z)·q_x from its sums (start_sums).
  template <int R>
  void finish_sums(bool z8, int b, const InputRows<R>& in, const v128_t s_low[R], const v128_t s_high[R], v128_t lo[R],
                   v128_t hi[R]) const {
    if (z8) {
      for (int r = 0; r < R; ++r) {
        const v128_t sum = wasm_i16x8_add(s_low[r], s_high[r]);
        lo[r] = wasm_i32x4_extend_low_i16x8(sum);
        hi[r] = wasm_i32x4_extend_high_i16x8(sum);
      }
      return;
    }
    for (int r = 0; r < R; ++r) {
      lo[r] = wasm_i32x4_add(wasm_i32x4_extend_low_i16x8(s_low[r]), wasm_i32x4_extend_low_i16x8(s_high[r]));
      hi[r] = wasm_i32x4_add(wasm_i32x4_extend_high_i16x8(s_low[r]), wasm_i32x4_extend_high_i16x8(s_high[r]));
    }
    subtract_zero_points<R>(zero_points[b], in, b, lo, hi);
  }
};

static_assert(!WidensForManyRows<Q4RelaxedCodes>::value && WidensForManyRows<Q4Codes>::value,
              "a prefill's rows take the relaxed block, the SIMD128 kernels the widened panel");

}  // namespace
}  // namespace webattention::kernels::simd128_q8
