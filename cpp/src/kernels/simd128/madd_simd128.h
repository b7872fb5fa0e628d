// a·b + c on f32x4, the operation of the matrix kernels' inner loops (f32_block_simd128.h). The
// relaxed-SIMD modules (WEBATTENTION_RELAXED_SIMD) use one f32x4.relaxed_madd: fused where the
// CPU has FMA (16 FLOP/cycle on this project's CPU instead of 12 for separate multiply and add),
// rounded like mul + add elsewhere. clang 14 spells it __builtin_wasm_fma_f32x4 and emits a
// prototype opcode that scripts/relaxed_simd_opcodes.py rewrites after linking.
//
// Only for operands known at run time: the toolchain folds a call whose operands are all
// constants with the prototype's meaning, a + b·c (measured: a polynomial in a constant gave
// the wrong value), so exp_simd128.h, whose tests pass constants, keeps mul + add.
#pragma once

#include <wasm_simd128.h>

namespace webattention::kernels {

inline v128_t multiply_add(v128_t a, v128_t b, v128_t c) {
#ifdef WEBATTENTION_RELAXED_SIMD
  return __builtin_wasm_fma_f32x4(a, b, c);
#else
  return wasm_f32x4_add(wasm_f32x4_mul(a, b), c);
#endif
}

}  // namespace webattention::kernels
