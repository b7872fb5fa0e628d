// The register block every SIMD128 matrix kernel here is built from: 4 rows × 8 columns of
// f32x4 accumulators (8 registers, plus 2 for a weight row and 1 for a broadcast: V8 has 16).
// Larger blocks spill in V8 and run slower.
#pragma once

#include <wasm_simd128.h>

#include "kernels/simd128/madd_simd128.h"

namespace webattention::kernels {

struct Block4x8 {
  v128_t lo[4], hi[4];  // row r: columns 0-3 in lo[r], 4-7 in hi[r]

  // Every row starts as (c0, c1): zero, a bias, or accumulators loaded from memory.
  static Block4x8 filled(v128_t c0, v128_t c1) {
    Block4x8 b;
    for (int r = 0; r < 4; ++r) b.lo[r] = c0, b.hi[r] = c1;
    return b;
  }

  static Block4x8 zero() { return filled(wasm_f32x4_splat(0.0f), wasm_f32x4_splat(0.0f)); }

  // Row r from 8 floats at src (accumulators kept in memory between calls).
  void load_row(int r, const float* src) {
    lo[r] = wasm_v128_load(src);
    hi[r] = wasm_v128_load(src + 4);
  }

  // row r += x_r · (w0, w1): one step of the inner product.
  __attribute__((always_inline)) void madd(float x0, float x1, float x2, float x3, v128_t w0,
                                           v128_t w1) {
    const float x[4] = {x0, x1, x2, x3};
    for (int r = 0; r < 4; ++r) {
      const v128_t s = wasm_f32x4_splat(x[r]);
      lo[r] = multiply_add(s, w0, lo[r]);
      hi[r] = multiply_add(s, w1, hi[r]);
    }
  }

  // row r += x_r · w[0..8): the same step with the weight row in memory.
  __attribute__((always_inline)) void madd(float x0, float x1, float x2, float x3,
                                           const float* w) {
    madd(x0, x1, x2, x3, wasm_v128_load(w), wasm_v128_load(w + 4));
  }

  // Stores row r at dst (8 floats).
  void store_row(int r, float* dst) const {
    wasm_v128_store(dst, lo[r]);
    wasm_v128_store(dst + 4, hi[r]);
  }
};

}  // namespace webattention::kernels
