// Vector exp for the softmax, WebAssembly SIMD128: Cephes' expf polynomial on the range-reduced
// argument, 2^n through the exponent bits. For softmax arguments only: x <= 0 (a score minus its
// row's maximum), NaN propagates. Max relative error about 2 ulp down to -87.6; below that
// (including -inf from masks) the result is exactly 0.
//
// Written for V8's x64 code: f32x4.min/max and i32x4.trunc_sat_f32x4 cost 5-7 instructions
// each there (NaN and saturation rules), so the clamp is a pmax (one maxps) and n comes from
// the round-to-integer magic constant instead of nearest + trunc_sat.
#pragma once

#include <wasm_simd128.h>

namespace webattention::kernels {

inline v128_t exp_f32x4(v128_t x) {
  // Clamp at -87.9: n = round(x·log2 e) is then >= -127, and n = -127 puts 0 in the exponent
  // field below, so the result is exactly 0 (masked keys get no weight at all).
  x = wasm_f32x4_pmax(x, wasm_f32x4_splat(-87.9f));
  // t = x·log2 e + 1.5·2^23 rounds x·log2 e to the nearest integer n, held in t's low bits.
  constexpr float kMagic = 12582912.0f;
  const v128_t t = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)),
                                  wasm_f32x4_splat(kMagic));
  const v128_t n = wasm_f32x4_sub(t, wasm_f32x4_splat(kMagic));
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
  // 2^n: n + 127 in the exponent field. t's bits are bits(kMagic) + n, and bits(kMagic) has
  // nothing in its low 9 bits, so shifting left by 23 leaves (n + 127) << 23.
  const v128_t pow2n = wasm_i32x4_shl(wasm_i32x4_add(t, wasm_i32x4_splat(127)), 23);
  return wasm_f32x4_mul(y, pow2n);
}

// pmax, not max: one instruction in V8 (see above). Scores are never NaN unless inputs are.
inline float horizontal_max(v128_t v) {
  v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

inline float horizontal_sum(v128_t v) {
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

}  // namespace webattention::kernels
