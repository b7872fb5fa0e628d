// Narrow panels read for the one-row loops (a decode step) with the fewest operations per element,
// WebAssembly SIMD128. A panel row's 8 narrow elements sit two to a 32-bit lane (columns 2i and
// 2i + 1 in lane i); each half is widened where it lies, without unpacking the pair: the row comes
// as (even columns 0, 2, 4, 6; odd columns 1, 3, 5, 7), and the caller restores the column order
// once, when it stores (to_pairs / from_pairs). Each reader's values are the stored ones times a
// power of two that its caller undoes once per dot product instead of once per element:
//   f16  (finite only)  value · 2^-112: the caller multiplies x by 2^112 (linear_simd128.h's
//                       scaled_row, narrow_pairs_simd128.h's key_operand / value_operand);
//                       weights stored rebiased (PackedLinear::f16_rebias) value · 2^-102, x by 2^102
//   bf16                value · 1
//   int8                q · 2^16, and each block of 32 rows times its scale · 2^-16 at its end
//   int4                q - z, each block times its scales at its end
// Operations per 8 elements after the loads: f16 4 (a second load; a panel's first row 5), bf16 2,
// int8 4 (with its two conversions); the f32x4 readers of panels_simd128.h take f16 8, bf16 2,
// int8 10.
#pragma once

#include <wasm_simd128.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "kernels/far_panels.h"
#include "kernels/simd128/f32_block_simd128.h"
#include "kernels/kernels.h"
#include "kernels/simd128/panels_simd128.h"

