// The projection kernel's register block (f32_block_simd128.h: 4 rows × 8 columns, 8 f32x4
// accumulators, broadcast loads of x, two loads of a weight row per step) twice: with relaxed
// SIMD's f32x4.relaxed_madd (fused), and with f32x4.mul + f32x4.add (separate). A module of its
// own (~3 KB, embedded in web/dist/madd_probe.js), which web/src/madd_probe.js times on the user's
// device before the package picks its WASM module: the relaxed-SIMD modules run these kernels
// fused, and pay only where fusing is faster (1.6x on an Intel Xeon; 0.97x on AMD Zen 5, whose
// separate adders keep mul + add as fast: docs/performance/platform.md#relaxed-simd). And the int4 ×
// int8 decode kernel's step over a group of codes both ways: relaxed SIMD's
// i16x8.relaxed_dot_i8x16_i7x16_s (Q4RelaxedCodes::group, 7 operations per 32 weights) and the
// SIMD128 modules' one-row step, bytes widened to int16 for i32x4.dot_i16x8_s
// (Q4Codes::group_one_row, 12), the kernels' own code. Relaxed ran 1.7x faster on an AMD Zen
// where fusing paid nothing (bench/limits/int4_dot), against the 15-operation step of then.
#include <wasm_simd128.h>

#include <cstdint>

#include "kernels/simd128/q8_relaxed_simd128.h"

namespace {

constexpr int kSteps = 64;  // a block's inner products over 64 inputs: x and w stay in L1

// Written by fill() at run time: the compiler may assume nothing about their values.
alignas(16) float x[4 * kSteps];
alignas(16) float w[8 * kSteps];

template <bool kFused>
inline v128_t multiply_add(v128_t a, v128_t b, v128_t c) {
  if constexpr (kFused) {
    return __builtin_wasm_fma_f32x4(a, b, c);  // clang 14's spelling: see madd_simd128.h
  } else {
    return wasm_f32x4_add(wasm_f32x4_mul(a, b), c);
  }
}

// `reps` passes over the block's 64 steps; returns a sum of the accumulators (kept live).
template <bool kFused>
float block_4x8(int reps) {
  v128_t acc[8];
  for (auto& a : acc) a = wasm_f32x4_splat(0.0f);
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < kSteps; ++k) {
      const v128_t w0 = wasm_v128_load(w + 8 * k), w1 = wasm_v128_load(w + 8 * k + 4);
      for (int i = 0; i < 4; ++i) {
        const v128_t s = wasm_v128_load32_splat(x + 4 * k + i);
        acc[2 * i] = multiply_add<kFused>(s, w0, acc[2 * i]);
        acc[2 * i + 1] = multiply_add<kFused>(s, w1, acc[2 * i + 1]);
      }
    }
  }
  v128_t sum = acc[0];
  for (int i = 1; i < 8; ++i) sum = wasm_f32x4_add(sum, acc[i]);
  return wasm_f32x4_extract_lane(sum, 0);
}

constexpr int kGroups = 64;  // 1 KiB of int4 codes (2048 weights) and their input codes, in L1

alignas(16) std::uint8_t codes[16 * kGroups];
alignas(16) std::int8_t x8[4 * kGroups];
alignas(16) std::int16_t x16[4 * kGroups];

using webattention::kernels::simd128_q8::Q4Codes;
using webattention::kernels::simd128_q8::Q4RelaxedCodes;

// `reps` passes over the groups, as a one-row decode step steps them; returns a sum of the
// accumulators (kept live).
template <bool kRelaxed>
int group_dots(int reps) {
  v128_t a[1] = {wasm_i32x4_splat(0)}, b[1] = {wasm_i32x4_splat(0)};
  for (int r = 0; r < reps; ++r) {
    for (int g = 0; g < kGroups; ++g) {
      const v128_t v = wasm_v128_load(codes + 16 * g);
      if constexpr (kRelaxed) {
        const std::int8_t* const x[1] = {x8 + 4 * g};
        Q4RelaxedCodes::group<1>(v, x, a, b);
      } else {
        Q4Codes::group_one_row(v, x16 + 4 * g, a[0], b[0]);
      }
    }
  }
  return wasm_i32x4_extract_lane(wasm_i32x4_add(a[0], b[0]), 0);
}

}  // namespace

extern "C" {

// Small values (no overflow however many passes), in no pattern the compiler can see.
__attribute__((export_name("fill"))) void fill(float v) {
  for (int i = 0; i < 4 * kSteps; ++i) x[i] = v * static_cast<float>(i % 7);
  for (int i = 0; i < 8 * kSteps; ++i) w[i] = v * static_cast<float>(i % 5);
  // Any codes: the relaxed form's int16 sums wrap over many passes, deterministically (each dot
  // product's weight operand is a nibble, 0…15).
  for (int i = 0; i < 16 * kGroups; ++i) codes[i] = static_cast<std::uint8_t>((i * 7 + static_cast<int>(v * 1e3f)) & 0xFF);
  for (int i = 0; i < 4 * kGroups; ++i) x16[i] = x8[i] = static_cast<std::int8_t>(i % 2 ? -(i % 5) : i % 5);
}

// 64 · reps steps of 32 multiply-adds each: 4096 · reps FLOP.
__attribute__((export_name("fused"))) float fused(int reps) { return block_4x8<true>(reps); }
__attribute__((export_name("separate"))) float separate(int reps) { return block_4x8<false>(reps); }

// 2048 · reps int4 × int8 products each.
__attribute__((export_name("dot_relaxed"))) int dot_relaxed(int reps) { return group_dots<true>(reps); }
__attribute__((export_name("dot_widened"))) int dot_widened(int reps) { return group_dots<false>(reps); }

}  // extern "C"
