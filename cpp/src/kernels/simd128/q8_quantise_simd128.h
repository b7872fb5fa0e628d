// The SIMD128 modules' quantiser of int8 activations (q8_rows.h's Q8Rows::BlockQuantiser): the
// codes of storage_convert.h's rule, 4 values at a time.
#pragma once

#include <wasm_simd128.h>

#include <cmath>
#include <cstdint>

#include "kernels/q8_rows.h"

namespace webattention::kernels::simd128_q8 {

// storage::q8_scale of a whole block, 4 values at a time: max |x| / 127, or NaN where an x is not
// finite. f32x4.pmax is one instruction in V8 (f32x4.max, which propagates NaN, about eight);
// it is max itself on the |x|, which are never −0, and the NaN it may drop is caught apart:
// x − x is +0 for a finite x and NaN for ±Inf or NaN, whose bits the or keeps. The scalar loop
// took 1.9 % of a decode step's token (24-layer stack, i4a8, relaxed, Node profile).
inline float q8_scale_simd128(const float* x) {
  v128_t amax = wasm_f32x4_splat(0.0f), not_finite = wasm_f32x4_splat(0.0f);
  for (int i = 0; i < storage::kQuantBlock / 4; ++i) {
    const v128_t v = wasm_v128_load(x + 4 * i);
    amax = wasm_f32x4_pmax(amax, wasm_f32x4_abs(v));
    not_finite = wasm_v128_or(not_finite, wasm_f32x4_sub(v, v));
  }
  amax = wasm_f32x4_pmax(amax, wasm_i32x4_shuffle(amax, amax, 2, 3, 0, 1));
  amax = wasm_f32x4_pmax(amax, wasm_i32x4_shuffle(amax, amax, 1, 0, 3, 2));
  if (wasm_v128_any_true(not_finite)) return NAN;
  return wasm_f32x4_extract_lane(amax, 0) / 127.0f;
}

// Q8Rows::quantise_block, 4 values at a time where it is a whole block with a finite d > 0 (any
// other block: the scalar rule). The same codes: x / d is the same f32 division; std::round's
// half away from zero is t = trunc(v), plus sign(v) where |v − t| ≥ 0.5 (v − t is exact: |v| ≤
// 127 · (1 + 2⁻²³), far below 2²³); the clamp to ±127 is the scalar's.
inline float quantise_block_simd128(const float* x, int n, std::int8_t* q, std::int32_t* sum) {
  const float d = n == storage::kQuantBlock ? q8_scale_simd128(x) : 0.0f;
  if (!(d > 0.0f && std::isfinite(d))) return Q8Rows::quantise_block(x, n, q, sum);
  const v128_t dv = wasm_f32x4_splat(d), half = wasm_f32x4_splat(0.5f), one = wasm_f32x4_splat(1.0f);
  const v128_t sign = wasm_f32x4_splat(-0.0f), lo = wasm_f32x4_splat(-127.0f), hi = wasm_f32x4_splat(127.0f);
  v128_t codes[storage::kQuantBlock / 4];
  for (int i = 0; i < storage::kQuantBlock / 4; ++i) {
    const v128_t v = wasm_f32x4_div(wasm_v128_load(x + 4 * i), dv);
    const v128_t t = wasm_f32x4_trunc(v);
    const v128_t away = wasm_f32x4_ge(wasm_f32x4_abs(wasm_f32x4_sub(v, t)), half);
    const v128_t step = wasm_v128_and(away, wasm_v128_or(one, wasm_v128_and(v, sign)));
    codes[i] = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_min(wasm_f32x4_max(wasm_f32x4_add(t, step), lo), hi));
  }
  v128_t total = wasm_i32x4_splat(0);
  for (int i = 0; i < storage::kQuantBlock / 4; ++i) total = wasm_i32x4_add(total, codes[i]);
  for (int i = 0; i < storage::kQuantBlock / 16; ++i) {
    const v128_t c0 = wasm_i16x8_narrow_i32x4(codes[4 * i], codes[4 * i + 1]);
    const v128_t c1 = wasm_i16x8_narrow_i32x4(codes[4 * i + 2], codes[4 * i + 3]);
    wasm_v128_store(q + 16 * i, wasm_i8x16_narrow_i16x8(c0, c1));
  }
  *sum = wasm_i32x4_extract_lane(total, 0) + wasm_i32x4_extract_lane(total, 1) + wasm_i32x4_extract_lane(total, 2) +
         wasm_i32x4_extract_lane(total, 3);
  return d;
}

}  // namespace webattention::kernels::simd128_q8