namespace webattention::kernels {

// (columns 0-3, 4-7) ⇄ (even columns, odd columns).
inline void to_pairs(v128_t lo, v128_t hi, v128_t& even, v128_t& odd) {
  even = wasm_i32x4_shuffle(lo, hi, 0, 2, 4, 6);
  odd = wasm_i32x4_shuffle(lo, hi, 1, 3, 5, 7);
}
inline void from_pairs(v128_t even, v128_t odd, v128_t& lo, v128_t& hi) {
  lo = wasm_i32x4_shuffle(even, odd, 0, 4, 1, 5);
  hi = wasm_i32x4_shuffle(even, odd, 2, 6, 3, 7);
}

// Finite f16 (no exponent 31). The odd element fills the top half of its lane: an arithmetic shift
// right by 3 puts its sign at bit 31 and its exponent and fraction at the bottom of an f32's
// exponent field and the top of its fraction, which read as an f32 are its value times 2^-112
// exactly (subnormals as f32 subnormals); the mask clears the sign's copies and the even element's
// bits below. The even element is first shifted up into the top half.
struct F16PairPanel {
  static constexpr int kBlock = INT_MAX / 2;
  static constexpr bool kBlockScales = false;
  // A decode step's projection loop (linear_simd128.h): the sums in memory, 8 far panels a group.
  static constexpr bool kSumsInMemory = true;
  static constexpr int kFarGroup = kFarPanelsInMemory;
  // The rows read as the weights' values over f16_bits_scale(PackedLinear::f16_rebias): x times it.
  static float x_scale(const PackedLinear& w) { return f16_bits_scale(w.f16_rebias); }
  const std::uint16_t* p = nullptr;
  F16PairPanel() = default;
  F16PairPanel(const PackedLinear& w, int panel) : p(w.elements<const std::uint16_t>().panel(panel)) {}
  explicit F16PairPanel(const std::uint16_t* panel) : p(panel) {}
  // The f16 elements in the top halves of v's lanes, widened.
  static v128_t widen_top(v128_t v) {
    return wasm_v128_and(wasm_i32x4_shr(v, 3), wasm_i32x4_splat(static_cast<int>(0x8FFFE000u)));
  }
  // Row k's halves apart (block_times_pair_rows), and together from one load (row).
  v128_t odd(int k) const { return widen_top(wasm_v128_load(p + k * kPanelWidth)); }
  v128_t even(int k) const { return widen_top(wasm_i32x4_shl(wasm_v128_load(p + k * kPanelWidth), 16)); }
  void row(int k, v128_t& even_columns, v128_t& odd_columns) const {
    const v128_t v = wasm_v128_load(p + k * kPanelWidth);
    odd_columns = widen_top(v);
    even_columns = widen_top(wasm_i32x4_shl(v, 16));
  }
  // Row k >= 1's even elements: a second load one element earlier puts them in the top halves (the
  // element before, the last of row k - 1, falls under the mask): one shift less per row. Row 0 has
  // no element before it inside the panel, so it takes even().
  v128_t even_after_first(int k) const { return widen_top(wasm_v128_load(p + k * kPanelWidth - 1)); }
};

// A reader's rows after the first: F16PairPanel's even halves through even_after_first(), every
// other reader's rows as they are.
template <class Panel>
struct AfterFirst {
  static constexpr int kBlock = Panel::kBlock;
  Panel panel;
  v128_t odd(int k) const { return panel.odd(k); }  // f16 only
  v128_t even(int k) const { return panel.even_after_first(k); }
  void row(int k, v128_t& even_columns, v128_t& odd_columns) const {
    if constexpr (std::is_same_v<Panel, F16PairPanel>) {
      odd_columns = odd(k);
      even_columns = even(k);
    } else {
      panel.row(k, even_columns, odd_columns);
    }
  }
};

// bf16 is the top half of its f32: the odd element with the even one's bits cleared, the even one
// shifted up.
struct BF16PairPanel {
  static constexpr int kBlock = INT_MAX / 2;
  static constexpr bool kBlockScales = false;
  static constexpr bool kSumsInMemory = false;
  static constexpr int kFarGroup = kFarPanels;
  static float x_scale(const PackedLinear&) { return 1.0f; }
  const std::uint16_t* p = nullptr;
  BF16PairPanel() = default;
  BF16PairPanel(const PackedLinear& w, int panel) : p(w.elements<const std::uint16_t>().panel(panel)) {}
  explicit BF16PairPanel(const std::uint16_t* panel) : p(panel) {}
  void row(int k, v128_t& even, v128_t& odd) const {
    const v128_t v = wasm_v128_load(p + k * kPanelWidth);
    odd = wasm_v128_and(v, wasm_i32x4_splat(static_cast<int>(0xFFFF0000u)));
    even = wasm_i32x4_shl(v, 16);
  }
};

// int8 weights, sign-extended to 16 bits as they load: each 16-bit half, moved to the top of its
// lane, is q · 2^16 as an i32, converted exactly (|q · 2^16| < 2^24). Its block's scale (times
// 2^-16) multiplies the block's partial sums once (scale_block), not each weight.
struct I8PairPanel {
  static constexpr int kBlock = storage::kQuantBlock;
  static constexpr bool kBlockScales = true;
  static constexpr bool kSumsInMemory = true;
#ifdef WEBATTENTION_RELAXED_SIMD
  static constexpr int kFarGroup = kFarPanelsInMemory;
#else
  static constexpr int kFarGroup = kFarPanels;  // far_panels.h: 8 ran slower without fused multiply-adds
#endif
  static float x_scale(const PackedLinear&) { return 1.0f; }
  const std::int8_t* p = nullptr;
  const float* scales = nullptr;
  I8PairPanel() = default;
  I8PairPanel(const PackedLinear& w, int panel)
      : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  explicit I8PairPanel(const std::int8_t* panel) : p(panel) {}  // a cache's: its caller scales
  void start(int) {}
  void row(int k, v128_t& even, v128_t& odd) const {
    const v128_t h = wasm_i16x8_load8x8(p + k * kPanelWidth);
    odd = wasm_f32x4_convert_i32x4(wasm_v128_and(h, wasm_i32x4_splat(static_cast<int>(0xFFFF0000u))));
    even = wasm_f32x4_convert_i32x4(wasm_i32x4_shl(h, 16));
  }
  // acc += part · the scales of the block that starts at row k0 (times 2^-16).
  void scale_block(int k0, v128_t part_even, v128_t part_odd, v128_t& acc_even, v128_t& acc_odd) const {
    v128_t lo, hi, s_even, s_odd;
    i8_block_scales(scales, k0, lo, hi);
    to_pairs(lo, hi, s_even, s_odd);
    acc_even = wasm_f32x4_add(acc_even, wasm_f32x4_mul(part_even, s_even));
    acc_odd = wasm_f32x4_add(acc_odd, wasm_f32x4_mul(part_odd, s_odd));
  }
};

// A block's 8 int4 zero points (one word, storage_convert.h's q4_shift) as int32 lanes, columns 0-3
// and 4-7.
inline void q4_zero_lanes(std::uint32_t zw, v128_t& z03, v128_t& z47) {
  z03 = wasm_i32x4_make(storage::q4_code(zw, 0), storage::q4_code(zw, 1), storage::q4_code(zw, 2), storage::q4_code(zw, 3));
  z47 = wasm_i32x4_make(storage::q4_code(zw, 4), storage::q4_code(zw, 5), storage::q4_code(zw, 6), storage::q4_code(zw, 7));
}

// Q4PairPanel's rows over a block whose zero points are all 8 (storage::kQ4EightEverywhere:
// every block quantised at load, every Q4_0 one): q - 8 is the code with its top bit flipped read
// as a signed 4-bit number, so a group's 16 bytes are flipped once (one xor for its 32 codes) and
// each row's nibble is moved to the top of its lane and shifted back arithmetically, with no mask,
// no subtraction and no zero points spread into lanes (Q4PairPanel::start). The same integers as
// Q4PairPanel's, converted alike: the same bits. Operations per row of 8: 6 where Q4PairPanel
// takes 8 (7 and 5 for a group's last row).
struct Q4EightsPairPanel {
  static constexpr int kGroupRows = storage::kQ4GroupRows;
  const std::uint8_t* p = nullptr;
  Q4EightsPairPanel() = default;
  explicit Q4EightsPairPanel(const std::uint8_t* codes) : p(codes) {}
  v128_t group(int k) const {  // k a multiple of 4
    return wasm_v128_xor(wasm_v128_load(p + storage::q4_byte(k, 0)), wasm_i8x16_splat(static_cast<std::int8_t>(0x88)));
  }
  template <int J>
  void group_row(v128_t g, v128_t& even, v128_t& odd) const {
    signed_codes(g, storage::q4_row_shift(J), even, odd);
  }
  void row(int k, v128_t& even, v128_t& odd) const { signed_codes(group(k & ~3), storage::q4_row_shift(k & 3), even, odd); }

