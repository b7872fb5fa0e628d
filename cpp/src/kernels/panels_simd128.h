// One packed weight panel (kernels.h's PackedLinear) read row by row as two f32x4, per storage
// type, for the SIMD128 projection kernels (linear_simd128.h): f32 loads, f16 and bf16 widened,
// int8 dequantised with its block's scales (widen_simd128.h). Rows are read in blocks of kBlock
// input values; start(k0) is called at the first row of each (int8 loads the block's 8 scales).
#pragma once

#include <wasm_simd128.h>

#include <climits>
#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/widen_simd128.h"

namespace webattention::kernels {

struct F32Panel {
  static constexpr int kBlock = INT_MAX / 2;
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
  const std::uint16_t* p = nullptr;
  HalfPanel() = default;
  HalfPanel(const PackedLinear& w, int panel) : p(w.elements<const std::uint16_t>().panel(panel)) {}
  void start(int) {}
  void row(int k, v128_t& lo, v128_t& hi) const { Load(p + k * kPanelWidth, lo, hi); }
};
using F16Panel = HalfPanel<load_f16x8>;
using BF16Panel = HalfPanel<load_bf16x8>;

struct I8Panel {
  static constexpr int kBlock = storage::kQuantBlock;
  const std::int8_t* p = nullptr;
  const float* scales = nullptr;
  v128_t s0, s1;
  I8Panel() = default;
  I8Panel(const PackedLinear& w, int panel)
      : p(w.elements<const std::int8_t>().panel(panel)), scales(w.panel_scales(panel)) {}
  void start(int k0) {
    s0 = wasm_v128_load(scales + (k0 / kBlock) * kPanelWidth);
    s1 = wasm_v128_load(scales + (k0 / kBlock) * kPanelWidth + 4);
  }
  void row(int k, v128_t& lo, v128_t& hi) const { load_i8x8(p + k * kPanelWidth, s0, s1, lo, hi); }
};

}  // namespace webattention::kernels
