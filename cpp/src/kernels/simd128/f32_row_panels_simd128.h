// One f32 row times f32 panels of 8 columns side by side (kv_layout.h), WebAssembly SIMD128: the
// matrix-vector loop of every f32 one-row path (a decode step): one query row's scores against
// key panels and its weighted sum of value panels (f32_attention_simd128.cpp), and the projection
// of one input row over f32 weights (linear_simd128.h's one_row_panels; other storage types read
// their panels through panels_simd128.h). kPanels panels give 2·kPanels independent
// accumulators, so the chain of multiply-adds of one panel does not wait on each add's latency;
// the count is a template argument so that the loop unrolls and the accumulators stay in
// registers (indexed by a count known only at run time they would live in memory).
#pragma once

#include <wasm_simd128.h>

#include <cstddef>

#include "kernels/kv_layout.h"
#include "kernels/simd128/madd_simd128.h"

namespace webattention::kernels {

// acc[2i], acc[2i + 1] += Σ_k x[k] · panel_i[8k .. 8k + 8) for k < n and i < kPanels, where
// panel_i = panels + i·stride (each panel [n][8], row-major).
template <int kPanels>
__attribute__((always_inline)) inline void row_times_panels(const float* x, int n,
                                                            const float* panels,
                                                            std::size_t stride, v128_t* acc) {
  for (int k = 0; k < n; ++k) {
    const v128_t xk = wasm_f32x4_splat(x[k]);
    for (int i = 0; i < kPanels; ++i) {
      const float* w = panels + i * stride + k * kPanelWidth;
      acc[2 * i] = multiply_add(xk, wasm_v128_load(w), acc[2 * i]);
      acc[2 * i + 1] = multiply_add(xk, wasm_v128_load(w + 4), acc[2 * i + 1]);
      // No instruction: it keeps clang from hoisting the next panels' loads above these
      // multiply-adds. With the 4 panels' 8 loads at the loop's top, V8 11.3 (Node 20, 15 XMM
      // registers) kept one accumulator on the stack, and an f32 decode step at (768, 12, 12) took
      // 1.6x as long there (docs/performance/decode_kernels.md#decode-kernels).
      __asm__ volatile("" ::: "memory");
    }
  }
}

}  // namespace webattention::kernels