 private:
  // The flipped group g's row at bit `shift` of each half, as f32 (even, odd columns). A shift by
  // 0 (the last row's odd column, already at the top) folds away.
  __attribute__((always_inline)) static void signed_codes(v128_t g, int shift, v128_t& even, v128_t& odd) {
    even = wasm_f32x4_convert_i32x4(wasm_i32x4_shr(wasm_i32x4_shl(g, 28 - shift), 28));
    odd = wasm_f32x4_convert_i32x4(wasm_i32x4_shr(wasm_i32x4_shl(g, 12 - shift), 28));
  }
};

// int4 codes, a group of 4 rows in 16 bytes (storage_convert.h's q4_byte): as 32-bit lanes, lane i
// holds columns 2i (low half) and 2i + 1 (high half), row j of the group at bit q4_row_shift(j) of
// its half. Row k's codes are the group shifted right by its row's bit and masked (the even
// columns), and shifted 16 further (the odd ones); the block's zero points, spread into lanes at
// start(), are subtracted as integers and q - z converted exactly. Operations per row of 8 after
// its load: 8.
struct Q4PairPanel {
  static constexpr int kBlock = storage::kQuantBlock;
  static constexpr bool kBlockScales = true;
  static constexpr bool kSumsInMemory = false;  // its zero points take registers (linear_simd128.h)
  static constexpr int kFarGroup = kFarPanels;
  static float x_scale(const PackedLinear&) { return 1.0f; }
  const std::uint8_t* p = nullptr;
  const std::uint32_t* zero_points = nullptr;
  const float* scales = nullptr;
  v128_t z_even = wasm_i32x4_splat(0), z_odd = wasm_i32x4_splat(0);
  Q4PairPanel() = default;
  Q4PairPanel(const PackedLinear& w, int panel)
      : p(w.q4_panel(panel)), zero_points(w.panel_zero_points(panel)), scales(w.block_scales(storage::kQ4Blocks, panel, 0)) {}
  void start(int k0) {
    v128_t z03, z47;
    q4_zero_lanes(zero_points[k0 / kBlock], z03, z47);
    to_pairs(z03, z47, z_even, z_odd);
  }
  // Whether the block at row k0 has zero points 8 in every column; its rows then read through
  // eights_reader(), with no start().
  bool eights(int k0) const { return zero_points[k0 / kBlock] == storage::kQ4EightEverywhere; }
  Q4EightsPairPanel eights_reader() const { return Q4EightsPairPanel(p); }
  // Rows a group at a time (panels_simd128.h's row_times_panel_rows): the group's 16 bytes once,
  // each row's shift a constant.
  static constexpr int kGroupRows = storage::kQ4GroupRows;
  v128_t group(int k) const { return wasm_v128_load(p + storage::q4_byte(k, 0)); }  // k a multiple of 4
  template <int J>
  void group_row(v128_t g, v128_t& even, v128_t& odd) const {
    constexpr int shift = storage::q4_row_shift(J);
    const v128_t nibble = wasm_i32x4_splat(0xF);
    even = wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_v128_and(wasm_u32x4_shr(g, shift), nibble), z_even));
    odd = wasm_f32x4_convert_i32x4(wasm_i32x4_sub(wasm_v128_and(wasm_u32x4_shr(g, 16 + shift), nibble), z_odd));
  }
  // One row alone: its group shifted so that the row lies where group_row<0> reads.
  void row(int k, v128_t& even, v128_t& odd) const {
    group_row<0>(wasm_u32x4_shr(group(k & ~3), storage::q4_row_shift(k & 3)), even, odd);
  }
  // The scales of the block that starts at row k0, even and odd columns.
  void pair_scales(int k0, v128_t& s_even, v128_t& s_odd) const {
    const float* s = scales + (k0 / kBlock) * storage::kQ4Blocks.scale_stride();
    to_pairs(wasm_v128_load(s), wasm_v128_load(s + 4), s_even, s_odd);
  }
  // acc += part · the block's scales (I8PairPanel::scale_block's arithmetic).
  void scale_block(int k0, v128_t part_even, v128_t part_odd, v128_t& acc_even, v128_t& acc_odd) const {
    v128_t s_even, s_odd;
    pair_scales(k0, s_even, s_odd);
    acc_even = wasm_f32x4_add(acc_even, wasm_f32x4_mul(part_even, s_even));
    acc_odd = wasm_f32x4_add(acc_odd, wasm_f32x4_mul(part_odd, s_odd));
  }
};

