// Vector exp for the softmax, WebAssembly SIMD128: Cephes' expf polynomial on the range-reduced
// argument, 2^n through the exponent bits. Max relative error about 2 ulp on [-87, 88]; inputs
// below -87.3 (including -inf from masks) give exactly 0.
#pragma once

#include <wasm_simd128.h>

namespace webattention::kernels {

inline v128_t exp_f32x4(v128_t x) {
  const v128_t lo = wasm_f32x4_splat(-87.33654f);
  const v128_t underflow = wasm_f32x4_lt(x, lo);
  x = wasm_f32x4_min(wasm_f32x4_max(x, lo), wasm_f32x4_splat(88.37626f));
  const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
  // r = x - n·ln2 in two steps (ln2 = hi + lo) to keep r exact.
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
  p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
  const v128_t r2 = wasm_f32x4_mul(r, r);
  const v128_t y = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(p, r2), r), wasm_f32x4_splat(1.0f));
  // 2^n: n + 127 in the exponent field.
  const v128_t pow2n = wasm_i32x4_shl(
      wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n), wasm_i32x4_splat(127)), 23);
  return wasm_v128_andnot(wasm_f32x4_mul(y, pow2n), underflow);
}

inline float horizontal_max(v128_t v) {
  v = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_max(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

inline float horizontal_sum(v128_t v) {
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

}  // namespace webattention::kernels
