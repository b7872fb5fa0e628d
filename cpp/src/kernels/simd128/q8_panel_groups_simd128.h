// Several panels at a time for the int8-activation kernels (q8_linear_simd128.h's Codes), and
// which panels a call takes together (panels_in_groups). A decode step (one input row) takes them
// in groups of kFarPanels (far_panels.h) or in pairs, whichever its first calls ran faster
// (far_stream_choice.h), a group's panels an N-th of the target's panel range apart (p + i, p +
// stride + i, ...: far_panels.h, why), int8 and int4 weights alike. Measured:
// docs/performance/decode_kernels.md#decode-kernels (pairs against a panel at a time, then groups of 4 against pairs).
#pragma once

#include <emscripten/emscripten.h>
#include <wasm_simd128.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "kernels/far_panels.h"
#include "kernels/far_stream_choice.h"
#include "kernels/simd128/q4_codes_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// A range of panels shorter than this many per stream goes in pairs. A two-thread step's chunks
// (16-24 panels at E 2048, projection.cpp) in groups of 4, against pairs, the 24-layer stack's
// token (two builds in one process, mt-relaxed): int8 × int8 about 1.03× slower on the Zen 3 VM,
// 0.92× the time on the Xeon VM (int4 × int8 0.91×, its 4 far panels included).
constexpr int kFarStreamMinPanels = 4;

// Codes of panels p0, p0 + stride, ..., p0 + (N - 1) · stride.
template <class Codes, std::size_t... I>
std::array<Codes, sizeof...(I)> panel_codes(const PackedLinear& w, int p0, int stride, std::index_sequence<I...>) {
  return {Codes(w, p0 + static_cast<int>(I) * stride)...};
}
template <class Codes, int N>
std::array<Codes, N> panel_codes(const PackedLinear& w, int p0, int stride) {
  return panel_codes<Codes>(w, p0, stride, std::make_index_sequence<N>());
}

// Block b's sums of N panels for R input rows (Dots: the group frame's step), one panel after
// the other (Codes::block_dot).
template <class Codes>
struct BlocksInTurn {
  template <int R, int N>
  static void dots(const std::array<Codes, N>& codes, int b, int k0, int k1, const InputRows<R>& in, v128_t lo[N][R],
                   v128_t hi[N][R]) {
    for (int i = 0; i < N; ++i) codes[i].template block_dot<R>(b, k0, k1, in, lo[i], hi[i]);
  }
};

// The SIMD128 int4 kernel's, one input row: the group's N panels' groups of 4 weight rows
// interleaved (Q4Codes::group_one_row, whose input splats clang shares between them), their sums
// in locals. History (the Zen 3 VM, then the Xeon VM): BlocksInTurn ran 0.58-0.61× a panel at a
// time; pairs against a panel at a time, streamed from memory, 1.16-1.24× (Firefox 0.84-1.17×);
// two pairs a block against one pair, streamed 2.10-2.64×. With the sums in locals and
// group_one_row (Xeon VM, the projection alone, Node): pairs 1.20× the code before in the L3 and
// 1.13× streamed, 4 panels together 1.34× and 1.20× (Chromium and Firefox 1.25-1.29× streamed);
// before, the sums went through memory and 4 panels together spilled (0.84-0.88× in the L3).
struct Q4GroupsInTurn {
  template <int R, int N>
  static void dots(const std::array<Q4Codes, N>& codes, int b, int k0, int k1, const InputRows<R>& in, v128_t lo[N][R],
                   v128_t hi[N][R]) {
    static_assert(R == 1, "a decode step's group step");
    // The sums in locals: through lo and hi (which may alias the codes, to clang) each group's
    // load and store of them made a chain through memory.
    v128_t l[N], h[N];
    const std::uint8_t* g[N];
    for (int i = 0; i < N; ++i) {
      l[i] = h[i] = wasm_i32x4_splat(0);
      g[i] = codes[i].codes + storage::q4_byte(k0, 0);
    }
    const std::uint8_t* end = codes[0].codes + storage::q4_groups_end(k0, k1);
    __asm__("" : "+r"(end));  // each_group's loop, N panels' groups a step
    for (const std::int16_t* x = in.q4_one_row + k0; g[0] != end; x += storage::kQ4GroupRows) {
      for (int i = 0; i < N; ++i) {
        Q4Codes::group_one_row(wasm_v128_load(g[i]), x, l[i], h[i]);
        g[i] += storage::kQ4GroupBytes;
      }
    }
    for (int i = 0; i < N; ++i) {
      lo[i][0] = l[i];
      hi[i][0] = h[i];
      Q4Codes::subtract_zero_points<1>(codes[i].zero_points[b], in, b, lo[i], hi[i]);
    }
  }
};

