// The softcap's vector tanh (kernels/tanh_simd128.h) against std::tanh in double precision: its
// relative accuracy across both branches and their seam at 0.5, exact saturation, signs, zeros and
// NaN; and softcap_row_simd128 against cap·tanh(s / cap). SIMD builds only.
#include <gtest/gtest.h>
#include <wasm_simd128.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/simd128/tanh_simd128.h"

namespace webattention::kernels {
namespace {

float tanh1(float x) {
  alignas(16) float v[4] = {x, x, x, x};
  wasm_v128_store(v, tanh_f32x4(wasm_v128_load(v)));
  return v[0];
}

TEST(TanhSimd128, WithinThreeTenMillionthsRelativeFromMinus50To50) {
  double worst = 0;
  float worst_x = 0;
  constexpr int kSteps = 1 << 20;
  for (int i = -kSteps; i <= kSteps; ++i) {
    const float x = 50.0f * static_cast<float>(i) / kSteps;
    const double want = std::tanh(static_cast<double>(x));
    if (want == 0.0) continue;
    const double error = std::abs(static_cast<double>(tanh1(x)) - want) / std::abs(want);
    if (error > worst) worst = error, worst_x = x;
  }
  EXPECT_LE(worst, 3e-7) << "at x = " << worst_x;
  // Tiny arguments: tanh x = x to float precision.
  for (float x : {1e-30f, -3e-8f, 1e-4f, std::numeric_limits<float>::denorm_min()})
    EXPECT_FLOAT_EQ(tanh1(x), x) << x;
}

TEST(TanhSimd128, SaturatesExactlyAndKeepsSignsZerosAndNaN) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (float x : {45.0f, 1e3f, 3e38f, kInf}) {
    EXPECT_EQ(tanh1(x), 1.0f) << x;
    EXPECT_EQ(tanh1(-x), -1.0f) << x;
  }
  EXPECT_EQ(tanh1(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(tanh1(-0.0f)));
  EXPECT_TRUE(std::isnan(tanh1(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_LT(tanh1(0.49999997f), tanh1(0.5f));  // monotone across the branches' seam
}

TEST(TanhSimd128, SoftcapRowIsCapTimesTanhOfScoreOverCap) {
  std::vector<float> s;
  for (int j = 0; j < 64; ++j) s.push_back(static_cast<float>(j - 30) * 7.5f);
  const std::vector<float> before = s;
  softcap_row_simd128(s.data(), static_cast<int>(s.size()), 30.0f);
  for (std::size_t j = 0; j < s.size(); ++j) {
    const double want = 30.0 * std::tanh(static_cast<double>(before[j]) / 30.0);
    EXPECT_NEAR(s[j], want, 1e-6 * 30.0) << before[j];
  }
}

}  // namespace
}  // namespace webattention::kernels
