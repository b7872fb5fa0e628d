// Stored elements widened to f32x4, WebAssembly SIMD128 (no F16C in wasm): the fused conversions
// of every narrow-storage kernel, each giving exactly the f32 value storage_convert.h's scalar
// rule gives.
#pragma once

#include <wasm_simd128.h>

#include <cstdint>

namespace webattention::kernels {

// Four f16 bit patterns, one per u32 lane, to f32 by integer ops and one multiply: the exponent
// and mantissa shifted into f32 position read as an f32 2^112 too small (subnormals included, as
// f32 subnormals), so one multiply by 2^112 rebiases them exactly; Inf and NaN (exponent 31) get
// the all-ones f32 exponent instead; then the sign.
inline v128_t f16x4_to_f32x4(v128_t u) {
  const v128_t em = wasm_v128_and(u, wasm_i32x4_splat(0x7FFF));
  const v128_t shifted = wasm_i32x4_shl(em, 13);
  const v128_t finite = wasm_f32x4_mul(shifted, wasm_f32x4_splat(0x1p112f));
  const v128_t special = wasm_v128_or(shifted, wasm_i32x4_splat(0x7F800000));
  const v128_t v = wasm_v128_bitselect(special, finite, wasm_i32x4_ge(em, wasm_i32x4_splat(0x7C00)));
  return wasm_v128_or(v, wasm_i32x4_shl(wasm_v128_and(u, wasm_i32x4_splat(0x8000)), 16));
}

// 8 f16 at p to (lo, hi).
inline void load_f16x8(const std::uint16_t* p, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_v128_load(p);
  lo = f16x4_to_f32x4(wasm_u32x4_extend_low_u16x8(h));
  hi = f16x4_to_f32x4(wasm_u32x4_extend_high_u16x8(h));
}

// 8 bf16 at p to (lo, hi): each is the top half of its f32, a 16-bit shift.
inline void load_bf16x8(const std::uint16_t* p, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_v128_load(p);
  lo = wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(h), 16);
  hi = wasm_i32x4_shl(wasm_u32x4_extend_high_u16x8(h), 16);
}

// 8 int8 at p times their scales (s0 for lanes 0-3, s1 for 4-7): extend, convert, scale.
inline void load_i8x8(const std::int8_t* p, v128_t s0, v128_t s1, v128_t& lo, v128_t& hi) {
  const v128_t h = wasm_i16x8_load8x8(p);
  lo = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(h)), s0);
  hi = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(h)), s1);
}

}  // namespace webattention::kernels
