// One panel of the panel layout (kv_layout.h) read row by row as two f32x4, per storage type:
// f32 loads, f16 and bf16 widened (widen_simd128.h), int8 as q · 2^16 with its scales applied to
// each block's sums by the caller (kBlockScales). The weights of a projection (kernels.h's
// PackedLinear, for linear_simd128.h): int8 with one scale per block of 32 rows and lane; an f16
// KV cache's panels where the pair readers (pair_panels_simd128.h) cannot serve
// (narrow_rows_simd128.h). Rows are read in blocks of kBlock; start(k0) is called at the first row
// of each.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include <climits>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/simd128/madd_simd128.h"
#include "kernels/simd128/widen_simd128.h"

namespace webattention::kernels {

// A projection's bias at output columns [at, at + 4) (PackedLinear keeps it padded to whole
// panels), or zeros.
inline v128_t bias_or_zero(const PackedLinear& w, int at) {
  return w.bias.empty() ? wasm_f32x4_splat(0.0f) : wasm_v128_load(w.bias.data() + at);
}

// A row of a panel's 8 results (columns 0-3 in lo, 4-7 in hi) into out[0, cols), cols <= 8: a
// whole panel's by two vector stores, a narrower last panel's through memory. A copy of a count
// known only at run time is a call of memmove: once per row and panel it was 2-3 % of a prefill
// with int8 activations (docs/performance/prefill.md#prefill-kernels).
inline void store_panel_row(float* out, v128_t lo, v128_t hi, int cols) {
  if (cols == kPanelWidth) {
    wasm_v128_store(out, lo);
    wasm_v128_store(out + 4, hi);
    return;
  }
  alignas(16) float row[kPanelWidth];
  wasm_v128_store(row, lo);
  wasm_v128_store(row + 4, hi);
  std::copy_n(row, cols, out);
}

struct F32Panel {
  static constexpr int kBlock = INT_MAX / 2;
  static constexpr bool kBlockScales = false;
  static constexpr int kRowPanels = 4;
  const float* p = nullptr;
  F32Panel() = default;
  F32Panel(const PackedLinear& w, int panel) : p(w.elements<const float>().panel(panel)) {}
  void start(int) {}
  void row(int k, v128_t& lo, v128_t& hi) const {
    lo = wasm_v128_load(p + k * kPanelWidth);
    hi = wasm_v128_load(p + k * kPanelWidth + 4);
  }
};

// f16 and bf16: 8 bit patterns per row, widened by Load (widen_simd128.h).
template <void (*Load)(const std::uint16_t*, v128_t&, v128_t&)>
struct HalfPanel {
  static constexpr int kBlock = INT_MAX / 2;
  static constexpr bool kBlockScales = false;
  static constexpr int kRowPanels = 4;
  const std::uint16_t* p = nullptr;
  HalfPanel() = default;
  HalfPanel(const PackedLinear& w, int panel) : p(w.elements<const std::uint16_t>().panel(panel)) {}
  explicit HalfPanel(const std::uint16_t* panel) : p(panel) {}
  void start(int) {}
  void row(int k, v128_t& lo, v128_t& hi) const { Load(p + k * kPanelWidth, lo, hi); }
};
using F16Panel = HalfPanel<load_f16x8>;
using BF16Panel = HalfPanel<load_bf16x8>;

// Finite f16 weights (PackedLinear::finite), stored as they are or rebiased
// (PackedLinear::f16_rebias): the finite widening, its multiply by f16_bits_scale(rebias).
struct F16WeightPanel : HalfPanel<load_f16x8_finite> {
  v128_t scale;
  F16WeightPanel() = default;
  F16WeightPanel(const PackedLinear& w, int panel)
      : HalfPanel(w, panel), scale(wasm_f32x4_splat(f16_bits_scale(w.f16_rebias))) {}
  void row(int k, v128_t& lo, v128_t& hi) const { load_f16x8_finite_scaled(p + k * kPanelWidth, lo, hi, scale); }
};

// The int8 scales of the block of 32 rows that starts at row k0 of a panel (`scales`: the panel's,
// [blocks][8]), times 2^-16, columns 0-3 and 4-7: what multiplies a block's partial sums of
// x · (q · 2^16), in the 4-row block (I8Panel) and in a decode step (I8PairPanel) alike.
inline void i8_block_scales(const float* scales, int k0, v128_t& lo, v128_t& hi) {
  const float* s = scales + (k0 / storage::kQuantBlock) * kPanelWidth;
  const v128_t unit = wasm_f32x4_splat(0x1p-16f);
  lo = wasm_f32x4_mul(wasm_v128_load(s), unit);
  hi = wasm_f32x4_mul(wasm_v128_load(s + 4), unit);
}

// int8 weights as q · 2^16 (exact), the values the decode step's pair reader (I8PairPanel) gives
// in even / odd order: the caller multiplies each block's partial sums by block_scales() once, as
// the decode step does, so that a prefill and a decode step round alike (linear_simd128.h).
struct I8Panel {
  static constexpr int kBlock = storage::kQuantBlock;
  static constexpr bool kBlockScales = true;
  const std::int8_t* p = nullptr;
  const float* scales = nullptr;
  I8Panel() = default;
  I8Panel(const PackedLinear& w, int panel)
      : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  void start(int) {}
  void row(int k, v128_t& lo, v128_t& hi) const {
    const v128_t unit = wasm_f32x4_splat(0x1p16f);
    load_i8x8(p + k * kPanelWidth, unit, unit, lo, hi);
  }
  void block_scales(int k0, v128_t& lo, v128_t& hi) const { i8_block_scales(scales, k0, lo, hi); }
};

// acc[2i], acc[2i + 1] += Σ_k x[k] · row k of panels[i], for k in [k0, k1): one row times kPanels
// panels side by side (a decode step's matrix-vector loop). kPanels panels give 2·kPanels
// independent accumulators, so the chain of multiply-adds of one panel does not wait on each
// add's latency; the count is a template argument so that the loop unrolls and the accumulators
// stay in registers.
// f(std::integral_constant<int, J>) for each J of the sequence, in order.
template <int... J, class F>
__attribute__((always_inline)) inline void each_index(std::integer_sequence<int, J...>, F&& f) {
  (f(std::integral_constant<int, J>{}), ...);
}

// A reader that also reads its rows a group at a time (pair_panels_simd128.h's Q4PairPanel: one
// load and constant shifts for 4 rows) says so by a kGroupRows; k0 must then be a multiple of it.
template <class Panel, class = void>
struct GroupRows {
  static constexpr int value = 1;
};
template <class Panel>
struct GroupRows<Panel, std::void_t<decltype(Panel::kGroupRows)>> {
  static constexpr int value = Panel::kGroupRows;
};

template <int kPanels, class Panel>
__attribute__((always_inline)) inline void row_times_panel_rows(const float* x, int k0, int k1,
                                                                const Panel* panels, v128_t* acc) {
  if constexpr (GroupRows<Panel>::value > 1) {
    constexpr int kGroup = GroupRows<Panel>::value;
    for (; k0 + kGroup <= k1; k0 += kGroup) {
      v128_t groups[kPanels];
      for (int i = 0; i < kPanels; ++i) groups[i] = panels[i].group(k0);
      each_index(std::make_integer_sequence<int, kGroup>{}, [&](auto j) {
        constexpr int J = decltype(j)::value;
        const v128_t xk = wasm_f32x4_splat(x[k0 + J]);
        for (int i = 0; i < kPanels; ++i) {
          v128_t w0, w1;
          panels[i].template group_row<J>(groups[i], w0, w1);
          acc[2 * i] = multiply_add(xk, w0, acc[2 * i]);
          acc[2 * i + 1] = multiply_add(xk, w1, acc[2 * i + 1]);
        }
      });
    }
  }
  for (int k = k0; k < k1; ++k) {
    const v128_t xk = wasm_f32x4_splat(x[k]);
    for (int i = 0; i < kPanels; ++i) {
      v128_t w0, w1;
      panels[i].row(k, w0, w1);
      acc[2 * i] = multiply_add(xk, w0, acc[2 * i]);
      acc[2 * i + 1] = multiply_add(xk, w1, acc[2 * i + 1]);
    }
  }
}

}  // namespace webattention::kernels
