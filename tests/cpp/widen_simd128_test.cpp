// The SIMD128 widening loads (kernels/simd128/widen_simd128.h) against the scalar rules of
// storage_convert.h, bit for bit: every f16 and bf16 pattern (every finite one for the finite-only
// f16 load), and every int8 value times scales
// of every kind (zero, subnormal, large, NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/simd128/widen_simd128.h"
#include "kernels/storage_convert.h"

namespace webattention {
namespace {

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || storage::bits_of(a) == storage::bits_of(b); }

TEST(WidenSimd128, EverySixteenBitPattern) {
  for (std::uint32_t h0 = 0; h0 < 0x10000; h0 += 8) {
    std::uint16_t h[8];
    for (int l = 0; l < 8; ++l) h[l] = static_cast<std::uint16_t>(h0 + l);
    alignas(16) float f16[8], bf16[8];
    v128_t lo, hi;
    kernels::load_f16x8(h, lo, hi);
    wasm_v128_store(f16, lo);
    wasm_v128_store(f16 + 4, hi);
    kernels::load_bf16x8(h, lo, hi);
    wasm_v128_store(bf16, lo);
    wasm_v128_store(bf16 + 4, hi);
    alignas(16) float finite[8];
    kernels::load_f16x8_finite(h, lo, hi);
    wasm_v128_store(finite, lo);
    wasm_v128_store(finite + 4, hi);
    for (int l = 0; l < 8; ++l) {
      ASSERT_TRUE(same(f16[l], storage::f16_to_f32(h[l]))) << "f16 " << h[l];
      if ((h[l] & 0x7C00) != 0x7C00) ASSERT_TRUE(same(finite[l], storage::f16_to_f32(h[l]))) << "finite f16 " << h[l];
      ASSERT_TRUE(same(bf16[l], storage::bf16_to_f32(h[l]))) << "bf16 " << h[l];
    }
  }
}

TEST(WidenSimd128, Int8TimesScales) {
  alignas(16) const float scales[8] = {0.0f, 1.0f, 0x1p-140f, 3.0e36f, NAN, -0.5f, 1.0f / 127.0f, 2.5f};
  for (int q0 = -128; q0 < 128; ++q0) {
    std::int8_t q[8];
    for (int l = 0; l < 8; ++l) q[l] = static_cast<std::int8_t>((q0 + 37 * l + 128) % 256 - 128);
    alignas(16) float out[8];
    v128_t lo, hi;
    kernels::load_i8x8(q, wasm_v128_load(scales), wasm_v128_load(scales + 4), lo, hi);
    wasm_v128_store(out, lo);
    wasm_v128_store(out + 4, hi);
    for (int l = 0; l < 8; ++l) ASSERT_TRUE(same(out[l], storage::dequantise(q[l], scales[l]))) << int(q[l]) << " lane " << l;
  }
}

}  // namespace
}  // namespace webattention
