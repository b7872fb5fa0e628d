// int4 weights for the int8-activation kernels, WebAssembly SIMD128: q8_linear_simd128.h's Codes
// for int4 (Q4Codes), their groups of 4 rows unpacked and dotted with the input's int16 codes.
#pragma once

#include <wasm_simd128.h>

#include <cstdint>

#include "kernels/simd128/q8_linear_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// int4 weights, a group of 4 rows in 16 bytes (storage_convert.h's q4_byte): the low nibbles are
// (column, rows k, k+1) pairs, the high ones (column, rows k+2, k+3). Each nibble vector widened to
// int16 (columns 0-3, then 4-7) is dotted with the input pair as it lies: per 32 weights 3
// operations to unpack, 4 to widen, 4 dot products and 4 adds, and no regrouping. Σ (q − z)·q_x
// = Σ q·q_x − z·Σ q_x, the block's Σ q_x from Q8Rows. Rows past `in` hold code 0 and meet input
// codes that are zero (Q8Rows pads each row to whole blocks).
struct Q4Codes {
  // No whole_block_one_row: its 8 groups straight-line ran 0.72-0.88× the loop.
  static constexpr int kMaxRows = kRows;
  const std::uint8_t* codes;
  const std::uint32_t* zero_points;
  const float* scales;  // block 0's, within the codes (storage_convert.h's ScaledBlocks)
  static constexpr int kScaleStride = storage::kQ4Blocks.scale_stride();
  Q4Codes(const PackedLinear& w, int panel)
      : codes(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)), scales(w.block_scales(storage::kQ4Blocks, panel, 0)) {}
  const float* block_scales(int b) const { return scales + b * kScaleStride; }
  // A group's low and high nibbles, as bytes.
  static void nibbles(v128_t v, v128_t& low, v128_t& high) {
    const v128_t mask = wasm_i8x16_splat(0x0F);
    low = wasm_v128_and(v, mask);
    high = wasm_v128_and(wasm_u16x8_shr(v, 4), mask);
  }
  // lo, hi += the group v times the R input rows' codes x[r] at its first row.
  template <int R>
  static void group(v128_t v, const std::int16_t* const x[R], v128_t lo[R], v128_t hi[R]) {
    v128_t low, high;
    nibbles(v, low, high);
    const v128_t low03 = wasm_u16x8_extend_low_u8x16(low), low47 = wasm_u16x8_extend_high_u8x16(low);
    const v128_t high03 = wasm_u16x8_extend_low_u8x16(high), high47 = wasm_u16x8_extend_high_u8x16(high);
    for (int r = 0; r < R; ++r) {
      const v128_t x01 = pair_at(x[r], 0), x23 = pair_at(x[r], 2);
      lo[r] = wasm_i32x4_add(lo[r], wasm_i32x4_add(wasm_i32x4_dot_i16x8(low03, x01), wasm_i32x4_dot_i16x8(high03, x23)));
      hi[r] = wasm_i32x4_add(hi[r], wasm_i32x4_add(wasm_i32x4_dot_i16x8(low47, x01), wasm_i32x4_dot_i16x8(high47, x23)));
    }
  }
  // lo, hi += the group v times one input row x at its first row, x from Q8Rows::q4_one_row:
  // (x_k, x_k+1, x_k+2 − 16·x_k, x_k+3 − 16·x_k+1). Each byte b = q_k + 16·q_k+2 (or q_k+1 +
  // 16·q_k+3) widened whole is dotted with (x_k, x_k+1), and its high nibble b >> 4 with the
  // third and fourth: q_k·x_k + 16·q_k+2·x_k + q_k+2·(x_k+2 − 16·x_k) = q_k·x_k + q_k+2·x_k+2, the
  // same integers as group()'s with no mask: per 32 weights 4 operations to unpack, not 7.
  static void group_one_row(v128_t v, const std::int16_t* x, v128_t& lo, v128_t& hi) {
    const v128_t bytes03 = wasm_u16x8_extend_low_u8x16(v), bytes47 = wasm_u16x8_extend_high_u8x16(v);
    const v128_t high03 = wasm_u16x8_shr(bytes03, 4), high47 = wasm_u16x8_shr(bytes47, 4);
    const v128_t x01 = pair_at(x, 0), x23 = pair_at(x, 2);
    lo = wasm_i32x4_add(lo, wasm_i32x4_add(wasm_i32x4_dot_i16x8(bytes03, x01), wasm_i32x4_dot_i16x8(high03, x23)));
    hi = wasm_i32x4_add(hi, wasm_i32x4_add(wasm_i32x4_dot_i16x8(bytes47, x01), wasm_i32x4_dot_i16x8(high47, x23)));
  }
  // f(v, at) for each group of rows k … k+3 of [k0, k1), v its 16 bytes, `at` stepped by 4 rows
  // from `first` (a row index, or a pointer to row k0 of an input). The groups' pointer stepped,
  // the loop's end hidden from clang so that it unrolls by 2 only (fully unrolled, clang hoisted
  // every load and V8 spilled them).
  template <class At, class F>
  void each_group(int k0, int k1, At first, F&& f) const {
    const std::uint8_t *g = codes + storage::q4_byte(k0, 0), *end = codes + storage::q4_groups_end(k0, k1);
    __asm__("" : "+r"(end));
    At at = first;
    _Pragma("clang loop unroll_count(2)") for (; g != end; g += storage::kQ4GroupBytes, at += storage::kQ4GroupRows) f(wasm_v128_load(g), at);
  }
  // f(v, x) for each group of [k0, k1), x the R input rows (rows[r]) at its first row. One row (a
  // decode step): its pointer stepped with the codes' (V8 then addresses its loads without an
  // index computation each); more: each from the group's row index.
  template <int R, class T, class F>
  void each_group_rows(int k0, int k1, const T* const rows[R], F&& f) const {
    if constexpr (R == 1) {
      each_group(k0, k1, rows[0] + k0, [&](v128_t v, const T* at) {
        const T* x[1] = {at};
        f(v, x);
      });
    } else {
      each_group(k0, k1, k0, [&](v128_t v, int k) {
        const T* x[R];
        for (int r = 0; r < R; ++r) x[r] = rows[r] + k;
        f(v, x);
      });
    }
  }
  template <int R>
  void block_dot(int b, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_i32x4_splat(0);
    each_group_rows<R>(k0, k1, in.x, [&](v128_t v, const std::int16_t* const x[R]) { group<R>(v, x, lo, hi); });
    subtract_zero_points<R>(zero_points[b], in, b, lo, hi);
  }
  // lo, hi −= z · Σ q_x per input row.
  template <int R>
  static void subtract_zero_points(std::uint32_t zw, const InputRows<R>& in, int b, v128_t lo[R], v128_t hi[R]) {
    if (zw == (zw & 0xFu) * 0x11111111u) {  // one zero point for the block's 8 columns (always at load)
      for (int r = 0; r < R; ++r) {
        const v128_t zs = wasm_i32x4_splat(static_cast<std::int32_t>(zw & 0xFu) * in.sums[r][b]);
        lo[r] = wasm_i32x4_sub(lo[r], zs);
        hi[r] = wasm_i32x4_sub(hi[r], zs);
      }
      return;
    }
    v128_t z03, z47;
    q4_zero_lanes(zw, z03, z47);
    for (int r = 0; r < R; ++r) {
      const v128_t sum = wasm_i32x4_splat(in.sums[r][b]);
      lo[r] = wasm_i32x4_sub(lo[r], wasm_i32x4_mul(z03, sum));
      hi[r] = wasm_i32x4_sub(hi[r], wasm_i32x4_mul(z47, sum));
    }
  }
  // Block b's rows [k0, k1) as WideCodes lays them out, each code less its zero point (so the
  // int32 dot is Σ (q − z)·q_x directly, the same integer as block_dot's Σ q·q_x − z·Σ q_x). Rows
  // past k1 hold 0 − z: they meet input codes that are zero.
  void widen_block(int b, int k0, int k1, std::int16_t* out) const {
    // Each column's zero point twice, (z0, z0, z1, z1, ...) as int16, as the (k, k+1) pairs lie.
    v128_t z03, z47;
    q4_zero_lanes(zero_points[b], z03, z47);
    z03 = wasm_v128_or(z03, wasm_i32x4_shl(z03, 16));
    z47 = wasm_v128_or(z47, wasm_i32x4_shl(z47, 16));
    const std::int16_t* after = out + kWideBlock;
    each_group(k0, k1, k0, [&](v128_t v, int) {
      v128_t low, high;
      nibbles(v, low, high);
      wasm_v128_store(out, wasm_i16x8_sub(wasm_u16x8_extend_low_u8x16(low), z03));
      wasm_v128_store(out + 8, wasm_i16x8_sub(wasm_u16x8_extend_high_u8x16(low), z47));
      wasm_v128_store(out + 16, wasm_i16x8_sub(wasm_u16x8_extend_low_u8x16(high), z03));
      wasm_v128_store(out + 24, wasm_i16x8_sub(wasm_u16x8_extend_high_u8x16(high), z47));
      out += storage::kQ4GroupRows * kPanelWidth;
    });
    for (; out != after; out += 16) {
      wasm_v128_store(out, wasm_i16x8_neg(z03));
      wasm_v128_store(out + 8, wasm_i16x8_neg(z47));
    }
  }
};

}  // namespace
}  // namespace webattention::kernels::simd128_q8
