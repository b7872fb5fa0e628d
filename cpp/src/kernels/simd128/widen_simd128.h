// Stored elements widened to f32x4, WebAssembly SIMD128 (no F16C in wasm): the fused conversions
// of every narrow-storage kernel, each giving exactly the f32 value storage_convert.h's scalar
// rule gives.
#pragma once

#include <wasm_simd128.h>

#include <cstdint>

#include "kernels/storage_convert.h"

namespace webattention::kernels {

// What the finite widening below multiplies an f16's moved bits by to give its value: 2^112, or
// 2^(112 - rebias) for weights stored rebiased (PackedLinear::f16_rebias, storage::rebias_f16). The
// decode step's pair readers multiply x by it instead (pair_panels_simd128.h).
inline float f16_bits_scale(int rebias) { return 0x1p112f * storage::rebias_unit(rebias); }

// 8 f16 at p to (lo, hi), by integer ops and one multiply. The exponent and fraction, moved to
// the top of an f32's exponent and fraction fields, read as an f32 2^112 too small (subnormals
// included, as f32 subnormals), so one multiply by 2^112 rebiases them exactly. Exponent 31 (Inf,
// NaN) comes out finite that way; OR-ing the all-ones f32 exponent in makes it Inf or NaN with
// the same fraction; then the sign. Sign and that exponent are made for the 8 lanes at once in
// 16-bit lanes and interleaved into the top halves of the f32 lanes (one instruction each).
inline void load_f16x8(const std::uint16_t* p, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_v128_load(p);
  const v128_t em = wasm_v128_and(h, wasm_i16x8_splat(0x7FFF));
  const v128_t special = wasm_v128_and(wasm_i16x8_gt(em, wasm_i16x8_splat(0x7BFF)), wasm_i16x8_splat(0x7F80));
  const v128_t top = wasm_v128_or(wasm_v128_xor(h, em), special);  // sign | Inf/NaN exponent
  const v128_t zero = wasm_i16x8_splat(0);
  const v128_t scale = wasm_f32x4_splat(0x1p112f);
  // (em << 16) >> 3 = em << 13 per f32 lane.
  const v128_t em_lo = wasm_u32x4_shr(wasm_i16x8_shuffle(zero, em, 0, 8, 1, 9, 2, 10, 3, 11), 3);
  const v128_t em_hi = wasm_u32x4_shr(wasm_i16x8_shuffle(zero, em, 4, 12, 5, 13, 6, 14, 7, 15), 3);
  lo = wasm_v128_or(wasm_f32x4_mul(em_lo, scale), wasm_i16x8_shuffle(zero, top, 0, 8, 1, 9, 2, 10, 3, 11));
  hi = wasm_v128_or(wasm_f32x4_mul(em_hi, scale), wasm_i16x8_shuffle(zero, top, 4, 12, 5, 13, 6, 14, 7, 15));
}

// 8 f16 known to be finite (no exponent 31) at p to (lo, hi), in 4 operations per 4 lanes: each
// half moved to the top of its f32 lane (an unpack) and shifted right by 3 arithmetically puts the
// sign at bit 31, 3 copies of it where the exponent's top bits go (cleared by the mask), and the
// exponent and fraction where load_f16x8 puts them; then the same multiply by 2^112. The weights
// and caches that hold no Inf or NaN (known when they are stored) take this path where a decode
// step's pair readers (pair_panels_simd128.h) do not serve: the 4-row projection, and the
// fallbacks of a query too large to scale.
// `scale`: f16_bits_scale(the rebias of the bits).
inline void load_f16x8_finite_scaled(const std::uint16_t* p, v128_t& lo, v128_t& hi, v128_t scale) {
  const v128_t h = wasm_v128_load(p);
  const v128_t zero = wasm_i16x8_splat(0);
  const v128_t mask = wasm_i32x4_splat(static_cast<int>(0x8FFFE000u));
  lo = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(wasm_i16x8_shuffle(zero, h, 0, 8, 1, 9, 2, 10, 3, 11), 3), mask), scale);
  hi = wasm_f32x4_mul(wasm_v128_and(wasm_i32x4_shr(wasm_i16x8_shuffle(zero, h, 4, 12, 5, 13, 6, 14, 7, 15), 3), mask), scale);
}
inline void load_f16x8_finite(const std::uint16_t* p, v128_t& lo, v128_t& hi) {
  load_f16x8_finite_scaled(p, lo, hi, wasm_f32x4_splat(f16_bits_scale(0)));
}

// 8 bf16 at p to (lo, hi): each is the top half of its f32, so interleaving zeros below them is
// the whole conversion (the shuffle V8 compiles to one unpack instruction).
inline void load_bf16x8(const std::uint16_t* p, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_v128_load(p);
  const v128_t zero = wasm_i16x8_splat(0);
  lo = wasm_i16x8_shuffle(zero, h, 0, 8, 1, 9, 2, 10, 3, 11);
  hi = wasm_i16x8_shuffle(zero, h, 4, 12, 5, 13, 6, 14, 7, 15);
}

// 8 int8 at p times their scales (s0 for lanes 0-3, s1 for 4-7): sign-extended, then converted
// by the exact magic-number trick (q + 1.5·2^23 read as an f32 is 1.5·2^23 + q), because clang 14
// turns f32x4.convert_i32x4_s of an extended i16x8 into 8 scalar conversions.
inline void load_i8x8(const std::int8_t* p, v128_t s0, v128_t s1, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_i16x8_load8x8(p);
  const v128_t magic = wasm_i32x4_splat(0x4B400000);
  const v128_t bias = wasm_f32x4_splat(12582912.0f);  // 1.5·2^23
  lo = wasm_f32x4_mul(wasm_f32x4_sub(wasm_i32x4_add(wasm_i32x4_extend_low_i16x8(h), magic), bias), s0);
  hi = wasm_f32x4_mul(wasm_f32x4_sub(wasm_i32x4_add(wasm_i32x4_extend_high_i16x8(h), magic), bias), s1);
}

}  // namespace webattention::kernels
