// Projection kernel for int8 activations, WebAssembly SIMD128: q8_rows.h's rule, lane by lane
// (column c's lane does the scalar kernel's f32 operations, in its order, so every module gives
// the same bits). Each block's integer dot products come from i32x4.dot_i16x8_s on codes widened to
// int16: two input values × 4 columns per instruction, the input codes splat as an (x_k, x_k+1)
// pair. int4 weights: q4_codes_simd128.h's Q4Codes; the relaxed modules' int4 kernel
// (q8_relaxed_simd128.h) replaces its block_dot by i16x8.relaxed_dot_i8x16_i7x16_s on the codes'
// bytes, the same integers.
// i8q8_linear_simd128.cpp and q4q8_linear_simd128.cpp run their Codes through
// q8_panel_groups_simd128.h's driver.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/q8_rows.h"
#include "kernels/simd128/pair_panels_simd128.h"
#include "kernels/simd128/q8_quantise_simd128.h"

namespace webattention::kernels::simd128_q8 {
namespace {

// Up to kRows input rows share each load and widening of the weights (a prefill; a decode step
// has one row).
constexpr int kRows = 4;

// A block of a panel widened to int16 (WideCodes below): 32 rows × 8 columns.
constexpr int kWideBlock = storage::kQuantBlock * kPanelWidth;

// The (x_k, x_k+1) int16 pair splat to every i32 lane.
inline v128_t pair_at(const std::int16_t* x, int k) { return wasm_v128_load32_splat(x + k); }

// R input rows of the quantised block being multiplied: their int16 codes, their int8 codes and
// −8 · Σ q_x (the relaxed kernel's operands), and Σ q_x per block; for one row of a one-row
// quantisation also Q8Rows::q4_one_row (else null).
template <int R>
struct InputRows {
  const std::int16_t* x[R];
  const std::int16_t* q4_one_row = nullptr;
  const std::int8_t* codes[R];
  const std::int32_t* sums[R];
  const std::uint32_t* minus_8_sums[R];
};

// int8 weights in row pairs (PackedLinear::i8_row_pairs: 16 bytes hold rows k, k+1 as (c, k),
// (c, k+1) pairs, columns 0-7; each block's 16 pairs followed by its scales, storage_convert.h's
// i8_pair_byte): each half sign-extended to int16 as it loads is 4 columns' pairs
// as i32x4.dot_i16x8_s takes them, dotted with the input's (x_k, x_k+1) pair: columns 0-3 into lo,
// 4-7 into hi. Per 16 weights 2 dots and 2 adds after the loads; codes in rows of 8 took 2
// unpacks more.
struct I8Codes {
  // No whole_block_one_row (one_row_whole_blocks): its 16 row pairs straight-line ran 0.77-0.81×
  // block_dot's loop in Chromium (0.56-0.59× in Node), in the rows-of-8 layout.
  static constexpr int kMaxRows = kRows;  // input rows per row block
  const std::int8_t* p;
  const float* scales;  // block 0's
  static constexpr int kScaleStride = storage::kI8PairBlocks.scale_stride();  // floats from a block's scales to the next's
  I8Codes(const PackedLinear& w, int panel) : p(w.i8_pair_panel(panel)), scales(w.block_scales(panel, 0)) {}
  const float* block_scales(int b) const { return scales + b * kScaleStride; }
  // The pair of rows (k, k + 1), k even.
  const std::int8_t* pair(int k) const { return p + storage::i8_pair_byte(k, 0); }
  // lo, hi += the row pair at `pair` times each input row's pair at `k` (x rows from `in`).
  template <int R>
  static void madd(const std::int8_t* pair, const InputRows<R>& in, int k, v128_t lo[R], v128_t hi[R]) {
    const v128_t w03 = wasm_i16x8_load8x8(pair), w47 = wasm_i16x8_load8x8(pair + kPanelWidth);
    for (int r = 0; r < R; ++r) {
      const v128_t x = pair_at(in.x[r], k);
      lo[r] = wasm_i32x4_add(lo[r], wasm_i32x4_dot_i16x8(w03, x));
      hi[r] = wasm_i32x4_add(hi[r], wasm_i32x4_dot_i16x8(w47, x));
    }
  }
  // Block b's dot products Σ q_w·q_x over weight rows [k0, k1), per input row; an odd last row
  // pairs with the stored zero row and the inputs' zeros past their end.
  template <int R>
  void block_dot(int, int k0, int k1, const InputRows<R>& in, v128_t lo[R], v128_t hi[R]) const {
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = wasm_i32x4_splat(0);
    if (R == 1 && k1 - k0 == storage::kQuantBlock) {
      // A whole block for one input row: pointers stepped (V8 then addresses the loads without a
      // multiply-add each), unrolled by 2 only: fully unrolled, clang hoists every load and V8
      // spills them, so the end is hidden from clang too.
      const std::int8_t *a = pair(k0), *end = a + storage::kI8PairBlocks.code_bytes;
      __asm__("" : "+r"(end));
      InputRows<R> at = in;
      at.x[0] += k0;
      _Pragma("clang loop unroll_count(2)") for (; a != end; a += 2 * kPanelWidth, at.x[0] += 2) madd<R>(a, at, 0, lo, hi);
      return;
    }
    for (int k = k0; k < k1; k += 2) madd<R>(pair(k), in, k, lo, hi);
  }
  // Block b's rows [k0, k1) as WideCodes lays them out (out: kWideBlock int16, zeros past k1):
  // the pairs widened where they lie.
  void widen_block(int, int k0, int k1, std::int16_t* out) const {
    int k = k0;
    for (; k < k1; k += 2, out += 2 * kPanelWidth) {
      const v128_t pairs = wasm_v128_load(pair(k));
      wasm_v128_store(out, wasm_i16x8_extend_low_i8x16(pairs));
      wasm_v128_store(out + 8, wasm_i16x8_extend_high_i8x16(pairs));
    }
    for (; k < k0 + storage::kQuantBlock; k += 2, out += 2 * kPanelWidth) {
      wasm_v128_store(out, wasm_i32x4_splat(0));
      wasm_v128_store(out + 8, wasm_i32x4_splat(0));
    }
  }
};

// A panel's codes widened once for all the rows of a call (panel_rows, from kWideRows rows): per
// block kWideBlock int16, per pair of weight rows (k, k+1) 16: columns 0-3 as (c, k), (c, k+1)
// pairs, then columns 4-7, zero point subtracted. The inner loop is then a load per 4 columns and,
// per input row, a splat and a dot and an add per 4 columns: no shuffle or widening per row block.
struct WideCodes {
  static constexpr int kMaxRows = kRows;
  const std::int16_t* codes;
  const float* scales;
  int scale_stride;  // the codes' kScaleStride
  const float* block_scales(int b) const { return scales + b * scale_stride; }
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

// acc += (s_w · d_x) · the block's integer sums, columns 0-3 (lo) and 4-7 (hi): q8_rows.h's rule,
// s the block's column scales (s_lo, s_hi: columns 0-3, 4-7, loaded once for all its rows), d its
// input row's.
inline void add_scaled_block(v128_t s_lo, v128_t s_hi, float d, v128_t lo, v128_t hi, v128_t& acc_lo, v128_t& acc_hi) {
  const v128_t dv = wasm_f32x4_splat(d);
  acc_lo = wasm_f32x4_add(acc_lo, wasm_f32x4_mul(wasm_f32x4_mul(s_lo, dv), wasm_f32x4_convert_i32x4(lo)));
  acc_hi = wasm_f32x4_add(acc_hi, wasm_f32x4_mul(wasm_f32x4_mul(s_hi, dv), wasm_f32x4_convert_i32x4(hi)));
}

// acc[r] += block b's sums (lo[r], hi[r]) scaled, for each of R rows: add_scaled_block with the
// block's column scales s, the accumulators in memory (rows_times_panel says why).
template <int R>
void add_scaled_rows(const float* s, const float* const dx[R], int b, const v128_t lo[R], const v128_t hi[R],
                     float (*acc)[kPanelWidth]) {
  const v128_t s_lo = wasm_v128_load(s), s_hi = wasm_v128_load(s + 4);
  for (int r = 0; r < R; ++r) {
    v128_t acc_lo = wasm_v128_load(acc[r]), acc_hi = wasm_v128_load(acc[r] + 4);
    add_scaled_block(s_lo, s_hi, dx[r][b], lo[r], hi[r], acc_lo, acc_hi);
    wasm_v128_store(acc[r], acc_lo);
    wasm_v128_store(acc[r] + 4, acc_hi);
  }
}

// in, dx = quantised rows [r0, r0 + R) of q: their operands and their blocks' scales d_x.
template <int R>
void input_rows(const Q8Rows& q, int r0, InputRows<R>& in, const float* dx[R]) {
  for (int r = 0; r < R; ++r) {
    in.x[r] = q.wide_row(r0 + r);
    in.codes[r] = q.row(r0 + r);
    in.sums[r] = q.row_sums(r0 + r);
    in.minus_8_sums[r] = q.row_minus_8_sums(r0 + r);
    if (R == 1 && q.rows == 1) in.q4_one_row = q.q4_one_row.data();
    dx[r] = q.row_scales(r0 + r);
  }
}

// Whether Codes has whole_block_one_row (one_row_whole_blocks' step).
template <class Codes, class = void>
struct HasWholeBlockOneRow : std::false_type {};
template <class Codes>
struct HasWholeBlockOneRow<Codes, std::void_t<decltype(&Codes::whole_block_one_row)>> : std::true_type {};

// acc[0 .. 8) = one input row (a decode step's) times the panel, every block whole (the input's
// width a multiple of 32): rows_times_panel's arithmetic, each block's sums from the codes'
// straight-line whole_block_one_row (no per-block loop to work out), the accumulators in registers.
template <class Codes>
void one_row_whole_blocks(const Codes& codes, const InputRows<1>& in, const float* dx, int blocks, float* acc) {
  v128_t acc_lo = wasm_f32x4_splat(0.0f), acc_hi = wasm_f32x4_splat(0.0f);
  for (int b = 0; b < blocks; ++b) {
    v128_t lo[1], hi[1];
    codes.whole_block_one_row(b, in, lo, hi);
    const float* s = codes.block_scales(b);
    add_scaled_block(wasm_v128_load(s), wasm_v128_load(s + 4), dx[b], lo[0], hi[0], acc_lo, acc_hi);
  }
  wasm_v128_store(acc, acc_lo);
  wasm_v128_store(acc + 4, acc_hi);
}

// y's R rows (y_stride apart), columns [8p, 8p + 8) below w.out = acc + bias.
template <int R>
void store_rows(float (*acc)[kPanelWidth], const PackedLinear& w, int p, float* y, std::ptrdiff_t y_stride) {
  const int n0 = p * kPanelWidth, cols = w.panel_columns(p);
  const v128_t bias_lo = bias_or_zero(w, n0), bias_hi = bias_or_zero(w, n0 + 4);
  for (int r = 0; r < R; ++r) {
    store_panel_row(y + r * y_stride + n0, wasm_f32x4_add(wasm_v128_load(acc[r]), bias_lo),
                    wasm_f32x4_add(wasm_v128_load(acc[r] + 4), bias_hi), cols);
  }
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
  input_rows<R>(q, r0, in, dx);
  if constexpr (R == 1 && HasWholeBlockOneRow<Codes>::value) {
    if (w.in % storage::kQuantBlock == 0) {  // every block whole: the one-row loop's case
      one_row_whole_blocks(codes, in, dx[0], q.blocks, acc[0]);
      return store_rows<R>(acc, w, p, y, y_stride);
    }
  }
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock, k1 = std::min(w.in, k0 + storage::kQuantBlock);
    v128_t lo[R], hi[R];
    codes.template block_dot<R>(b, k0, k1, in, lo, hi);
    add_scaled_rows<R>(codes.block_scales(b), dx, b, lo, hi, acc);
  }
  store_rows<R>(acc, w, p, y, y_stride);
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
// row block, unless Codes says kWidenForManyRows = false; fewer rows (a decode step) read the
// packed codes, widening them per row block.
constexpr int kWideRows = 2 * kRows;
template <class Codes, class = void>
struct WidensForManyRows : std::true_type {};
template <class Codes>
struct WidensForManyRows<Codes, std::void_t<decltype(Codes::kWidenForManyRows)>>
    : std::bool_constant<Codes::kWidenForManyRows> {};

// Every row of q times panel p. Never inlined, so that V8 swaps in optimised code between panels
// of a first call (linear_simd128.h's panel_rows).
template <class Codes>
__attribute__((noinline)) void panel_rows(const Q8Rows& q, const PackedLinear& w, int p, float* y, std::ptrdiff_t y_stride) {
  const Codes codes(w, p);
  if (q.rows < kWideRows || !WidensForManyRows<Codes>::value) {
    rows_times_codes(codes, q, w, p, y, y_stride);
    return;
  }
  std::int16_t* wide = wide_scratch(q.blocks);
  for (int b = 0; b < q.blocks; ++b) {
    const int k0 = b * storage::kQuantBlock;
    codes.widen_block(b, k0, std::min(w.in, k0 + storage::kQuantBlock), wide + b * kWideBlock);
  }
  rows_times_codes(WideCodes{wide, codes.scales, Codes::kScaleStride}, q, w, p, y, y_stride);
}

// This ISA's quantised rows: f32x4 blocks (q8_quantise_simd128.h), codes widened to int16 too.
inline void quantise_rows(const float* x, int rows, std::ptrdiff_t x_stride, int in, Q8Rows& q) {
  q.quantise(x, rows, x_stride, in, Widening::int16, quantise_block_simd128);
}

}  // namespace
}  // namespace webattention::kernels::simd128_q8