// The group frame: rows [r0, r0 + R) of y (y points at row r0) times the N panels of `codes`
// (panel_codes(w, p0, stride)): rows_times_panel's arithmetic for each, each block's sums by Dots.
template <class Codes, class Dots, int R, int N>
void rows_times_panel_group(const std::array<Codes, N>& codes, const Q8Rows& q, int r0, const PackedLinear& w, int p0,
                            int stride, float* y, std::ptrdiff_t y_stride) {
  InputRows<R> in;
  const float* dx[R];
  alignas(16) float acc[N][R][kPanelWidth] = {};
  input_rows<R>(q, r0, in, dx);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo[N][R], hi[N][R];
    Dots::template dots<R, N>(codes, b, k0, k1, in, lo, hi);
    for (int i = 0; i < N; ++i) add_scaled_rows<R>(codes[i].block_scales(b), dx, b, lo[i], hi[i], acc[i]);
  }
  for (int i = 0; i < N; ++i) store_rows<R>(acc[i], w, p0 + i * stride, y, y_stride);
}

// The group size a one-row callback is called for (panels_in_groups).
template <int N>
using GroupSize = std::integral_constant<int, N>;

// One input row (a decode step's) times N panels stride apart from p0 (y: the output row). Never
// inlined, as panel_rows.
template <class Codes, class Dots, int N>
__attribute__((noinline)) void panel_group_one_row(const Q8Rows& q, const PackedLinear& w, int p0, int stride, float* y) {
  rows_times_panel_group<Codes, Dots, 1, N>(panel_codes<Codes, N>(w, p0, stride), q, 0, w, p0, stride, y, 0);
}

// The calling thread's choice of a decode step's group size (far_stream_choice.h), one per
// kernel (each file that includes this its own): each thread times its own calls, as a pthreads
// module's chunks run on two.
inline FarStreamChoice& far_stream_choice() {
  thread_local FarStreamChoice choice;
  return choice;
}

// Every target's panels of one input row (a decode step's) by group_one_row(GroupSize<N>, q, w,
// p0, stride, y) in groups of N a N-th of the range apart (far_panel_groups): N =
// far_stream_choice()'s size, or 2 for a range shorter than kFarPanels · kFarStreamMinPanels;
// the panels left after the groups by single(q, w, p, y, y_stride). Timed while the choice is
// open: its work the panels' blocks.
template <class GroupOneRow, class Single>
void one_row_in_groups(const Q8Rows& q, const LinearTarget* targets, int target_count, GroupOneRow&& group_one_row,
                       Single&& single) {
  FarStreamChoice& choice = far_stream_choice();
  const int size = choice.group();
  const bool timing = choice.timing();
  const double start = timing ? emscripten_get_now() : 0.0;
  double work = 0.0;
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    const int p = targets[t].panel_begin, end = targets[t].panels_end();
    float* y = targets[t].y;
    const auto groups = [&](auto n) {
      far_panel_groups<decltype(n)::value>(
          p, end, [&](int p0, int stride) { group_one_row(n, q, w, p0, stride, y); },
          [&](int last) { single(q, w, last, y, targets[t].y_stride); });
    };
    if (size == FarStreamChoice::kPairs || end - p < kFarPanels * kFarStreamMinPanels) {
      groups(GroupSize<FarStreamChoice::kPairs>());
    } else {
      groups(GroupSize<kFarPanels>());
    }
    work += static_cast<double>(end - p) * w.scale_blocks();
  }
  choice.record(size, timing ? emscripten_get_now() - start : 0.0, work);
}

// Every target's panels of q: one input row by one_row_in_groups; kWideRows rows or more by
// pair_rows(q, w, p, y, y_stride) in adjacent pairs where given (nullptr: none); the rest by
// single(q, w, p, y, y_stride).
template <class GroupOneRow, class PairRows, class Single>
void panels_in_groups(const Q8Rows& q, const LinearTarget* targets, int target_count, GroupOneRow&& group_one_row,
                      PairRows&& pair_rows, Single&& single) {
  if (q.rows == 1) return one_row_in_groups(q, targets, target_count, group_one_row, single);
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    int p = targets[t].panel_begin;
    const int end = targets[t].panels_end();
    if constexpr (!std::is_same_v<std::decay_t<PairRows>, std::nullptr_t>) {
      if (q.rows >= kWideRows) {
        for (; p + 1 < end; p += 2) pair_rows(q, w, p, targets[t].y, targets[t].y_stride);
      }
    }
    for (; p < end; ++p) single(q, w, p, targets[t].y, targets[t].y_stride);
  }
}

// Codes' kernel over quantised rows q, a decode step's panels in far groups, their sums by Dots
// (the rest one at a time).
template <class Codes, class Dots = BlocksInTurn<Codes>>
void rows_in_groups(const Q8Rows& q, const LinearTarget* targets, int target_count) {
  const auto one_row = [](auto n, const Q8Rows& rows, const PackedLinear& w, int p0, int stride, float* y) {
    panel_group_one_row<Codes, Dots, decltype(n)::value>(rows, w, p0, stride, y);
  };
  panels_in_groups(q, targets, target_count, one_row, nullptr, panel_rows<Codes>);
}

// The same from x, quantised first (q8_rows.h's q8_linear_rows).
template <class Codes, class Dots = BlocksInTurn<Codes>>
void linear_in_groups(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets, int target_count) {
  q8_linear_rows(x, rows, x_stride, targets, target_count, quantise_rows, rows_in_groups<Codes, Dots>);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
