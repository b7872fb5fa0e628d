// i16x8.relaxed_dot_i8x16_i7x16_s, relaxed SIMD's integer dot product, for the int8 activations
// kernel of int4 weights (q4q8_linear_relaxed.cpp): lane i is a_{2i} · b_{2i} + a_{2i+1} · b_{2i+1},
// a signed, exact in every engine wherever each b byte lies in 0…127 (beyond, an engine may read
// it as signed or unsigned, and may saturate the sum). clang 14 has no builtin for it:
// __builtin_wasm_relaxed_swizzle_i8x16, whose prototype opcode takes two v128 operands in the same
// order and which nothing else in the package uses, stands in for it, and
// scripts/relaxed_simd_opcodes.py rewrites it after linking.
//
// Not the accumulating i32x4.relaxed_dot_i8x16_i7x16_add_s: Node 20's V8 computes that one wrongly
// in its baseline tier (Liftoff) for some register choices and right for others, so no load-time
// probe can vouch for a kernel's code (docs/attention-math/storage.md §11).
#pragma once

#include <wasm_simd128.h>

namespace webattention::kernels {

#ifdef WEBATTENTION_RELAXED_SIMD
inline v128_t relaxed_dot_i16(v128_t a, v128_t b) { return __builtin_wasm_relaxed_swizzle_i8x16(a, b); }
#endif

}  // namespace webattention::kernels
