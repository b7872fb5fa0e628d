// A large input row (large_rows.h) times int8 or int4 weights, WebAssembly SIMD128: the row
// scaled by kLargeDown, each panel read in pairs (I8PairPanel, Q4PairPanel) with the decode
// step's arithmetic (one_row_pair_panels: each block of 32 summed from zero and added times its
// scales), the sums times kLargeUp and the bias added last. A prefill and a decode step both
// send such a row here, so it projects to the same bits alone or among others. One panel at a
// time: such rows are rare, and this keeps it short.
#pragma once

#include <wasm_simd128.h>

#include <algorithm>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/large_rows.h"
#include "kernels/simd128/pair_panels_simd128.h"
#include "kernels/simd128/panels_simd128.h"

namespace webattention::kernels {

// Row 0 of each target's output = x (one large row) times its weights, panels [panel_begin,
// panels_end()).
template <class PairPanel>
__attribute__((noinline)) void large_row_pairs(const float* x, const LinearTarget* targets, int target_count) {
  static_assert(PairPanel::kBlockScales, "int8 and int4 readers: integer codes, scaled per block");
  int in = 0;
  for (int t = 0; t < target_count; ++t) in = std::max(in, targets[t].weights->in);
  static thread_local std::vector<float> scaled;  // one per thread, as linear_simd128.h's scaled_row
  scaled.resize(in);
  scale_down_row(x, in, scaled.data());
  const v128_t up = wasm_f32x4_splat(kLargeUp);
  for (int t = 0; t < target_count; ++t) {
    const PackedLinear& w = *targets[t].weights;
    for (int p = targets[t].panel_begin; p < targets[t].panels_end(); ++p) {
      PairPanel panel(w, p);
      v128_t acc[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
      for (int k0 = 0; k0 < w.in; k0 += PairPanel::kBlock) {
        v128_t part[2] = {wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)};
        block_times_panel_rows<1>(scaled.data(), k0, std::min(w.in, k0 + PairPanel::kBlock), &panel, part);
        panel.scale_block(k0, part[0], part[1], acc[0], acc[1]);
      }
      v128_t lo, hi;
      from_pairs(acc[0], acc[1], lo, hi);
      const int n0 = p * kPanelWidth;
      lo = wasm_f32x4_add(wasm_f32x4_mul(lo, up), bias_or_zero(w, n0));
      hi = wasm_f32x4_add(wasm_f32x4_mul(hi, up), bias_or_zero(w, n0 + 4));
      store_panel_row(targets[t].y + n0, lo, hi, w.panel_columns(p));
    }
  }
}

}  // namespace webattention::kernels