// A reader whose blocks may read through a faster reader of their own (Q4PairPanel's
// eights_reader) says so by eights() and eights_reader().
template <class Panel, class = void>
struct HasEightsReader : std::false_type {};
template <class Panel>
struct HasEightsReader<Panel, std::void_t<decltype(&Panel::eights_reader)>> : std::true_type {};

// acc (the block's partial sums) += x[k0, k1) times block rows [k0, k1) of kPanels panels, the
// block starting at k0: through their eights readers where every panel's block allows it, else
// through the panels themselves, started at the block (Panel::start).
template <int kPanels, class Panel>
__attribute__((always_inline)) inline void block_times_panel_rows(const float* x, int k0, int k1, Panel* panels,
                                                                  v128_t* acc) {
  if constexpr (HasEightsReader<Panel>::value) {
    bool eights = true;
    for (int i = 0; i < kPanels; ++i) eights = eights && panels[i].eights(k0);
    if (eights) {
      decltype(panels[0].eights_reader()) readers[kPanels];
      for (int i = 0; i < kPanels; ++i) readers[i] = panels[i].eights_reader();
      return row_times_panel_rows<kPanels>(x, k0, k1, readers, acc);
    }
  }
  for (int i = 0; i < kPanels; ++i) panels[i].start(k0);
  row_times_panel_rows<kPanels>(x, k0, k1, panels, acc);
}

