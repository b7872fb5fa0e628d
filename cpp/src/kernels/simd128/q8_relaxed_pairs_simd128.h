// The relaxed int4 kernel (q4q8_linear_relaxed.cpp) several panels at a time: q8_relaxed_simd128.h's
// Q4RelaxedCodes block sums, one input splat meeting every panel's groups, and the same bits as
// one panel at a time: q8_panel_groups_simd128.h's group frame with this kernel's steps. Which
// panels, and why: q4_relaxed_panels below.
#pragma once

#include <wasm_simd128.h>

#include "kernels/simd128/q8_panel_groups_simd128.h"
#include "kernels/simd128/q8_relaxed_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Two panels side by side for a prefill's rows (panel_pair_rows, the pair frame's step): each
// row's input splats meet both panels' groups (per 64 weights and row 2 splats, 4 dot products
// and 4 adds, where a panel at a time takes 2 splats per 32). Blocks whose zero points are all 8
// in both panels (every block quantised at load) keep one int16 sum per row and panel,
// start_sums' wrap; any other block takes each panel's block_dot. The projection alone, 512
// rows, one thread, against a panel at a time (bench/decode/projection/run.sh, ROWS=512):
// Chromium 1.09-1.22×, Firefox 1.04-1.16×; 3 rows a block ran 1.0-1.1×, 2 rows 0.8-1.0× (V8 has
// 15 vector registers for 8 sums, 4 nibble vectors, 2 splats and the mask); for a decode step's
// one row, adjacent panels gained nothing (0.94-1.01×): it takes RelaxedWholeBlocks, far apart.
struct RelaxedGroupsInTurn {
  template <int R, int N>
  static void dots(const std::array<Q4RelaxedCodes, N>& codes, int b, int k0, int k1, const InputRows<R>& in,
                   v128_t lo[N][R], v128_t hi[N][R]) {
    static_assert(N == 2, "adjacent pairs");
    const Q4RelaxedCodes &a = codes[0], &c = codes[1];
    if (a.zero_points[b] != storage::kQ4EightEverywhere || c.zero_points[b] != storage::kQ4EightEverywhere) {
      return BlocksInTurn<Q4RelaxedCodes>::dots<R, N>(codes, b, k0, k1, in, lo, hi);
    }
    v128_t s[2][R];
    for (int r = 0; r < R; ++r) s[0][r] = s[1][r] = wasm_v128_load32_splat(in.minus_8_sums[r] + b);
    const std::uint8_t *ga = a.codes + storage::q4_byte(k0, 0), *gc = c.codes + storage::q4_byte(k0, 0);
    const std::uint8_t* end = a.codes + storage::q4_groups_end(k0, k1);
    __asm__("" : "+r"(end));  // each_group's loop, two panels' groups a step
    for (int k = k0; ga != end; ga += storage::kQ4GroupBytes, gc += storage::kQ4GroupBytes, k += storage::kQ4GroupRows) {
      v128_t la, ha, lc, hc;
      Q4Codes::nibbles(wasm_v128_load(ga), la, ha);
      Q4Codes::nibbles(wasm_v128_load(gc), lc, hc);
      for (int r = 0; r < R; ++r) {
        const v128_t x01 = wasm_v128_load16_splat(in.codes[r] + k), x23 = wasm_v128_load16_splat(in.codes[r] + k + 2);
        s[0][r] = wasm_i16x8_add(s[0][r], wasm_i16x8_add(relaxed_dot_i16(x01, la), relaxed_dot_i16(x23, ha)));
        s[1][r] = wasm_i16x8_add(s[1][r], wasm_i16x8_add(relaxed_dot_i16(x01, lc), relaxed_dot_i16(x23, hc)));
      }
    }
    widen_sums<R, 2>(s, lo, hi);
  }
  // lo, hi = each of N panels' int16 sums s widened (int32 lanes, columns 0-3 and 4-7).
  template <int R, int N>
  static void widen_sums(const v128_t s[N][R], v128_t lo[N][R], v128_t hi[N][R]) {
    for (int i = 0; i < N; ++i) {
      for (int r = 0; r < R; ++r) {
        lo[i][r] = wasm_i32x4_extend_low_i16x8(s[i][r]);
        hi[i][r] = wasm_i32x4_extend_high_i16x8(s[i][r]);
      }
    }
  }
};

