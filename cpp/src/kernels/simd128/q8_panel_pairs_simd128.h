// Two panels at a time for the int8-activation kernels (q8_linear_simd128.h's Codes), and which
// panels a call takes together (panels_in_pairs). A decode step (one input row) takes them in
// pairs half the target's panel range apart (p + i with p + half + i: far_panels.h, why). The projection, one thread, weights streamed from memory
// (COPIES=24 ROWS=1 bash bench/decode/projection/run.sh, A/B): int8 × int8 1.18-1.50× in Node,
// Chromium and Firefox, simd and relaxed modules; relaxed int4 (its own pair step,
// q8_relaxed_pairs_simd128.h) 1.04-1.33×, SIMD128 int4 (Q4GroupsInTurn) 0.84-1.24×; in
// the L3, 0.84-1.28×. Two panels side by side (8 KB apart) ran 0.61-0.85×.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "kernels/far_panels.h"
#include "kernels/simd128/q8_linear_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Block b's sums of panels a and c for R input rows (Dots: the pair frame's step), one panel
// after the other (Codes::block_dot).
template <class Codes>
struct BlocksInTurn {
  template <int R>
  static void dots(const Codes& a, const Codes& c, int b, int k0, int k1, const InputRows<R>& in, v128_t lo[2][R],
                   v128_t hi[2][R]) {
    a.template block_dot<R>(b, k0, k1, in, lo[0], hi[0]);
    c.template block_dot<R>(b, k0, k1, in, lo[1], hi[1]);
  }
};

// The SIMD128 int4 kernel's, one input row: the two panels' groups of 4 weight rows interleaved
// (Q4Codes::group, whose input splats clang shares between the two), where BlocksInTurn ran
// 0.58-0.61× a panel at a time. Streamed from memory, against a panel at a time: Node 1.16-1.20×,
// Chromium 1.20-1.24×, Firefox 0.84-1.17× (in the L3: 1.15-1.19×, 0.80-0.85× in Firefox, whose
// browser entry takes the relaxed module wherever its dot product pays, as on this project's
// machines).
struct Q4GroupsInTurn {
  template <int R>
  static void dots(const Q4Codes& a, const Q4Codes& c, int b, int k0, int k1, const InputRows<R>& in, v128_t lo[2][R],
                   v128_t hi[2][R]) {
    static_assert(R == 1, "a decode step's pair step");
    for (int i = 0; i < 2; ++i) lo[i][0] = hi[i][0] = wasm_i32x4_splat(0);
    const std::uint8_t *ga = a.codes + storage::q4_byte(k0, 0), *gc = c.codes + storage::q4_byte(k0, 0);
    const std::uint8_t* end = a.codes + storage::q4_byte(storage::q4_stored_rows(k1), 0);
    __asm__("" : "+r"(end));  // each_group's loop, two panels' groups a step
    const std::int16_t* x = in.x[0] + k0;
    for (; ga != end; ga += storage::kQ4GroupBytes, gc += storage::kQ4GroupBytes, x += storage::kQ4GroupRows) {
      const std::int16_t* const xs[1] = {x};
      Q4Codes::group<1>(wasm_v128_load(ga), xs, lo[0], hi[0]);
      Q4Codes::group<1>(wasm_v128_load(gc), xs, lo[1], hi[1]);
    }
    Q4Codes::subtract_zero_points<1>(a.zero_points[b], in, b, lo[0], hi[0]);
    Q4Codes::subtract_zero_points<1>(c.zero_points[b], in, b, lo[1], hi[1]);
  }
};

// The pair frame: rows [r0, r0 + R) of y (y points at row r0) times panels p and p2 (a, c):
// rows_times_panel's arithmetic for both, each block's sums by Dots.
template <class Codes, class Dots, int R>
void rows_times_panel_pair(const Codes& a, const Codes& c, const Q8Rows& q, int r0, const PackedLinear& w, int p, int p2,
                           float* y, std::ptrdiff_t y_stride) {
  InputRows<R> in;
  const float* dx[R];
  alignas(16) float acc[2][R][kPanelWidth] = {};
  input_rows<R>(q, r0, in, dx);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo[2][R], hi[2][R];
    Dots::template dots<R>(a, c, b, k0, k1, in, lo, hi);
    add_scaled_rows<R>(a.scales + b * kPanelWidth, dx, b, lo[0], hi[0], acc[0]);
    add_scaled_rows<R>(c.scales + b * kPanelWidth, dx, b, lo[1], hi[1], acc[1]);
  }
  store_rows<R>(acc[0], w, p, y, y_stride);
  store_rows<R>(acc[1], w, p2, y, y_stride);
}

// One input row (a decode step's) times panels p and p2 (y: the output row). Never inlined, as
// panel_rows.
template <class Codes, class Dots = BlocksInTurn<Codes>>
__attribute__((noinline)) void panel_pair_one_row(const Q8Rows& q, const PackedLinear& w, int p, int p2, float* y) {
  rows_times_panel_pair<Codes, Dots, 1>(Codes(w, p), Codes(w, p2), q, 0, w, p, p2, y, 0);
}

// Every target's panels of q: one input row by pair_one_row(q, w, p, p2, y) in pairs half the
// range apart; kWideRows rows or more by pair_rows(q, w, p, y, y_stride) in adjacent pairs where
// given (nullptr: none); the rest, and an odd last panel, by single(q, w, p, y, y_stride).
template <class PairOneRow, class PairRows, class Single>
void panels_in_pairs(const Q8Rows& q, const LinearTarget* targets, int target_count, PairOneRow&& pair_one_row,
                     PairRows&& pair_rows, Single&& single) {
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    int p = targets[t].panel_begin;
    const int end = targets[t].panels_end();
    if (q.rows == 1) {
      float* y = targets[t].y;
      far_panel_groups<2>(
          p, end, [&](int p0, int half) { pair_one_row(q, w, p0, p0 + half, y); },
          [&](int last) { single(q, w, last, y, targets[t].y_stride); });
      continue;
    }
    if constexpr (!std::is_same_v<std::decay_t<PairRows>, std::nullptr_t>) {
      if (q.rows >= kWideRows) {
        for (; p + 1 < end; p += 2) pair_rows(q, w, p, targets[t].y, targets[t].y_stride);
      }
    }
    for (; p < end; ++p) single(q, w, p, targets[t].y, targets[t].y_stride);
  }
}

// Codes' kernel over quantised rows q, a decode step's panels in pairs, their sums by Dots (the
// rest one at a time).
template <class Codes, class Dots = BlocksInTurn<Codes>>
void rows_in_pairs(const Q8Rows& q, const LinearTarget* targets, int target_count) {
  panels_in_pairs(q, targets, target_count, panel_pair_one_row<Codes, Dots>, nullptr, panel_rows<Codes>);
}

// The same from x, quantised first (q8_rows.h's q8_linear_rows).
template <class Codes, class Dots = BlocksInTurn<Codes>>
void linear_in_pairs(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) {
  q8_linear_rows(x, rows, x_stride, targets, target_count, quantise_rows, rows_in_pairs<Codes, Dots>);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