// Q4PairPanel in column order (columns 0-3, 4-7), for the 4-row block (linear_simd128.h's
// block_4x8_scaled, as I8Panel): the same values and block scales, so a row projects to the same
// bits in a prefill and in a decode step.
struct Q4Panel : Q4PairPanel {
  using Q4PairPanel::Q4PairPanel;
  void row(int k, v128_t& lo, v128_t& hi) const {
    v128_t even, odd;
    Q4PairPanel::row(k, even, odd);
    from_pairs(even, odd, lo, hi);
  }
  void block_scales(int k0, v128_t& lo, v128_t& hi) const {
    v128_t even, odd;
    pair_scales(k0, even, odd);
    from_pairs(even, odd, lo, hi);
  }
};

// acc += Σ_{k0 <= k < k1} x[k] · row k of panels[i] (row_times_panel_rows): row 0 as it lies, the
// rows after it through AfterFirst.
template <int kPanels, class Panel>
__attribute__((always_inline)) inline void row_times_pair_rows(const float* x, int k0, int k1, const Panel* panels,
                                                               v128_t* acc) {
  if (k0 == 0) row_times_panel_rows<kPanels>(x, 0, k1 < 1 ? k1 : 1, panels, acc);
  AfterFirst<Panel> rest[kPanels];
  for (int i = 0; i < kPanels; ++i) rest[i].panel = panels[i];
  row_times_panel_rows<kPanels>(x, k0 < 1 ? 1 : k0, k1, rest, acc);
}

// acc row r += Σ_{k < n} x_r[k] · row k of panel (even, odd columns): the 4-row register block
// over one pair reader, each row widened once for the 4 rows (a GQA group's scores and P·V,
// narrow_pairs_simd128.h). Row 0 through row(), the rows after it through AfterFirst.
template <class Panel>
__attribute__((always_inline)) inline void block_times_pair_rows(const float* x0, const float* x1, const float* x2,
                                                                 const float* x3, int n, const Panel& panel,
                                                                 Block4x8& acc) {
  const auto step = [&](const auto& reader, int k) {
    if constexpr (std::is_same_v<Panel, F16PairPanel>) {
      // f16: the even columns for the 4 rows, then the odd, each half from its own load (an empty
      // asm that may touch memory keeps clang from loading the odd half first). Node 20's V8
      // (15 XMM registers) keeps one of this block's accumulators on the stack either way, but
      // compiles this order to a loop that made a decode step over a long f16 cache at (2048,
      // 32, 8) 12-14 % faster; Chromium's V8 (no spill) runs both alike
      // (docs/performance/decode_kernels.md#decode-kernels). int8 keeps one load per row: its
      // halves apart were 4 % slower in Chromium.
      const v128_t s[4] = {wasm_f32x4_splat(x0[k]), wasm_f32x4_splat(x1[k]), wasm_f32x4_splat(x2[k]),
                           wasm_f32x4_splat(x3[k])};
      const v128_t even = reader.even(k);
      for (int r = 0; r < 4; ++r) acc.lo[r] = multiply_add(s[r], even, acc.lo[r]);
      __asm__ volatile("" ::: "memory");
      const v128_t odd = reader.odd(k);
      for (int r = 0; r < 4; ++r) acc.hi[r] = multiply_add(s[r], odd, acc.hi[r]);
    } else {
      v128_t even, odd;
      reader.row(k, even, odd);
      acc.madd(x0[k], x1[k], x2[k], x3[k], even, odd);
    }
  };
  if (n > 0) step(panel, 0);
  const AfterFirst<Panel> rest{panel};
  for (int k = 1; k < n; ++k) step(rest, k);
}

}  // namespace webattention::kernels