// A decode step's (one input row, every block whole): whole_block_one_row for N panels at once
// (kFarPanels, or 2 for a short range), its 8 groups straight-line, each splat of the input
// meeting every panel's group; a panel's nibbles live only for its two dot products, so 4 panels
// take no more registers than 2 but for their sums.
struct RelaxedWholeBlocks {
  template <int R, int N>
  static void dots(const std::array<Q4RelaxedCodes, N>& codes, int b, int, int, const InputRows<R>& in,
                   v128_t lo[N][R], v128_t hi[N][R]) {
    static_assert(R == 1, "a decode step's group step");
    bool z8 = true;
    for (int i = 0; i < N; ++i) z8 = z8 && codes[i].zero_points[b] == storage::kQ4EightEverywhere;
    if (!z8) {
      for (int i = 0; i < N; ++i) codes[i].whole_block_one_row(b, in, lo[i], hi[i]);
      return;
    }
    v128_t s[N][1];
    s[0][0] = wasm_v128_load32_splat(in.minus_8_sums[0] + b);
    for (int i = 1; i < N; ++i) s[i][0] = s[0][0];
    const std::size_t first = storage::q4_byte(b * storage::kQuantBlock, 0);
    const std::int8_t* x = in.codes[0] + b * storage::kQuantBlock;
    _Pragma("clang loop unroll(full)") for (int g = 0; g < storage::kQuantBlock / storage::kQ4GroupRows; ++g) {
      const std::int8_t* at = x + storage::kQ4GroupRows * g;
      const v128_t x01 = wasm_v128_load16_splat(at), x23 = wasm_v128_load16_splat(at + 2);
      for (int i = 0; i < N; ++i) {
        v128_t l, h;
        Q4Codes::nibbles(wasm_v128_load(codes[i].codes + first + storage::kQ4GroupBytes * g), l, h);
        s[i][0] = wasm_i16x8_add(s[i][0], wasm_i16x8_add(relaxed_dot_i16(x01, l), relaxed_dot_i16(x23, h)));
      }
    }
    RelaxedGroupsInTurn::widen_sums<1, N>(s, lo, hi);
  }
};

// Every row of q times panels p and p + 1, kRows at a time, then one by one. Never inlined, as
// panel_rows.
__attribute__((noinline)) inline void panel_pair_rows(const Q8Rows& q, const PackedLinear& w, int p, float* y,
                                                      std::ptrdiff_t y_stride) {
  const std::array<Q4RelaxedCodes, 2> codes = panel_codes<Q4RelaxedCodes, 2>(w, p, 1);
  int r = 0;
  for (; r + kRows <= q.rows; r += kRows) {
    rows_times_panel_group<Q4RelaxedCodes, RelaxedGroupsInTurn, kRows, 2>(codes, q, r, w, p, 1, y + r * y_stride, y_stride);
  }
  for (; r < q.rows; ++r) {
    rows_times_panel_group<Q4RelaxedCodes, RelaxedGroupsInTurn, 1, 2>(codes, q, r, w, p, 1, y + r * y_stride, y_stride);
  }
}

// The relaxed int4 kernel's panels (panels_in_groups): a prefill's rows in adjacent pairs
// (panel_pair_rows), a decode step's in far groups of kFarPanels (RelaxedWholeBlocks); one row
// with a partial last block (rare: an input width not a multiple of 32) one panel at a time.
inline void q4_relaxed_panels(const Q8Rows& q, const LinearTarget* targets, int target_count) {
  const auto one_row = [](auto n, const Q8Rows& rows, const PackedLinear& w, int p, int stride, float* y) {
    constexpr int N = decltype(n)::value;
    if (w.in % storage::kQuantBlock == 0) return panel_group_one_row<Q4RelaxedCodes, RelaxedWholeBlocks, N>(rows, w, p, stride, y);
    for (int i = 0; i < N; ++i) panel_rows<Q4RelaxedCodes>(rows, w, p + i * stride, y, 0);
  };
  panels_in_groups(q, targets, target_count, one_row, panel_pair_rows, panel_rows<Q4RelaxedCodes>);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
